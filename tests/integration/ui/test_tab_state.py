"""A browser tab's server-side state against the real app: one watcher per tab, and a failed resume.

The app runs in prod mode (``AppServer``) with ``HITL_TEST_HOOKS=1``, which mounts a read-only
probe counting the ``watch`` tasks (thread follower, inbox watcher) a tab holds in the server process, and with a support
agent whose every resume fails inside the review step (``tests.fixtures.agents:resume_fails``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app with the watcher probe and the resume-failing support agent."""
    s = AppServer(
        tmp_path_factory.mktemp("tab-state"),
        env={"HITL_TEST_HOOKS": "1", "HITL_AGENT": "tests.fixtures.agents:resume_fails"},
        frontend=False,
    )
    s.start()
    yield s
    s.stop()


async def live_watchers(server: AppServer, token: str) -> tuple[int, int, int]:
    """The ``watch`` tasks of tab ``token`` the server process is running now: (all, thread
    followers ``ChatState.watch``, inbox watchers ``InboxState.watch``)."""

    def get() -> tuple[int, int, int]:
        with urllib.request.urlopen(f"{server.url}/_test/watchers?token={token}", timeout=5) as r:
            body = json.load(r)
            return int(body["watchers"]), int(body["thread"]), int(body["inbox"])

    return await asyncio.to_thread(get)


ONE_EACH = (2, 1, 1)
"""A thread page's tab: one thread follower and one inbox watcher, nothing else (issue 9's fixed
cost per tab: each kind is one task per tab, and a new one retires the previous one)."""


async def settle_at(server: AppServer, token: str, expected: tuple[int, int, int], timeout: float = 30) -> list:
    """Poll the probe until it reads ``expected`` four times in a row; returns every reading.

    Raises AssertionError with the readings when it does not settle there within ``timeout`` s.
    """
    readings: list[tuple[int, int, int]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        readings.append(await live_watchers(server, token))
        if readings[-4:] == [expected] * 4:
            return readings
        await asyncio.sleep(0.5)
    raise AssertionError(f"tab {token} did not settle at {expected} watcher(s): readings {readings}")


@pytest.mark.slow
async def test_repeated_watch_events_leave_one_watcher_per_tab(server: AppServer):
    async with WsClient(server.url) as c:
        await c.load_thread(str(uuid.uuid4()))
        await settle_at(server, c.token, ONE_EACH)  # the page's own thread follower and inbox watcher
        for i in range(300):  # a forged page repeating both events, each one after the last went idle
            await c.call("InboxState.watch" if i % 3 == 0 else "ChatState.watch")
            await asyncio.sleep(0.02)
        # a later event's answer proves the server has read (and started) all 300 before it
        await c.set_reviewer("probe")
        await c.wait_for(lambda c: c.session.get("reviewer") == "probe", what="marker event answered")
        await settle_at(server, c.token, ONE_EACH)

        # the surviving watcher still follows the thread: a turn streams and settles
        await c.send("look up order A-1001")
        await c.wait_for(lambda c: any(m["role"] == "assistant" for m in c.chat.get("messages") or []), what="reply")
        await c.wait_idle()
        await settle_at(server, c.token, ONE_EACH)


async def test_send_right_after_the_page_opens_starts_the_run(server: AppServer):
    """A Send that reaches the server before the page's on_load (a fast click on a new tab, or
    just after opening another thread) starts the run in the page's thread at once."""
    async with WsClient(server.url) as c:
        first = str(uuid.uuid4())
        await c.hydrate(f"/thread/{first}", {"thread_id": first})
        await c.send("look up order A-1001")  # no wait for the on_load: the next event on the socket
        await c.wait_for(lambda c: c.chat.get("tid") == first and c.chat.get("streaming") is True, timeout=2,
                         what="the run started")
        await c.wait_for(lambda c: any(m["role"] == "assistant" for m in c.chat.get("messages") or []), what="reply")
        await c.wait_idle()
        # open another thread and send at once: the message goes to the thread on screen
        second = str(uuid.uuid4())
        await c.hydrate(f"/thread/{second}", {"thread_id": second})
        await c.send("look up order A-1002")
        await c.wait_for(lambda c: c.chat.get("tid") == second and c.chat.get("streaming") is True, timeout=2,
                         what="the run started in the second thread")
        await c.wait_idle()
        assert [m["text"] for m in c.chat["messages"] if m["role"] == "user"] == ["look up order A-1002"]
        await c.load_thread(first)
        assert [m["text"] for m in c.chat["messages"] if m["role"] == "user"] == ["look up order A-1001"]


async def test_failed_resume_keeps_the_review_pending_and_says_why_on_it(server: AppServer):
    tid, bid = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=bid) as c:
        await c.load_thread(tid)
        await c.send("refund A-1001 12.50")
        await c.wait_review(1)
        await c.call("ReviewState.choose", index=0, kind="approve")
        await c.wait_for(lambda c: c.review["cards"][0]["choice"] == "approve")
        await c.call("ReviewState.submit")
        await c.wait_for(
            lambda c: "failed" in c.review.get("review_error", "") or c.chat.get("status") == "failed",
            what="the failed resume reported",
        )
        await c.wait_idle()
        assert c.chat["status"] == "review", "the review is still pending: the thread must say so"
        # the server's sentence for an internal error (the exception text itself stays in its log)
        assert "failed" in c.review["review_error"]
        assert c.chat.get("run_error", "") == "", "no run error (with a Retry that cannot work) beside the card"
        assert c.chat.get("can_continue") is False
        assert [card["tool_name"] for card in c.review["cards"]] == ["refund_payment"]
        assert "Decide the pending review first" not in c.chat.get("composer_error", "")

    # a reload of the thread shows the same: the card, and why the last submission did not go through
    async with WsClient(server.url, browser_id=bid) as again:
        await again.load_thread(tid)
        await again.wait_review(1)
        assert again.chat["status"] == "review"
        assert "failed" in again.review.get("review_error", "")
        assert again.chat.get("run_error", "") == "" and again.chat.get("can_continue") is False


@pytest.mark.slow
async def test_the_disk_state_folder_is_not_scanned_for_expired_files_on_every_write(server: AppServer):
    """Reflex's disk state manager (the embedded default) lists and stats every state file after
    each pass of its write queue (2 s debounce); the app paces that scan to once a minute
    (``hitl_app.ui.state.disk``). A file made to look two hours old (expired: Reflex keeps a
    tab's state for an hour) stays while the tab's changes are written beside it."""
    assert server.app_root is not None
    states = server.app_root / ".states"
    async with WsClient(server.url) as c:
        await c.load_thread(str(uuid.uuid4()))
        await c.set_reviewer("first")
        await c.wait_for(lambda c: c.session.get("reviewer") == "first", what="first change answered")
        await asyncio.sleep(3)  # the write queue's first passes (and the startup scan) are behind us
        expired = states / ("0" * 32 + ".pkl")
        expired.write_bytes(b"not a state")
        old = time.time() - 7200
        os.utime(expired, (old, old))
        written_after = time.time()
        for i in range(4):  # a change every 1.5 s: the queue writes (and, unpaced, scans) after each
            await c.set_reviewer(f"r{i}")
            await c.wait_for(lambda c, i=i: c.session.get("reviewer") == f"r{i}", what=f"change {i} answered")
            await asyncio.sleep(1.5)
        await asyncio.sleep(2.5)
    fresh = [p for p in states.glob("*.pkl") if p != expired and p.stat().st_mtime >= written_after]
    assert fresh, "the tab's changes were not written to the states folder (the write queue did not run)"
    assert expired.exists(), "the states folder was scanned again within a minute of the last scan"
