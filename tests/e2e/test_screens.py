"""The main screens at desktop (1280x800) and phone (390x844) sizes, saved for people to look at
(test-artifacts/shots/), plus what a person checks on each: a run error offers Retry and leaves
the thread usable; on a phone the sidebar is hidden and New chat is in the header."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.ui import cards, edit_json, messages, open_new_thread, reply_to, send, shoot, wait_idle
from tests.helpers.app_server import AppServer

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def _both(page: Page, name: str) -> None:
    page.set_viewport_size(DESKTOP)
    page.wait_for_timeout(150)
    shoot(page, f"{name}-desktop")
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(150)
    shoot(page, f"{name}-phone")
    page.set_viewport_size(DESKTOP)


def test_screens_reply_review_and_edit_error(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    reply_to(page, "read records")
    reply_to(page, "hello there")
    _both(page, "chat-reply")

    # the bubble's padding is the only space around its text (no paragraph margins on top)
    bubble = messages(page, "assistant").last.bounding_box()
    text_top = messages(page, "assistant").last.locator("p").first.bounding_box()
    assert bubble and text_top and text_top["y"] - bubble["y"] <= 12

    send(page, "email alice@example.com about the report: it is ready and write notes/plan.md: # Plan and delete notes/old.txt")
    expect(cards(page)).to_have_count(3)
    # the new review is scrolled into view, and the sidebar row shows its badge whole
    expect(cards(page).first).to_be_in_viewport()
    row = page.locator("[data-testid=thread-link]").first
    badge = row.get_by_test_id("pending-badge")
    expect(badge).to_be_visible()
    r, b = row.bounding_box(), badge.bounding_box()
    assert r and b and b["x"] + b["width"] <= r["x"] + r["width"], "the review badge is clipped"
    _both(page, "review-3-cards")

    page.locator("[data-testid=approval-card][data-index='0'] [data-testid=decision-edit]").click()
    edit_json(cards(page).first, '{"to": 5, "subject": "the report"}')
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("edit-error")).to_be_visible()
    page.get_by_test_id("edit-error").scroll_into_view_if_needed()
    _both(page, "edit-error")


def test_run_error_offers_retry_and_the_thread_stays_usable(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "fail after 5 words")
    expect(page.get_by_test_id("run-error")).to_be_visible()
    expect(page.get_by_test_id("retry-button")).to_be_visible()
    expect(page.get_by_test_id("composer-input")).to_be_enabled()
    _both(page, "run-error")

    # Retry runs again (the demo model fails again, deterministically): the error comes back
    page.get_by_test_id("retry-button").click()
    expect(page.get_by_test_id("run-error")).to_be_visible()
    expect(page.get_by_test_id("retry-button")).to_be_visible()
    wait_idle(page)
    # a new message works, and the error is gone with it
    assert len(reply_to(page, "stream 3 words").split()) == 3
    expect(page.get_by_test_id("run-error")).to_have_count(0)


def test_phone_layout_hides_the_sidebar_and_keeps_new_chat(other_browser, app_server: AppServer):
    phone = other_browser(PHONE)
    first = open_new_thread(phone, app_server)
    reply_to(phone, "stream 12 words")
    expect(phone.get_by_test_id("new-thread")).to_be_hidden()
    header_new = phone.get_by_test_id("new-thread-header")
    expect(header_new).to_be_visible()
    # nothing sticks out sideways
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    # the workspace (what the tools did) is reachable from the header too
    phone.get_by_test_id("workspace-toggle-header").click()
    expect(phone.get_by_test_id("workspace-panel")).to_be_visible()
    shoot(phone, "workspace-phone")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    # on a phone the panel takes the whole screen; its close button brings the chat back
    phone.get_by_test_id("workspace-close").click()
    expect(phone.get_by_test_id("workspace-panel")).to_have_count(0)
    header_new.click()
    phone.wait_for_url(lambda u: u != first and "/thread/" in u)
    expect(phone.get_by_test_id("empty-thread")).to_be_visible()
    expect(messages(phone, "assistant")).to_have_count(0)
