"""Cases C18 and C19 in Chromium: a websocket that drops mid-stream, and a duplicated tab.

C18: the browser goes offline for 2 s (Chromium's network emulation closes the page's websocket;
Reflex's page reconnects on its own with a new connection) while a reply streams, or while a card
is raised. The page must catch up without a reload: the exact text, the card, the composer state,
one run, no doubled words.

C19: a tab is duplicated (the copy starts with the first tab's sessionStorage, so with its Reflex
client token). Each tab must end with its own session and view, and no update crosses tabs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from collections.abc import Awaitable, Callable

from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from hitl_app.agent.demo.phrases import demo_words
from tests.e2e.ui import (
    THINKING,
    cards,
    messages,
    normalize,
    open_new_thread,
    send,
    shoot,
    sign_in_browser,
    wait_idle,
)
from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient

OFFLINE_NOISE = ("ERR_INTERNET_DISCONNECTED", "ERR_NAME_NOT_RESOLVED", "WebSocket connection to", "websocket error")
"""Console errors Chromium logs for the page's reconnect attempts while it is offline (expected here)."""


class Sockets:
    """The page's ``/_event`` websockets: how many opened, and how many of them closed."""

    def __init__(self, page: Page) -> None:
        self.opened: list[str] = []
        self.closed: list[str] = []
        page.on("websocket", self._on_socket)

    def _on_socket(self, ws) -> None:
        if "/_event" in ws.url:
            self.opened.append(ws.url)
            ws.on("close", lambda w: self.closed.append(w.url))

    def assert_dropped_and_reconnected(self) -> None:
        """The first socket closed and the page opened a new one (the drop really happened)."""
        assert len(self.closed) >= 1 and len(self.opened) >= 2, (self.opened, self.closed)


def forget_offline_noise(page: Page) -> None:
    """Drop the console errors of failed reconnect attempts while offline; any other problem stays."""
    page.problems[:] = [p for p in page.problems if not any(n in p for n in OFFLINE_NOISE)]  # type: ignore[attr-defined]


def bubble_text(page: Page) -> str | None:
    """The live bubble's text now (``""`` before the first token), or None when there is none."""
    text = page.evaluate(
        "() => { const b = document.querySelector('[data-testid=streaming-message]'); return b ? b.innerText : null; }"
    )
    return None if text is None else ("" if text.strip() == THINKING else text)


def run_aside(job: Callable[[], Awaitable[None]], timeout: float = 60) -> None:
    """Run an async ``job`` (a raw websocket client) in a thread of its own: sync Playwright keeps
    an event loop running in this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, job()).result(timeout)


def browser_id(page: Page, wait_s: float = 15.0) -> str:
    """The page's ``hitl_browser_id`` (the id that claims this browser's threads from before
    accounts), as the app stored it in localStorage; "" if it is not there within ``wait_s`` seconds.

    The server gives it while the thread loads, and it reaches localStorage with a later update than
    the one that enables the composer, so it is waited for.
    """
    try:
        page.wait_for_function("() => !!localStorage.getItem('hitl_browser_id')", timeout=wait_s * 1000)
    except PlaywrightTimeoutError:
        return ""
    raw = page.evaluate("() => localStorage.getItem('hitl_browser_id')") or ""
    return json.loads(raw) if raw.startswith('"') else raw


def test_socket_drop_mid_stream_catches_up_to_the_exact_text(page: Page, paced_server: AppServer):
    """C18, a reply: 2 s offline while 200 words stream at 40 words/s."""
    sockets = Sockets(page)
    open_new_thread(page, paced_server)
    send(page, "stream 200 words")
    expected = normalize(demo_words(200))
    seen: list[str] = []
    deadline = time.monotonic() + 10
    while len(bubble_text(page) or "") < 40:
        assert time.monotonic() < deadline, "the reply did not start streaming"
        page.wait_for_timeout(20)
    page.context.set_offline(True)
    offline_at = len(bubble_text(page) or "")
    page.wait_for_timeout(2000)
    page.context.set_offline(False)
    sockets.assert_dropped_and_reconnected()
    # back online: the bubble catches up past what it had, and is always a prefix of the reply
    caught_up = False
    deadline = time.monotonic() + 30
    while (text := bubble_text(page)) is not None:
        assert time.monotonic() < deadline, "still streaming after 30 s"
        seen.append(normalize(text))
        caught_up = caught_up or len(text) > offline_at + 200
        page.wait_for_timeout(25)
    assert caught_up, f"the live text did not catch up after the reconnect (had {offline_at} chars offline)"
    bad = [s for s in seen if not expected.startswith(s)]
    assert not bad, f"live text that is not a prefix of the reply (doubled or lost words): {bad[-1][-200:]!r}"
    wait_idle(page)
    expect(messages(page, "user")).to_have_count(1)
    expect(messages(page, "assistant")).to_have_count(1)
    assert normalize(messages(page, "assistant").first.inner_text()) == expected
    forget_offline_noise(page)


def test_card_raised_while_the_socket_is_down_shows_after_reconnect(page: Page, paced_server: AppServer):
    """C18, a card: the thread gets a message and its card (sent from the same browser's other
    connection) while this page is offline; back online, the page shows both without a reload."""
    sockets = Sockets(page)
    url = open_new_thread(page, paced_server)
    tid = url.rsplit("/", 1)[1]
    owner = browser_id(page)
    assert owner, "the page has no browser id"
    session = sign_in_browser(page, paced_server).token  # the same account's other connection
    page.context.set_offline(True)

    async def raise_card() -> None:
        async with WsClient(paced_server.url, browser_id=owner, session=session) as other:
            await other.load_thread(tid)
            await other.send("email dora@example.com about the drop: while offline")
            await other.wait_review(1)

    run_aside(raise_card)
    page.wait_for_timeout(500)
    page.context.set_offline(False)
    expect(cards(page)).to_have_count(1)
    sockets.assert_dropped_and_reconnected()
    expect(page.locator("[data-testid=card-arg][data-key=to]")).to_contain_text("dora@example.com")
    expect(messages(page, "user")).to_have_count(1)
    expect(page.get_by_test_id("composer-input")).to_be_disabled()
    shoot(page, "c18-card-after-reconnect")
    page.get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_count(1)
    wait_idle(page)
    assert app_db.outbox(paced_server.data_dir).count("dora@example.com") == 1
    forget_offline_noise(page)


def duplicate(page: Page) -> Page:
    """Duplicate the tab as Chromium does: a new tab in the same browser, at the same address,
    starting with a copy of this tab's sessionStorage (so with its Reflex client token)."""
    storage = page.evaluate("() => JSON.stringify(Object.assign({}, sessionStorage))")
    copy = page.context.new_page()
    copy.problems = page.problems  # type: ignore[attr-defined]
    copy.set_default_timeout(20_000)
    copy.add_init_script(
        "(() => { if (sessionStorage.getItem('__copied')) return; const s = JSON.parse(" + json.dumps(storage) + ");"
        " for (const k in s) sessionStorage.setItem(k, s[k]);"
        " sessionStorage.setItem('__copied', s.token || ''); })()"
    )
    copy.goto(page.url)
    return copy


