"""A watchdog on the server's event loop: while one tab loads, sends, stops, decides (with a slow
approved tool) and reloads, the server keeps answering everyone else within a second.

Anything that blocks the event loop (a sync graph or checkpointer call, a sync database query, a
sleep) in any handler on that path shows up here as a ``/ping`` or a second tab's page load that
took longer than ``LIMIT_S``.
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

LIMIT_S = 1.0
"""Longest acceptable answer time for a ping or another tab's page load, in seconds."""


def _ping(url: str) -> float:
    start = time.monotonic()
    with urllib.request.urlopen(f"{url}/ping", timeout=30) as r:
        r.read()
    return time.monotonic() - start


async def _pinger(url: str, stop: asyncio.Event, out: list[float]) -> None:
    while not stop.is_set():
        out.append(await asyncio.to_thread(_ping, url))
        await asyncio.sleep(0.1)


async def _other_tab(url: str, stop: asyncio.Event, out: list[float]) -> None:
    """A second tab that reloads its own thread over and over (hydrate + on_load each time)."""
    async with WsClient(url) as c:
        tid = str(uuid.uuid4())
        while not stop.is_set():
            start = time.monotonic()
            await c.load_thread(tid, timeout=30)
            out.append(time.monotonic() - start)
            await asyncio.sleep(0.1)


def _settled(c: WsClient) -> bool:
    return c.chat.get("streaming") is False and c.chat.get("status") in ("idle", "failed", "incomplete", "review")


async def _busy_tab(url: str) -> None:
    """Load, send, Stop, decide (approving a 3 s tool) and reload: the path that must never block."""
    bid, tid = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(url, browser_id=bid) as c:
        await c.load_thread(tid)
        await c.send("stream 2000 words")
        await c.wait_for(lambda c: c.chat.get("streaming") is True, what="stream started")
        await asyncio.sleep(1.0)
        await c.call("ChatState.stop")
        await c.wait_for(_settled, timeout=10, what="stopped")
        await c.send("wait 3 seconds")
        await c.wait_review(1)
        await c.call("ReviewState.choose", index=0, kind="approve")
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: c.chat.get("streaming") is True, what="resumed")
        await asyncio.sleep(1.0)  # the approved tool is blocking its worker thread now
        token = c.token
    async with WsClient(url, browser_id=bid, token=token) as again:  # the reload, mid-tool
        await again.load_thread(tid)
        await again.wait_for(
            lambda c: _settled(c) and c.chat["status"] == "idle" and any(
                m["role"] == "tool" for m in c.chat.get("messages") or []
            ),
            timeout=30
        )


async def test_the_event_loop_keeps_answering_through_load_send_stop_decide_and_reload(tmp_path: Path):
    with AppServer(tmp_path / "app", env={"HITL_DEMO_WPS": "100"}) as server:
        stop = asyncio.Event()
        pings: list[float] = []
        loads: list[float] = []
        watchers = [
            asyncio.create_task(_pinger(server.url, stop, pings)), asyncio.create_task(_other_tab(server.url, stop, loads))
        ]
        try:
            await asyncio.wait_for(_busy_tab(server.url), timeout=90)
        finally:
            stop.set()
            await asyncio.gather(*watchers)
    assert len(pings) > 20 and len(loads) > 5
    slow = [round(t, 2) for t in pings + loads if t > LIMIT_S]
    assert not slow, f"the server stalled: answers took {slow} s (pings max {max(pings):.2f}, loads max {max(loads):.2f})"
    print(f"pings: n={len(pings)} max={max(pings):.3f}s; other tab loads: n={len(loads)} max={max(loads):.3f}s")
