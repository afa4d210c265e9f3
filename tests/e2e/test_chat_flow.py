"""The chat app end to end: the issue-2 "done when" path in a real browser."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.helpers.app_server import AppServer


def open_new_thread(page: Page, server: AppServer) -> str:
    """Open ``/`` (which redirects to a new thread) and return the thread URL."""
    page.goto(server.url + "/")
    page.wait_for_url(re.compile(r".*/thread/[0-9a-f-]{36}$"))
    expect(page.get_by_test_id("composer-input")).to_be_enabled()
    return page.url


def send(page: Page, text: str) -> None:
    """Type ``text`` in the composer and press Send."""
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("send-button").click()


def test_edit_recipient_on_card_lands_in_outbox_and_survives_reload(page: Page, app_server: AppServer):
    url = open_new_thread(page, app_server)
    send(page, "email alice@example.com about the report: it is ready")
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-action-name", "send_email")
    # only the policy's buttons
    expect(card.get_by_test_id("decision-approve")).to_be_visible()
    expect(card.get_by_test_id("decision-edit")).to_be_visible()
    expect(card.get_by_test_id("decision-reject")).to_be_visible()
    expect(card.get_by_test_id("decision-respond")).to_have_count(0)
    expect(page.get_by_test_id("composer-input")).to_be_disabled()

    # reload during the review: same thread, same card
    page.reload()
    assert page.url == url
    expect(page.get_by_test_id("approval-card")).to_have_count(1)
    expect(page.locator("[data-testid=card-arg][data-key=to]")).to_contain_text("alice@example.com")

    page.get_by_test_id("decision-edit").click()
    editor = page.get_by_test_id("edit-json")
    editor.fill('{"to": 5, "subject": "the report", "body": "it is ready"}')
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("edit-error")).to_contain_text("`to` must be a string")
    editor.fill('{"to": "bob@example.com", "subject": "the report", "body": "it is ready"}')
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("edit-error")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()

    tool = page.locator("[data-testid=message][data-role=tool]")
    expect(tool).to_have_count(1)
    expect(tool).to_have_attribute("data-outcome", "edited")
    expect(page.locator("[data-testid=message][data-role=assistant]").last).to_contain_text("bob@example.com")
    expect(page.get_by_test_id("composer-input")).to_be_enabled()

    page.get_by_test_id("workspace-toggle").click()
    expect(page.locator("[data-testid=outbox-mail][data-to='bob@example.com']")).to_have_count(1)
    expect(page.locator("[data-testid=outbox-mail][data-to='alice@example.com']")).to_have_count(0)