def token(page: Page) -> str:
    """The tab's Reflex client token (sessionStorage ``token``)."""
    return page.evaluate("() => sessionStorage.getItem('token')") or ""


def test_duplicated_tab_gets_its_own_session_and_no_update_crosses(page: Page, paced_server: AppServer):
    """C19: the copy opens another thread and streams; the original approves its pending card."""
    url = open_new_thread(page, paced_server)
    mails_before = app_db.outbox(paced_server.data_dir).count("erin@example.com")  # the server is shared by files
    send(page, "email erin@example.com about the copy: one mail")
    expect(cards(page)).to_have_count(1)
    first_token = token(page)

    copy = duplicate(page)
    assert copy.url == url
    assert copy.evaluate("() => sessionStorage.getItem('__copied')") == first_token, "the copy did not start with the token"
    expect(cards(copy)).to_have_count(1)  # the copy shows the same thread to begin with
    deadline = time.monotonic() + 10
    while token(copy) == first_token and time.monotonic() < deadline:
        copy.wait_for_timeout(50)
    assert token(copy) not in ("", first_token), "the copy kept the original tab's client token"
    assert token(page) == first_token

    copy.get_by_test_id("new-thread").click()
    copy.wait_for_url(lambda u: u != url and "/thread/" in u)
    expect(copy.get_by_test_id("composer-input")).to_be_enabled()
    send(copy, "stream 120 words")
    expect(copy.get_by_test_id("streaming-message")).to_have_count(1)

    # meanwhile the original decides its card
    page.get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    for _ in range(40):  # while both run, neither tab shows the other's run
        assert url == page.url and copy.url != url
        assert "erin@example.com" not in (bubble_text(copy) or ""), "the original's reply streamed into the copy"
        assert "quick brown fox" not in (bubble_text(page) or ""), "the copy's reply streamed into the original"
        page.wait_for_timeout(50)
    wait_idle(page)
    wait_idle(copy)

    expect(messages(page, "tool")).to_have_count(1)
    expect(messages(page, "user")).to_have_text("email erin@example.com about the copy: one mail")
    expect(messages(page, "assistant").last).to_contain_text("erin@example.com")
    expect(messages(copy, "user")).to_have_count(1)
    expect(messages(copy, "user")).to_have_text("stream 120 words")
    expect(messages(copy, "tool")).to_have_count(0)
    expect(cards(copy)).to_have_count(0)
    assert normalize(messages(copy, "assistant").first.inner_text()) == normalize(demo_words(120))
    assert app_db.outbox(paced_server.data_dir).count("erin@example.com") == mails_before + 1
    shoot(copy, "c19-copy-own-thread")
    shoot(page, "c19-original-resumed")
