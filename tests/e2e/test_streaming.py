"""Streaming as a person watches it (paced demo model, 40 words/s): the reply grows in place, the
settled text is the checkpointed text (C10), Stop ends a long run (C12), and a policy file can
narrow a card's buttons (C13)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.ui import (
    buttons_on,
    cards,
    messages,
    normalize,
    open_new_thread,
    reply_to,
    send,
    streamed_lengths,
    wait_idle,
    watch_streaming,
)
from tests.helpers.app_server import AppServer


def _settled_equals_checkpoint(page: Page, streamed: str) -> str:
    """The streamed text is the start of the settled reply (the last flush may land together with
    the settled message), and the settled reply survives a reload unchanged (it is the checkpoint)."""
    wait_idle(page)
    final = messages(page, "assistant").last.inner_text()
    assert normalize(final).startswith(normalize(streamed)), "the settled reply differs from what streamed"
    assert len(normalize(streamed)) >= len(normalize(final)) // 2, "most of the reply never showed while streaming"
    page.reload()
    expect(messages(page, "assistant").last).to_be_visible()
    assert normalize(
        messages(page, "assistant").last.inner_text()
    ) == normalize(final), "reload (the checkpoint) shows other text"
    return final


def test_reply_streams_in_place_and_matches_the_checkpoint(page: Page, paced_server: AppServer):
    open_new_thread(page, paced_server)
    watch_streaming(page)
    send(page, "stream 60 words")
    lengths, streamed = streamed_lengths(page)
    assert len(lengths) >= 4, f"the reply did not grow visibly while streaming: {lengths}"
    assert lengths == sorted(lengths), f"the streamed text shrank: {lengths}"
    final = _settled_equals_checkpoint(page, streamed)
    words = final.split()
    assert len(words) == 60, "C10: every word exactly once"
    assert messages(page, "assistant").count() == 1


def test_reply_after_an_approval_streams_and_matches_the_checkpoint(page: Page, paced_server: AppServer):
    open_new_thread(page, paced_server)
    send(page, "email dave@example.com about streaming: after the card")
    expect(cards(page)).to_have_count(1)
    intro = messages(page, "assistant").first.inner_text()
    page.get_by_test_id("decision-approve").click()
    watch_streaming(page)
    page.get_by_test_id("submit-decisions").click()
    lengths, streamed = streamed_lengths(page)
    assert len(lengths) >= 2, f"the resumed reply did not stream: {lengths}"
    final = _settled_equals_checkpoint(page, streamed)
    assert "dave@example.com" in final
    # C10: the first turn's text is not repeated in the resumed reply
    assert normalize(intro) not in normalize(final)
    expect(messages(page, "assistant")).to_have_count(2)
    expect(messages(page, "tool")).to_have_count(1)


LINES_AS_ONE_PARAGRAPH = """() => {
    const live = document.querySelector('[data-testid=streaming-message] [data-live]');
    const probe = live.cloneNode(false);
    probe.removeAttribute('data-live');
    probe.textContent = live.textContent;
    live.parentNode.appendChild(probe);
    const heights = [live.getBoundingClientRect().height, probe.getBoundingClientRect().height];
    probe.remove();
    return heights;
}"""
"""The live text's height and the height of the same text laid out as one paragraph in its place."""


def test_a_long_paragraph_wraps_while_it_streams_as_one_paragraph(page: Page, paced_server: AppServer):
    """The live text is kept in blocks (assets/js/live.js) but reads as one paragraph: no line of a
    3,000-character paragraph ends early where a block ends."""
    open_new_thread(page, paced_server)
    send(page, "stream 800 words")
    page.wait_for_function(
        "() => { const b = document.querySelector('[data-testid=streaming-message] [data-live]');"
        " return b && b.textContent.length > 3300; }",
        timeout=60_000,
    )
    streamed, as_paragraph = page.evaluate(LINES_AS_ONE_PARAGRAPH)
    assert streamed == as_paragraph, f"the streamed text is {streamed - as_paragraph} px taller than the paragraph"
    page.get_by_test_id("stop-button").click()
    expect(page.get_by_test_id("streaming-message")).to_have_count(0)


def test_stop_ends_a_long_reply_and_the_thread_stays_usable(page: Page, paced_server: AppServer):
    """C12: 600 words at 40 words/s would take 15 s; Stop ends it, another thread works meanwhile,
    and the stopped thread takes a new message."""
    url = open_new_thread(page, paced_server)
    send(page, "stream 600 words")
    bubble = page.get_by_test_id("streaming-message")
    expect(bubble).to_contain_text("fox")
    expect(page.get_by_test_id("composer-lock-reason")).to_contain_text("Stop")

    # another thread, in another tab of the same browser, while this one streams
    other = page.context.new_page()
    open_new_thread(other, paced_server)
    assert reply_to(other, "stream 3 words").count(" ") == 2
    other.close()

    page.get_by_test_id("stop-button").click()
    # well before the 15 s the reply would need, it is gone and the composer is back
    expect(bubble).to_have_count(0, timeout=4_000)
    expect(page.get_by_test_id("composer-input")).to_be_enabled(timeout=4_000)
    expect(page.get_by_test_id("stop-button")).to_have_count(0)
    expect(page.get_by_test_id("run-notice")).to_contain_text("Stopped")
    # what streamed before Stop stays, marked as stopped (issue 19, QA M3), and grows no more
    kept = messages(page, "assistant").last
    expect(kept.get_by_test_id("message-cut")).to_contain_text("Stopped")
    expect(kept).to_contain_text("fox")
    assert all(len(m.split()) < 600 for m in messages(page, "assistant").all_inner_texts())

    assert normalize(reply_to(page, "stream 4 words")).count(" ") == 3
    assert page.url == url


def test_policy_file_narrows_the_email_card_to_approve_and_reject(page: Page, paced_server: AppServer):
    """C13 via HITL_POLICY: send_email allows approve and reject only; the card shows just those."""
    open_new_thread(page, paced_server)
    send(page, "email erin@example.com about policy: narrow")
    expect(cards(page)).to_have_count(1)
    assert buttons_on(cards(page)) == ["approve", "reject"]
    expect(page.get_by_test_id("approve-all")).to_be_visible()
    expect(page.locator("[data-testid=card-arg][data-key=to]")).to_have_attribute("data-type", "string")
    page.get_by_test_id("approve-all").click()  # picks Approve on the card; Submit sends it (QA M5)
    expect(cards(page).first).to_have_attribute("data-choice", "approve")
    expect(messages(page, "tool")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_attribute("data-outcome", "executed")
    wait_idle(page)
