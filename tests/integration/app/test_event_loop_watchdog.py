"""A watchdog on the server's event loop: while one tab loads, sends, stops, decides (with a slow
approved tool) and reloads, the server keeps answering everyone else.

Anything that blocks the event loop (a sync graph or checkpointer call, a sync database query, a
sleep) on that path shows up here: while the reply streams and while the approved ``SLOW_TOOL_S``
tool runs, a ``/ping`` and a second tab's page load must each be answered from start to end inside
that phase (the busy tab waits for them, however long a loaded machine makes them; the phases last
20 s and ``SLOW_TOOL_S``), and no answer may take as long as the slow tool (what a loop blocked by
the tool would cost).
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app

SLOW_TOOL_S = 10
"""How long the approved tool runs (seconds); a loop blocked by it would hold every answer this long."""
DEADLINE_S = 60.0
"""Generous deadline (seconds) for the answers a phase waits for."""

Answer = tuple[float, float]
"""(monotonic start, monotonic end) of one ping or page load."""


def _ping(url: str) -> Answer:
    start = time.monotonic()
    with urllib.request.urlopen(f"{url}/ping", timeout=30) as r:
        r.read()
    return start, time.monotonic()


async def _pinger(url: str, stop: asyncio.Event, out: list[Answer]) -> None:
    while not stop.is_set():
        out.append(await asyncio.to_thread(_ping, url))
        await asyncio.sleep(0.1)


async def _other_tab(url: str, stop: asyncio.Event, out: list[Answer]) -> None:
    """A second tab that reloads its own thread over and over (hydrate + on_load each time)."""
    async with WsClient(url) as c:
        tid = str(uuid.uuid4())
        while not stop.is_set():
            start = time.monotonic()
            await c.load_thread(tid, timeout=30)
            out.append((start, time.monotonic()))
            await asyncio.sleep(0.1)


def _settled(c: WsClient) -> bool:
    return c.chat.get("streaming") is False and c.chat.get("status") in ("idle", "failed", "incomplete", "review")


def _has_tool_row(c: WsClient) -> bool:
    return any(m["role"] == "tool" for m in c.chat.get("messages") or [])


async def _answered_during(since: float, lasts_s: float, pings: list[Answer], loads: list[Answer], what: str) -> None:
    """Wait until a ping and a page load, both started after ``since`` (the start of a phase that
    lasts at least ``lasts_s`` seconds), have been answered; both must have ended inside the phase."""
    deadline = time.monotonic() + DEADLINE_S
    while not (any(s > since for s, _ in pings) and any(s > since for s, _ in loads)):
        assert time.monotonic() < deadline, f"no ping and page load answered {what} within {DEADLINE_S} s"
        await asyncio.sleep(0.05)
    ends = [next(e for s, e in answers if s > since) for answers in (pings, loads)]
    assert max(ends) < since + lasts_s, f"the server answered only once the phase ({what}) was over"


async def _busy_tab(url: str, pings: list[Answer], loads: list[Answer]) -> None:
    """Load, send, Stop, decide (approving a slow tool) and reload: the path that must never block."""
    bid, tid = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(url, browser_id=bid) as c:
        await c.load_thread(tid)
        await c.send("stream 2000 words")
        await c.wait_for(lambda c: c.chat.get("streaming") is True, what="stream started")
        await _answered_during(time.monotonic(), 20, pings, loads, "while the reply (20 s of text) streams")
        await c.call("ChatState.stop")
        await c.wait_for(_settled, timeout=DEADLINE_S, what="stopped")
        await c.send(f"wait {SLOW_TOOL_S} seconds")
        await c.wait_review(1)
        await c.call("ReviewState.choose", index=0, kind="approve")
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: c.chat.get("streaming") is True, what="resumed")
        await _answered_during(time.monotonic(), SLOW_TOOL_S, pings, loads, "while the approved tool runs")
        token = c.token
    async with WsClient(url, browser_id=bid, token=token) as again:  # the reload, mid-tool
        await again.load_thread(tid)
        await again.wait_for(
            lambda c: _settled(c) and c.chat["status"] == "idle" and _has_tool_row(c), timeout=DEADLINE_S
        )


@pytest.mark.slow
async def test_the_event_loop_keeps_answering_through_load_send_stop_decide_and_reload(tmp_path: Path):
    with AppServer(tmp_path / "app", env={"HITL_DEMO_WPS": "100"}, frontend=False) as server:
        stop = asyncio.Event()
        pings: list[Answer] = []
        loads: list[Answer] = []
        watchers = [
            asyncio.create_task(_pinger(server.url, stop, pings)), asyncio.create_task(_other_tab(server.url, stop, loads))
        ]
        try:
            await asyncio.wait_for(_busy_tab(server.url, pings, loads), timeout=4 * DEADLINE_S)
        finally:
            stop.set()
            await asyncio.gather(*watchers)
    took = [end - start for start, end in pings + loads]
    assert max(took) < SLOW_TOOL_S, f"an answer waited as long as the slow tool: {max(took):.2f} s"
    print(f"pings: n={len(pings)}; other tab loads: n={len(loads)}; slowest answer {max(took):.3f}s")
