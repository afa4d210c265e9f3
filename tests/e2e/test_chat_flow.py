"""The chat app end to end (issue 2): the "done when" path, reloads, batches, questions, sidebar."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.ui import (
    buttons_on,
    card,
    cards,
    edit_json,
    messages,
    open_new_thread,
    open_workspace,
    own_sandbox,
    reply_to,
    send,
    sign_in_browser,
    wait_idle,
)
from tests.helpers.app_server import AppServer


def test_edit_recipient_on_card_lands_in_outbox_and_survives_reload(page: Page, app_server: AppServer):
    url = open_new_thread(page, app_server)
    send(page, "email alice@example.com about the report: it is ready")
    expect(cards(page)).to_have_count(1)
    expect(cards(page)).to_have_attribute("data-action-name", "send_email")
    # only the policy's buttons
    assert buttons_on(cards(page)) == ["approve", "edit", "reject"]
    expect(page.get_by_test_id("composer-input")).to_be_disabled()

    # reload during the review: same thread, same card
    page.reload()
    assert page.url == url
    expect(cards(page)).to_have_count(1)
    expect(page.locator("[data-testid=card-arg][data-key=to]")).to_contain_text("alice@example.com")

    page.get_by_test_id("decision-edit").click()
    edit_json(cards(page).first, '{"to": 5, "subject": "the report", "body": "it is ready"}')
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("edit-error")).to_contain_text("`to` must be a string")
    edit_json(cards(page).first, '{"to": "bob@example.com", "subject": "the report", "body": "it is ready"}')
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("edit-error")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()

    tool = messages(page, "tool")
    expect(tool).to_have_count(1)
    expect(tool).to_have_attribute("data-outcome", "edited")
    expect(messages(page, "assistant").last).to_contain_text("bob@example.com")
    expect(page.get_by_test_id("composer-input")).to_be_enabled()

    open_workspace(page)
    expect(page.locator("[data-testid=outbox-mail][data-to='bob@example.com']")).to_have_count(1)
    expect(page.locator("[data-testid=outbox-mail][data-to='alice@example.com']")).to_have_count(0)


def test_reload_keeps_the_review_and_another_browser_is_refused(page: Page, app_server: AppServer, other_browser):
    """C8: the card comes back after a reload and approving finishes the turn; a different browser
    (signed in as another account) opening the same URL is refused and cannot decide anything."""
    url = open_new_thread(page, app_server)
    send(page, "email carol@example.com about the reload: still here")
    expect(cards(page)).to_have_count(1)

    page.reload()
    expect(cards(page)).to_have_count(1)
    expect(page.locator("[data-testid=card-arg][data-key=to]")).to_contain_text("carol@example.com")

    stranger = other_browser()
    sign_in_browser(stranger, app_server)  # another browser, signed in as another account
    stranger.goto(url)
    expect(stranger.get_by_test_id("load-error")).to_contain_text("This thread belongs to someone else")
    expect(stranger.get_by_test_id("approval-card")).to_have_count(0)
    expect(stranger.get_by_test_id("message")).to_have_count(0)
    expect(stranger.get_by_test_id("composer-input")).to_be_disabled()
    expect(stranger.get_by_test_id("composer-lock-reason")).to_contain_text("someone else")

    # the stranger decided nothing: the owner's card is still pending and approving finishes the turn
    page.reload()
    expect(cards(page)).to_have_count(1)
    page.get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_attribute("data-outcome", "executed")
    expect(messages(page, "assistant").last).to_contain_text("carol@example.com")
    wait_idle(page)
    open_workspace(page)
    expect(page.locator("[data-testid=outbox-mail][data-to='carol@example.com']")).to_have_count(1)

    # review M1: each browser's Workspace panel shows only its own mail
    open_new_thread(stranger, app_server)
    send(stranger, "email dan@example.com about mine: only mine")
    stranger.get_by_test_id("decision-approve").click()
    stranger.get_by_test_id("submit-decisions").click()
    expect(messages(stranger, "tool")).to_have_attribute("data-outcome", "executed")
    wait_idle(stranger)
    open_workspace(stranger)
    expect(stranger.locator("[data-testid=outbox-mail][data-to='dan@example.com']")).to_have_count(1)
    expect(stranger.get_by_test_id("outbox-mail")).to_have_count(1)  # not carol's
    page.get_by_test_id("workspace-toggle").first.click()  # close, then reopen: the panel reads again
    expect(page.get_by_test_id("workspace-panel")).to_have_count(0)
    open_workspace(page)
    expect(page.locator("[data-testid=outbox-mail][data-to='carol@example.com']")).to_have_count(1)
    expect(page.get_by_test_id("outbox-mail")).to_have_count(1)  # not dan's


def test_three_action_batch_decided_out_of_order(page: Page, app_server: AppServer):
    """C5 (as far as issue 2's policy allows) and C4: cards decided in the order 3, 1, 2; a
    submission with one card undecided is refused readably and starts nothing. (The outbox is
    shared by the session's server, so the addresses are this test's own.)"""
    open_new_thread(page, app_server)
    target = own_sandbox(page, app_server) / "notes" / "x.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("to be deleted")
    send(page, "email alice@batch.example.com about a and email bob@batch.example.com about b and delete notes/x.txt")
    expect(cards(page)).to_have_count(3)
    assert [cards(page).nth(i).get_attribute("data-action-name") for i in range(3)] == ["send_email", "send_email", "delete_file"]
    assert buttons_on(card(page, 2)) == ["approve", "reject"]
    # C4: the composer is locked, and says why
    expect(page.get_by_test_id("composer-input")).to_be_disabled()
    expect(page.get_by_test_id("composer-lock-reason")).to_contain_text("waiting for your review")

    card(page, 2).get_by_test_id("decision-approve").click()
    card(page, 0).get_by_test_id("decision-approve").click()
    expect(page.get_by_test_id("decided-count")).to_have_text("2 of 3 decided")
    # C5: two of three decisions cannot be submitted (the server refuses them too: test_review_submit_ws)
    expect(page.get_by_test_id("submit-decisions")).to_have_text("Submit 2 decisions")
    expect(page.get_by_test_id("submit-decisions")).to_be_disabled()
    expect(cards(page)).to_have_count(3)
    expect(messages(page, "tool")).to_have_count(0)
    assert target.exists(), "a refused submission must not run anything"

    card(page, 1).get_by_test_id("decision-reject").click()
    reason = card(page, 1).get_by_test_id("reject-message")
    reason.fill("bob is on holiday")
    reason.blur()
    expect(page.get_by_test_id("decided-count")).to_have_text("3 of 3 decided")
    page.get_by_test_id("submit-decisions").click()

    tools = messages(page, "tool")
    expect(tools).to_have_count(3)
    assert [tools.nth(i).get_attribute("data-outcome") for i in range(3)] == ["executed", "rejected", "executed"]
    expect(messages(page, "assistant").last).to_contain_text("bob is on holiday")
    wait_idle(page)
    assert not target.exists()
    open_workspace(page)
    expect(page.locator("[data-testid=outbox-mail][data-to='alice@batch.example.com']")).to_have_count(1)
    expect(page.locator("[data-testid=outbox-mail][data-to='bob@batch.example.com']")).to_have_count(0)


def test_ask_user_needs_an_answer_and_the_reply_uses_it(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "ask me what is your favourite colour")
    expect(cards(page)).to_have_count(1)
    expect(cards(page)).to_have_attribute("data-action-name", "ask_user")
    assert buttons_on(cards(page)) in (["respond"], [])
    expect(page.get_by_test_id("approve-all")).to_have_count(0)
    answer = page.get_by_test_id("respond-message")
    expect(answer).to_be_visible()

    expect(page.get_by_test_id("submit-decisions")).to_be_disabled()  # no answer yet: nothing to submit (C5)
    expect(cards(page)).to_have_count(1)
    expect(messages(page, "tool")).to_have_count(0)

    answer.fill("blue")
    answer.blur()
    expect(page.get_by_test_id("decided-count")).to_have_text("1 of 1 decided")
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_attribute("data-outcome", "answered")
    expect(messages(page, "assistant").last).to_contain_text("blue")
    wait_idle(page)


def test_sql_change_card_offers_approve_and_reject_only(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "sql: UPDATE records SET amount = 2")
    expect(cards(page)).to_have_count(1)
    expect(cards(page)).to_have_attribute("data-action-name", "execute_sql")
    assert buttons_on(cards(page)) == ["approve", "reject"]
    expect(page.locator("[data-testid=card-arg][data-key=query]")).to_contain_text("UPDATE records SET amount = 2")
    expect(page.locator("[data-testid=card-arg][data-key=query]")).to_have_attribute("data-type", "string")
    page.get_by_test_id("decision-reject").click()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_attribute("data-outcome", "rejected")
    wait_idle(page)


def test_sidebar_lists_threads_with_title_and_pending_badge(page: Page, app_server: AppServer):
    first = open_new_thread(page, app_server)
    reply_to(page, "stream 5 words")
    link = page.locator(f"[data-testid=thread-link][data-thread-id='{first.rsplit('/', 1)[1]}']")
    expect(link).to_contain_text("stream 5 words")
    expect(link.get_by_test_id("pending-badge")).to_have_count(0)

    page.get_by_test_id("new-thread").click()
    page.wait_for_url(lambda u: u != first and "/thread/" in u)
    second = page.url
    expect(page.get_by_test_id("empty-thread")).to_be_visible()
    expect(page.get_by_test_id("message")).to_have_count(0)
    send(page, "delete notes/nothing.txt")
    expect(cards(page)).to_have_count(1)
    link2 = page.locator(f"[data-testid=thread-link][data-thread-id='{second.rsplit('/', 1)[1]}']")
    expect(link2).to_contain_text("delete notes/nothing.txt")
    expect(link2.get_by_test_id("pending-badge")).to_be_visible()
    expect(link.get_by_test_id("pending-badge")).to_have_count(0)

    # the first thread is one click away, with its reply
    link.click()
    page.wait_for_url(first)
    expect(messages(page, "assistant")).to_have_count(1)
    expect(page.get_by_test_id("approval-card")).to_have_count(0)


def test_approve_the_rest_keeps_decisions_already_made(page: Page, app_server: AppServer):
    """QA finding: "Approve all" must not overwrite a Reject (or an edit) the reviewer chose."""
    open_new_thread(page, app_server)
    target = own_sandbox(page, app_server) / "notes" / "keep.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("keep me")
    send(page, "email gil@rest.example.com about one and delete notes/keep.txt and email hal@rest.example.com about two")
    expect(cards(page)).to_have_count(3)
    expect(page.get_by_test_id("approve-all")).to_have_text("Approve all")

    card(page, 1).get_by_test_id("decision-reject").click()
    reason = card(page, 1).get_by_test_id("reject-message")
    reason.fill("keep it")
    reason.blur()
    # an edit left open is not overwritten: the reviewer is asked to finish it
    card(page, 2).get_by_test_id("decision-edit").click()
    page.get_by_test_id("approve-all").click()
    expect(card(page, 2).get_by_test_id("card-error")).to_contain_text("Finish this edit")
    expect(messages(page, "tool")).to_have_count(0)
    edit_json(card(page, 2), '{"to": "ivy@rest.example.com", "subject": "two", "body": ""}')
    card(page, 2).get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("decided-count")).to_have_text("2 of 3 decided")
    expect(page.get_by_test_id("approve-all")).to_have_text("Approve the rest")
    page.get_by_test_id("approve-all").click()  # picks Approve on card 1 only; nothing is sent yet (QA M5)
    expect(page.get_by_test_id("decided-count")).to_have_text("3 of 3 decided")
    expect(messages(page, "tool")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()

    tools = messages(page, "tool")
    expect(tools).to_have_count(3)
    outcomes = sorted(tools.nth(i).get_attribute("data-outcome") for i in range(3))
    assert outcomes == ["edited", "executed", "rejected"]
    wait_idle(page)
    assert target.exists(), "the rejected delete must not run"
    open_workspace(page)
    expect(page.locator("[data-testid=outbox-mail][data-to='gil@rest.example.com']")).to_have_count(1)
    expect(page.locator("[data-testid=outbox-mail][data-to='ivy@rest.example.com']")).to_have_count(1)
    expect(page.locator("[data-testid=outbox-mail][data-to='hal@rest.example.com']")).to_have_count(0)
