"""Deciding from outside the page, in the browser, at desktop (1280x800) and phone (390x844) width:
a person makes an API token on /account (shown once; the list newest first), the API takes it, they
revoke it (asked first: Cancel keeps it) and the API refuses it; a reviewer opens the one-time link
of a reminder mail (a real SMTP server on loopback), confirms, and the owner's card goes away.
Screenshots: ``test-artifacts/shots/tokens-*.png`` and ``mail-link-*.png``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message

import httpx
import pytest
from aiosmtpd.controller import Controller
from playwright.sync_api import Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.ui import AxeScan, axe_problems, cards, open_new_thread, send, shoot, sign_in_browser
from tests.helpers.app_server import AppServer, free_port
from tests.helpers.paths import ROOT

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def _reviews(server: AppServer, token: str) -> httpx.Response:
    return httpx.get(f"{server.url}/api/v1/reviews", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_make_use_and_revoke_a_token(app_server: AppServer, page: Page):
    sign_in_browser(page, app_server, role="reviewer", name="Rex Token")
    scan = AxeScan()
    for size, label in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(size)
        page.goto(app_server.url + "/account")
        expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
        page.get_by_test_id("token-name").fill(f"ci bot {label}")
        page.get_by_test_id("token-scope-decide").check()
        page.get_by_test_id("token-create").click()
        secret = page.get_by_test_id("token-secret")
        expect(secret).to_have_text(re.compile(r"^hitl_pat_[A-Za-z0-9_-]{43}$"))
        token = secret.inner_text().strip()
        assert token.startswith("hitl_pat_") and len(token) == 52
        row = page.locator(f"[data-testid=token-row][data-name='ci bot {label}']")
        expect(row.get_by_test_id("token-state")).to_have_text("active")
        expect(row).to_contain_text("read + decide")
        shoot(page, f"tokens-made-{label}")
        assert axe_problems(page) == []
        assert _reviews(app_server, token).status_code == 200
        # shown once: a reload lists the token but never shows it again
        page.reload()
        expect(row.get_by_test_id("token-state")).to_have_text("active")
        expect(page.get_by_test_id("token-secret")).to_have_count(0)
        assert token not in page.content()
        expect(page.get_by_test_id("token-row").first).to_have_attribute("data-name", f"ci bot {label}")  # newest first
        # Revoke asks first: Cancel keeps the token, the dialog's own button revokes it
        row.get_by_test_id("token-revoke").click()
        expect(page.get_by_role("alertdialog")).to_contain_text(f"ci bot {label}")
        shoot(page, f"tokens-revoke-confirm-{label}")
        scan(page, "token-revoke-dialog")
        page.get_by_test_id("token-revoke-cancel").click()
        expect(page.get_by_role("alertdialog")).to_have_count(0)
        expect(row.get_by_test_id("token-state")).to_have_text("active")
        assert _reviews(app_server, token).status_code == 200
        row.get_by_test_id("token-revoke").click()
        page.get_by_test_id("token-revoke-confirm").click()
        expect(row.get_by_test_id("token-state")).to_have_text("revoked")
        expect(page.get_by_test_id("token-message")).to_contain_text("revoked")
        shoot(page, f"tokens-revoked-{label}")
        refused = _reviews(app_server, token)
        assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
    scan.assert_clean()
    assert page.problems == []  # type: ignore[attr-defined]


class Collect:
    """aiosmtpd handler keeping every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content)))
        return "250 OK"


@pytest.fixture(scope="module")
def mail_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppServer, Collect]]:
    """The app with the team policy and reminder mails (due at once) to a loopback SMTP server."""
    handler, smtp_port, port = Collect(), free_port(), free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=smtp_port)
    controller.start()
    env = {"HITL_POLICY": str(ROOT / "examples" / "policies" / "team.toml"), "HITL_SMTP_HOST": "127.0.0.1",
           "HITL_SMTP_PORT": str(smtp_port), "HITL_SMTP_FROM": "hitl@example.com", "HITL_REVIEW_REMINDER_MINUTES": "0.01",
           "HITL_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    try:
        with AppServer(tmp_path_factory.mktemp("mail-e2e"), env=env, port=port) as server:
            yield server, handler
    finally:
        controller.stop()


def _decision_link(handler: Collect, email: str, thread_url: str, kind: str) -> str:
    """The ``kind`` link of the reminder mail to ``email`` about the thread (waits up to 60 s)."""
    thread_path = "/thread/" + thread_url.rstrip("/").rsplit("/", 1)[-1]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for to, message in list(handler.messages):
            body = message.get_payload(decode=True).decode()  # type: ignore[union-attr]
            if email in to and thread_path in body:
                return re.search(kind + r" \(asks you to confirm; works once\): (http://\S+)", body).group(1)  # type: ignore[union-attr]
        time.sleep(0.5)
    raise AssertionError(f"no reminder to {email} about {thread_path}")


def test_decide_from_a_mail_link(mail_app, page: Page, browser):
    server, handler = mail_app
    reviewer_context = browser.new_context()
    reviewer = watched_page(reviewer_context)
    rex = sign_in_browser(reviewer, server, role="reviewer", name="Rex Mail")
    scan = AxeScan()
    for size, label, kind in ((DESKTOP, "desktop", "Approve"), (PHONE, "phone", "Reject")):
        thread_url = open_new_thread(page, server)
        send(page, f"delete notes/{label}.txt")
        expect(cards(page)).to_have_count(1)
        link = _decision_link(handler, rex.email, thread_url, kind)
        reviewer.set_viewport_size(size)
        reviewer.goto(link)
        expect(reviewer.get_by_role("heading", name=f"{kind} delete_file")).to_be_visible()
        expect(reviewer.get_by_text(f"notes/{label}.txt", exact=True)).to_be_visible()
        expect(reviewer.get_by_text(f"Delete the file notes/{label}.txt")).to_be_visible()
        if kind == "Reject":
            reviewer.get_by_label("Reason (optional, the agent is told)").fill("keep it for the audit")
        shoot(reviewer, f"mail-link-ask-{label}")
        assert axe_problems(reviewer) == []
        reviewer.get_by_test_id("mail-confirm").click()
        done = "Approved" if kind == "Approve" else "Rejected"
        expect(reviewer.get_by_test_id("mail-decided")).to_contain_text(f"{done}: delete_file. The agent goes on.")
        shoot(reviewer, f"mail-link-decided-{label}")
        scan(reviewer, "mail-link-decided")
        # the owner's page shows the run going on: no card left, the reply says what happened
        expect(cards(page)).to_have_count(0, timeout=60_000)
        reviewer.goto(link)  # the link works once
        expect(reviewer.get_by_text("already used or has expired")).to_be_visible()
        scan(reviewer, "mail-link-used")
    # the used link's page answers 410 Gone on purpose (the browser logs that status); nothing else
    scan.assert_clean()
    gone = [p for p in reviewer.problems if "status of 410" not in p]  # type: ignore[attr-defined]
    assert page.problems == [] and gone == []  # type: ignore[attr-defined]
    reviewer_context.close()
