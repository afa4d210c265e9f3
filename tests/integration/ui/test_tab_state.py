"""A browser tab's server-side state against the real app: one watcher per tab, and a failed resume.

The app runs in prod mode (``AppServer``) with ``HITL_TEST_HOOKS=1``, which mounts a read-only
probe counting the ``ChatState.watch`` tasks a tab holds in the server process, and with a support
agent whose every resume fails inside the review step (``tests.fixtures.agents:resume_fails``).
"""

from __future__ import annotations

import asyncio
import json
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
    )
    s.start()
    yield s
    s.stop()


async def live_watchers(server: AppServer, token: str) -> int:
    """How many ``watch`` tasks of tab ``token`` the server process is running now."""

    def get() -> int:
        with urllib.request.urlopen(f"{server.url}/_test/watchers?token={token}", timeout=5) as r:
            return int(json.load(r)["watchers"])

    return await asyncio.to_thread(get)


async def settle_at(server: AppServer, token: str, expected: int, timeout: float = 30) -> list[int]:
    """Poll the probe until it reads ``expected`` four times in a row; returns every reading.

    Raises AssertionError with the readings when it does not settle there within ``timeout`` s.
    """
    readings: list[int] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        readings.append(await live_watchers(server, token))
        if readings[-4:] == [expected] * 4:
            return readings
        await asyncio.sleep(0.5)
    raise AssertionError(f"tab {token} did not settle at {expected} watcher(s): readings {readings}")


async def test_repeated_watch_events_leave_one_watcher_per_tab(server: AppServer):
    async with WsClient(server.url) as c:
        await c.load_thread(str(uuid.uuid4()))
        await settle_at(server, c.token, 1)  # the page's own watcher
        for _ in range(300):  # a forged page repeating the event, each one after the last went idle
            await c.call("ChatState.watch")
            await asyncio.sleep(0.02)
        # a later event's answer proves the server has read (and started) all 300 before it
        await c.set_reviewer("probe")
        await c.wait_for(lambda c: c.session.get("reviewer") == "probe", what="marker event answered")
        await settle_at(server, c.token, 1)

        # the surviving watcher still follows the thread: a turn streams and settles
        await c.send("look up order A-1001")
        await c.wait_for(lambda c: any(m["role"] == "assistant" for m in c.chat.get("messages") or []), what="reply")
        await c.wait_idle()
        await settle_at(server, c.token, 1)


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
