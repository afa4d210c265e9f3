"""PostgreSQL with a small pool: one slow thread does not hold back the others, and connections the
server dropped are replaced before use.

Twenty tabs on twenty threads stream at once while a twenty-first runs an approved ``SLOW_TOOL_S``
tool; every stream must show its first text and finish while the slow tool still runs (a stream
starved of a connection would wait for the slow tool's end). Then the
server ends every idle connection of the app (``pg_terminate_backend``, as a restart of
PostgreSQL or an idle timeout in a proxy would); the next turns (a stream, a card approved) must
work on the first try, and pairing holds in every thread.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.pairing import assert_pairing
from tests.helpers.postgres import fresh_database
from tests.helpers.ws_client import WsClient

pytestmark = [pytest.mark.app, pytest.mark.postgres]

STREAMS = 20
SLOW_TOOL_S = 20
"""How long the approved slow tool runs (seconds): the twenty streams (about a second each at 60
words a second) have this long to start and finish, even on a loaded machine."""


def _settled(c: WsClient) -> bool:
    return c.chat.get("streaming") is False and c.chat.get("status") in ("idle", "failed", "incomplete", "review")


def _done_ok(c: WsClient, n_messages: int) -> bool:
    return len(c.chat.get("messages") or []) >= n_messages and _settled(c) and c.chat["status"] == "idle"


async def _tab(url: str) -> WsClient:
    """A signed-in tab on a new thread (signing in hashes a password: done before the clock starts)."""
    c = await WsClient(url).connect()
    await c.load_thread(str(uuid.uuid4()))
    return c


async def _stream(c: WsClient, words: int) -> tuple[WsClient, float, float]:
    """Send ``stream <words> words`` in tab ``c``; returns (tab, monotonic time of the first text,
    monotonic time the stream finished)."""
    await c.send(f"stream {words} words")
    await c.wait_for(lambda c: c.chat.get("streaming") is True, what="stream started")
    await c.wait_for(
        lambda c: any("hitlLive(" in str(e.get("payload")) and " " in str(e.get("payload")) for e in c.events), what="first text"
    )
    first_at = time.monotonic()
    await c.wait_for(lambda c: _done_ok(c, 2), timeout=60, what="stream finished")
    assert len(c.chat["messages"][-1]["text"].split()) == words
    return c, first_at, time.monotonic()


async def _slow_tool(url: str, started: asyncio.Event) -> tuple[WsClient, float]:
    c = await WsClient(url).connect()
    await c.load_thread(str(uuid.uuid4()))
    await c.send(f"wait {SLOW_TOOL_S} seconds")
    await c.wait_review(1)
    await c.call("ReviewState.choose", index=0, kind="approve")
    await c.call("ReviewState.submit")
    await c.wait_for(lambda c: c.chat.get("streaming") is True, what="resumed")
    t0 = time.monotonic()
    started.set()
    await c.wait_for(lambda c: any(m["role"] == "tool" for m in c.chat.get("messages") or []), timeout=60)
    tool_done = time.monotonic()
    assert tool_done - t0 >= SLOW_TOOL_S - 0.5, f"the slow tool really ran for {SLOW_TOOL_S} s"
    await c.wait_for(lambda c: _done_ok(c, 3), timeout=60)
    return c, tool_done


def _terminate_idle(db_url: str, *, at_least: int = 2, quiet_s: float = 1.0, deadline_s: float = 60.0) -> int:
    """End every connection of the app's pool that has sat idle for ``quiet_s`` seconds or more
    (as a PostgreSQL restart or a proxy's idle timeout would), once there are ``at_least`` of them
    (waited for, up to ``deadline_s``), and wait until they are gone; returns how many were ended.

    Only connections idle for a while are ended: one a request has just taken from the pool (its
    check-before-use just ran) is busy, and ending it mid-request is not the fault this test is
    about (the after-run reads of 21 tabs may still be going on when the runs are over)."""
    name = db_url.rsplit("/", 1)[1]
    with psycopg.connect(db_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        end = time.monotonic() + deadline_s
        while True:
            pids = [r[0] for r in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND state = 'idle' AND pid <> pg_backend_pid()"
                " AND state_change < now() - make_interval(secs => %s)", (name, quiet_s)
            ).fetchall()]
            if len(pids) >= at_least or time.monotonic() > end:
                break
            time.sleep(0.1)
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):
            if not admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)).fetchall():
                break
            time.sleep(0.05)
    return len(pids)


async def _pairing(db_url: str, thread_ids: list[str]) -> None:
    from hitl_app.agent.checkpoint import open_checkpointer

    async with open_checkpointer(db_url, pool_size=2) as saver:
        for tid in thread_ids:
            tup = await saver.aget_tuple({"configurable": {"thread_id": tid}})
            assert tup is not None
            assert_pairing(tup.checkpoint["channel_values"].get("messages", []))


async def test_twenty_streams_beside_a_slow_tool_then_dropped_connections(tmp_path: Path):
    with fresh_database() as db_url:
        env = {"DATABASE_URL": db_url, "HITL_DEMO_WPS": "60", "HITL_DB_POOL_SIZE": "4"}
        with AppServer(tmp_path / "app", env=env, frontend=False) as server:
            tabs = await asyncio.gather(*[_tab(server.url) for _ in range(STREAMS)])
            started = asyncio.Event()
            slow = asyncio.create_task(_slow_tool(server.url, started))
            await asyncio.wait_for(started.wait(), 60)
            streams = await asyncio.gather(*[_stream(tab, 60) for tab in tabs])
            slow_tab, tool_done = await slow
            print(
                f"the last first text came {tool_done - max(f for _, f, _ in streams):.1f} s and the last stream"
                f" finished {tool_done - max(a for _, _, a in streams):.1f} s before the slow tool ended"
            )
            assert all(first < tool_done for _, first, _ in streams), "a stream's first text waited for the slow tool"
            assert all(done < tool_done for _, _, done in streams), "a stream waited for the slow tool"

            ended = _terminate_idle(db_url)
            assert ended >= 2, f"the app kept {ended} idle connections"
            tabs = [c for c, _, _ in streams[:3]]
            await tabs[0].send("stream 30 words")
            await tabs[1].send("email pool@example.com about dropped: connections")
            await tabs[0].wait_for(lambda c: _done_ok(c, 4) and len(c.chat["messages"][-1]["text"].split()) == 30, timeout=30)
            await tabs[1].wait_review(1)
            await tabs[1].call("ReviewState.choose", index=0, kind="approve")
            await tabs[1].call("ReviewState.submit")
            await tabs[1].wait_for(
                lambda c: any(m["role"] == "tool" for m in c.chat.get("messages") or []) and _done_ok(c, 5), timeout=30
            )
            for c in [slow_tab, *[c for c, _, _ in streams]]:
                assert not c.chat.get("run_error") and not c.chat.get("composer_error") and not c.chat.get("load_error"), c.chat
            ids = [c.chat["tid"] for c in [slow_tab, *[c for c, _, _ in streams]]]
            for c in [slow_tab, *[c for c, _, _ in streams]]:
                await c.close()
        log = server.log_path.read_text(errors="replace")
        assert "terminating connection" not in log, "a dropped connection reached a request"
        await _pairing(db_url, ids)
