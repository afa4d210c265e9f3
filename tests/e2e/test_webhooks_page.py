"""The webhooks page in Chromium: an admin registers a receiver on loopback by keyboard (its secret shown once),
a chat turn's ``run.finished`` reaches it with a valid signature and shows in the delivery log as
delivered, "Send again" delivers the same event id once more, the endpoint is turned off and on, its
secret rotated (asked first; the next try is signed with the new one) and it is deleted; at
desktop (1280x800) and phone (390x844) width. Screenshots: ``test-artifacts/shots/webhooks-*.png``."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page, expect

from tests.e2e.ui import AxeScan, open_new_thread, send, shoot, sign_in_browser, wait_idle
from tests.helpers.app_server import AppServer, free_port
from tests.helpers.webhook_receiver import LoopbackReceiver

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def refresh_until(page: Page, check, what: str, timeout_s: float = 60) -> None:
    """Press Refresh on the delivery log until ``check()`` holds (the session server's deliverer looks
    every 0.5 s and tries a failed delivery again after 1 s, tests/e2e/conftest.py)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"waited {timeout_s:g} s for {what}"
        page.get_by_test_id("deliveries-refresh").click()
        page.wait_for_timeout(500)


def shown_text(row, test_id: str) -> str:
    """The text of ``row``'s ``test_id`` now, or "" while the log does not show the row yet (no waiting:
    ``inner_text`` would wait 20 s for a row that only a later Refresh brings, and fail)."""
    cell = row.get_by_test_id(test_id)
    return cell.inner_text() if cell.count() else ""


def both_widths(page: Page, scan: AxeScan, name: str) -> None:
    """Scan ``page`` with ``scan`` at phone and desktop width, then go back to the width it had."""
    before = page.viewport_size
    for size in (PHONE, DESKTOP):
        page.set_viewport_size(size)
        scan(page, name)
    if before:
        page.set_viewport_size(before)


