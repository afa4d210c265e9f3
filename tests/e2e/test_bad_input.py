"""Bad input in the browser (issue 3, C14): oversize and malformed edits, HTML and script in model
text and tool arguments, a megabyte composer message. Each gets a clear message where it happened,
the websocket stays alive and the thread stays usable."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from tests.e2e.ui import (
    cards,
    edit_json,
    messages,
    open_new_thread,
    open_workspace,
    own_sandbox,
    paste,
    reply_to,
    send,
    wait_idle,
)
from tests.helpers.app_server import AppServer

XSS_MARKERS = "window.__xss"


def _check(page: Page, text: str, *, synced: bool = True) -> None:
    edit_json(cards(page).first, text, synced=synced)
    page.get_by_test_id("edit-check").click()


def test_edit_errors_are_clear_and_fast_typing_keeps_every_character(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "email frank@example.com about limits: big edits")
    expect(cards(page)).to_have_count(1)
    # Check without touching the text: the proposed arguments pass, the card is decided as edit
    page.get_by_test_id("decision-edit").click()
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("decided-count")).to_have_text("1 of 1 decided")
    expect(page.get_by_test_id("edit-json")).to_have_count(0)

    page.get_by_test_id("decision-edit").click()
    error = page.get_by_test_id("edit-error")

    # a 1.2 MB paste: a limit message, and the connection stays alive
    big = json.dumps({"to": "frank@example.com", "subject": "x", "body": "y" * 1_200_000})
    _check(page, big, synced=False)  # over the limit: the server keeps its copy and says why
    expect(error).to_contain_text("too large")
    # said once (QA: twice), and the diff says it is of the last text the server could read
    expect(cards(page).first.get_by_text(re.compile("too large"))).to_have_count(1)
    expect(page.get_by_test_id("edit-diff")).to_contain_text("(of the last text that could be read)")

    _check(page, '{"to": "a@')
    expect(error).to_contain_text("Not valid JSON")
    _check(page, '{"to": 5, "subject": "s", "body": "b"}')
    expect(error).to_contain_text("`to` must be a string")
    _check(page, '{"to": "a@example.com", "subject": "s", "body": "b", "bcc": "x@example.com"}')
    expect(error).to_contain_text("unknown field `bcc`")
    _check(page, '{"to": "a@example.com", "subject": "s"}')
    expect(error).to_contain_text("`body` is required")
    expect(page.get_by_test_id("decided-count")).to_have_text("0 of 1 decided")

    # fast typing: every character arrives, none dropped or reordered by a re-render
    typed = '{"to": "grace@example.com", "subject": "typed fast", "body": "0123456789 abcdefghij ' + "xyz" * 20 + '"}'
    editor = page.get_by_test_id("edit-json").locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type(typed, delay=0)
    expect(editor).to_have_text(typed)  # every character, in order; the as-you-type check clears once the JSON closes
    page.get_by_test_id("edit-check").click()
    expect(error).to_have_count(0)
    expect(page.get_by_test_id("decided-count")).to_have_text("1 of 1 decided")
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_attribute("data-outcome", "edited")
    wait_idle(page)
    open_workspace(page)
    expect(page.locator("[data-testid=outbox-mail][data-to='grace@example.com']")).to_have_count(1)


def test_html_and_script_in_text_and_arguments_are_shown_as_text(page: Page, app_server: AppServer):
    """Issue 3 "Bad input": nothing executes (the page fixture fails on any dialog), no element is
    injected, and the text is shown literally in the bubble, the cards and the reply."""
    open_new_thread(page, app_server)
    page.evaluate(f"() => {{ {XSS_MARKERS} = 0; }}")
    text = (
        "write notes/evil.txt: <img src=x onerror=alert(1)> [x](javascript:alert(1)) <script>alert(2)</script>"
        " and email <script>alert(3)</script>@example.com about <script>alert(4)</script>: <b>bold</b>"
    )
    send(page, text)
    expect(cards(page)).to_have_count(2)
    expect(messages(page, "user")).to_contain_text("<img src=x onerror=alert(1)>")
    expect(page.locator("[data-testid=card-arg][data-key=content]")).to_contain_text("<script>alert(2)</script>")
    expect(page.locator("[data-testid=card-arg][data-key=subject]")).to_contain_text("<script>alert(4)</script>")
    # the model's intro echoes the address (markdown, raw HTML off)
    expect(messages(page, "assistant").first).to_contain_text("<script>alert(3)</script>@example.com")

    # reject the mail with a reason that is itself markup; the summary echoes it
    page.locator("[data-testid=approval-card][data-index='1'] [data-testid=decision-reject]").click()
    reason = page.get_by_test_id("reject-message")
    reason.fill("<img src=y onerror=alert(5)> [click](javascript:alert(6))")
    reason.blur()
    page.locator("[data-testid=approval-card][data-index='0'] [data-testid=decision-approve]").click()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_count(2)
    wait_idle(page)
    expect(messages(page, "assistant").last).to_contain_text("<img src=y onerror=alert(5)>")
    page.locator("[data-testid=message][data-role=tool] summary").first.click()  # expand a tool row

    thread = page.get_by_test_id("thread")
    expect(thread.locator("img, script, iframe, object, embed")).to_have_count(0)
    expect(thread.locator("b")).to_have_count(0)
    hrefs = thread.locator("a").evaluate_all("els => els.map(a => a.getAttribute('href') || '')")
    assert not [h for h in hrefs if h.strip().lower().startswith("javascript")], hrefs
    # and after a reload (the checkpointed text renders the same way)
    page.reload()
    expect(messages(page, "tool")).to_have_count(2)
    expect(page.get_by_test_id("thread").locator("img, script, iframe, object, embed, b")).to_have_count(0)
    # the file holds the literal text
    assert "<script>alert(2)</script>" in (own_sandbox(page, app_server) / "notes" / "evil.txt").read_text()


def test_megabyte_composer_message_gets_a_limit_message_and_the_thread_stays_usable(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    composer = page.get_by_test_id("composer-input")
    paste(composer, "z" * 1_000_000)
    page.get_by_test_id("send-button").click()
    expect(page.get_by_test_id("composer-error")).to_contain_text("too long")
    expect(page.get_by_test_id("composer-error")).to_contain_text("20,000")
    expect(messages(page, "user")).to_have_count(0)
    # nothing lost: the refused text is still in the composer, to shorten
    assert composer.evaluate("el => el.value.length") == 1_000_000
    # the same connection still works: a normal message gets its reply
    assert len(reply_to(page, "stream 5 words").split()) == 5
    expect(page.get_by_test_id("composer-error")).to_have_count(0)
    expect(composer).to_have_value("")  # an accepted message leaves the composer