def test_register_a_webhook_and_see_its_delivery(app_server: AppServer, page: Page):
    sign_in_browser(page, app_server, role="admin", name="Ada Hooks")
    scan = AxeScan()  # the states tests/e2e/test_axe_pages.py does not reach: a secret shown, the two dialogs
    receiver = LoopbackReceiver(port=free_port())
    receiver.start()
    try:
        page.set_viewport_size(DESKTOP)
        page.goto(app_server.url + "/admin/webhooks")
        expect(page.get_by_role("heading", name="Webhooks")).to_be_visible()
        # by keyboard: type the URL, Tab to each event box and Space to uncheck it, Enter submits
        # the cloud metadata address is refused with the reason, and nothing is registered
        page.get_by_test_id("webhook-url").fill("http://169.254.169.254/latest/meta-data/")
        page.get_by_test_id("webhook-url").press("Enter")
        expect(page.get_by_test_id("webhook-error")).to_contain_text("never sent there")
        expect(page.get_by_test_id("endpoint-row")).to_have_count(0)
        page.get_by_test_id("webhook-url").fill("")
        page.get_by_test_id("webhook-url").focus()
        page.keyboard.type(f"http://127.0.0.1:{receiver.port}/hooks")
        for event in ("review.waiting", "review.decided", "review.expired", "review.escalated"):
            page.keyboard.press("Tab")
            expect(page.get_by_test_id(f"event-{event}")).to_be_focused()
            page.keyboard.press("Space")
            expect(page.get_by_test_id(f"event-{event}")).not_to_be_checked()
        page.keyboard.press("Tab")
        expect(page.get_by_test_id("event-run.finished")).to_be_checked()
        page.get_by_test_id("webhook-url").press("Enter")
        secret = page.get_by_test_id("webhook-secret")
        expect(secret).to_have_text(re.compile(r"^whsec_[A-Za-z0-9_-]{43}$"))
        receiver.secret = secret.inner_text().strip()
        expect(page.get_by_test_id("endpoint-url")).to_contain_text(f"127.0.0.1:{receiver.port}")
        shoot(page, "webhooks-added-desktop")
        both_widths(page, scan, "webhooks-secret-shown")

        thread_id = open_new_thread(page, app_server).rstrip("/").rsplit("/", 1)[-1]
        send(page, "hello")
        wait_idle(page)
        page.goto(app_server.url + "/admin/webhooks")
        expect(page.get_by_test_id("webhook-secret")).to_have_count(0)  # shown once
        assert receiver.secret not in page.content()

        def mine() -> list:  # this turn's run.finished (a run another test left going may end meanwhile)
            return [r for r in receiver.got if r.event["data"].get("thread_id") == thread_id]

        refresh_until(page, lambda: bool(mine()), "this turn's run.finished at the receiver")
        got = mine()[0]
        assert got.event["type"] == "run.finished" and receiver.refused == []
        row = page.get_by_test_id("delivery-row").filter(has_text=got.event_id)
        refresh_until(page, lambda: shown_text(row, "delivery-status") == "delivered", "delivered in the log")
        expect(row.get_by_test_id("delivery-last")).to_contain_text("1 try · last: HTTP 204")
        shoot(page, "webhooks-delivered-desktop")

        page.set_viewport_size(PHONE)
        row.get_by_test_id("delivery-send-again").click()
        expect(page.get_by_test_id("webhook-message")).to_contain_text("queued again")
        refresh_until(page, lambda: len(mine()) == 2, "the delivery sent again")
        assert mine()[1].event_id == got.event_id, "sent again with the same event id"
        refresh_until(page, lambda: shown_text(row, "delivery-last").startswith("2 tries"), "two tries")
        row.locator("summary").click()
        expect(row.get_by_test_id("delivery-try")).to_have_count(2)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "no sideways scroll"
        shoot(page, "webhooks-log-phone")
        page.get_by_test_id("endpoint-off").click()
        expect(page.get_by_test_id("endpoint-on")).to_be_visible()
        shoot(page, "webhooks-off-phone")

        # rotate the secret (asked first): the new one is shown once, and the next delivery is signed with it
        page.get_by_test_id("endpoint-on").click()
        page.get_by_test_id("endpoint-rotate").click()
        expect(page.get_by_role("alertdialog")).to_contain_text("signed with it")
        shoot(page, "webhooks-rotate-confirm-phone")
        both_widths(page, scan, "webhook-rotate-dialog")
        page.get_by_test_id("endpoint-rotate-confirm").click()
        rotated = page.get_by_test_id("webhook-secret")
        expect(rotated).to_have_text(re.compile(r"^whsec_[A-Za-z0-9_-]{43}$"))
        new_secret = rotated.inner_text().strip()
        assert new_secret != receiver.secret
        refused = len(receiver.refused)
        row.get_by_test_id("delivery-send-again").click()  # still on the old secret: the receiver refuses it
        refresh_until(page, lambda: len(receiver.refused) > refused, "a delivery signed with the new secret, refused")
        receiver.secret = new_secret
        refresh_until(page, lambda: len(mine()) == 3, "the delivery, signed with the new secret")
        page.reload()
        expect(page.get_by_test_id("webhook-secret")).to_have_count(0)
        assert new_secret not in page.content()
        # delete (asked first): the endpoint goes, its log stays
        page.get_by_test_id("endpoint-delete").click()
        expect(page.get_by_role("alertdialog")).to_contain_text("delivery log stays")
        both_widths(page, scan, "webhook-delete-dialog")
        page.get_by_test_id("endpoint-delete-confirm").click()
        expect(page.get_by_test_id("endpoint-row")).to_have_count(0)
        expect(page.get_by_test_id("webhook-message")).to_contain_text("deleted")
        expect(row.get_by_test_id("delivery-status")).to_be_visible()
        shoot(page, "webhooks-deleted-phone")
    finally:
        receiver.stop()
    scan.assert_clean()
    assert page.problems == []  # type: ignore[attr-defined]
