"""Faults against real server processes: SIGKILL and restart, a locked database, model/tool errors.

Each test starts the app (prod mode) on its own ``HITL_DATA_DIR``, drives it over the websocket
(``WsClient``) and, for the kill tests, starts a second server on the same data folder. What a
user would notice is asserted: the thread and its card come back, deciding works, each tool's
effect happened once (outbox / tool_effects), errors are shown with a retry, pairing holds.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app


def user_count(c: WsClient) -> int:
    return sum(1 for m in c.chat.get("messages") or [] if m["role"] == "user")


def settled(c: WsClient) -> bool:
    return c.chat.get("streaming") is False and c.chat.get("status") in ("idle", "failed", "incomplete", "review")


async def checkpoint_pairing(data_dir: Path, thread_id: str) -> None:
    """Open the server's checkpoints in this process and assert pairing (no pending calls)."""
    from hitl_app.agent.checkpoint import open_checkpointer
    from tests.helpers.pairing import assert_pairing

    async with open_checkpointer(f"sqlite:///{data_dir / 'hitl.sqlite'}") as saver:
        tup = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
        assert tup is not None
        assert_pairing(tup.checkpoint["channel_values"].get("messages", []))


@pytest.mark.slow
async def test_sigkill_while_review_pending_then_restart(tmp_path: Path):
    data = tmp_path / "app"
    bid, tid = str(uuid.uuid4()), str(uuid.uuid4())
    first = AppServer(data, frontend=False).start()
    try:
        async with WsClient(first.url, browser_id=bid) as c:
            await c.load_thread(tid)
            await c.send("email nia@example.com about crash: survive it")
            cards = await c.wait_review(1)
            interrupt_id = c.review["interrupt_id"]
    finally:
        first.stop(signal.SIGKILL)
    second = AppServer(data, frontend=False).start()
    try:
        async with WsClient(second.url, browser_id=bid) as c:
            await c.load_thread(tid)
            again = await c.wait_review(1)
            assert again[0]["tool_name"] == cards[0]["tool_name"] == "send_email"
            assert again[0]["args"] == cards[0]["args"]
            assert c.review["interrupt_id"] == interrupt_id
            await c.call("ReviewState.choose", index=0, kind="approve")
            await c.call("ReviewState.submit")
            await c.wait_for(
                lambda c: any(
                    m["role"] == "tool" for m in c.chat.get("messages") or []
                ) and settled(c) and c.chat["status"] == "idle"
            )
        assert app_db.outbox(data).count("nia@example.com") == 1
        assert len(app_db.audit_rows(data, tid)) == 1
    finally:
        second.stop()
    await checkpoint_pairing(data, tid)


@pytest.mark.slow
async def test_sigkill_while_approved_tool_runs_then_continue_replays_once(tmp_path: Path):
    data = tmp_path / "app"
    bid, tid = str(uuid.uuid4()), str(uuid.uuid4())
    first = AppServer(data, frontend=False).start()
    try:
        async with WsClient(first.url, browser_id=bid) as c:
            await c.load_thread(tid)
            await c.send("email oli@example.com about batch: once and wait 5 seconds")
            await c.wait_review(2)
            await c.call("ReviewState.approve_all")
            await c.wait_for(lambda c: c.chat.get("streaming") is True)
            deadline = time.monotonic() + 10
            while app_db.outbox(data).count("oli@example.com") == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert app_db.outbox(data).count("oli@example.com") == 1
            await asyncio.sleep(0.5)  # slow_task is sleeping now
    finally:
        first.stop(signal.SIGKILL)
    assert app_db.tool_effects(data, "slow_task") == 0, "the kill must land during the slow tool"
    second = AppServer(data, frontend=False).start()
    try:
        async with WsClient(second.url, browser_id=bid) as c:
            await c.load_thread(tid)
            await c.wait_for(lambda c: c.chat.get("status") == "incomplete" and c.chat.get("can_continue") is True)
            assert "stopped before it finished" in c.chat["notice"]
            assert not c.review.get("cards")
            await c.call("ChatState.continue_run")
            await c.wait_for(
                lambda c: sum(
                    1 for m in c.chat.get("messages") or [] if m["role"] == "tool"
                ) == 2 and settled(c) and c.chat["status"] == "idle",
                timeout=30
            )
            outcomes = [m["outcome"] for m in c.chat["messages"] if m["role"] == "tool"]
            assert outcomes == ["executed", "executed"]
        assert app_db.outbox(data).count("oli@example.com") == 1, "the replay must not send the mail again"
        assert app_db.tool_effects(data, "send_email") == 1 and app_db.tool_effects(data, "slow_task") == 1
        assert len(app_db.audit_rows(data, tid)) == 2
    finally:
        second.stop()
    await checkpoint_pairing(data, tid)


@pytest.mark.slow
async def test_model_error_tool_error_and_locked_database(tmp_path: Path):
    """One server, three faults on one thread; after each the thread is usable."""
    data = tmp_path / "app"
    server = AppServer(data, frontend=False).start()
    try:
        async with WsClient(server.url) as c:
            tid = str(uuid.uuid4())
            await c.load_thread(tid)

            # model error mid-stream: visible error, Retry offered, the words so far kept and marked
            await c.send("fail after 5 words")
            await c.wait_for(lambda c: c.chat.get("status") == "failed" and c.chat.get("streaming") is False)
            assert "RuntimeError" in c.chat["run_error"] or c.chat["run_error"]
            assert c.chat["can_continue"] is True
            # the words that streamed before the error stay, as one reply marked as cut off
            assert [m["role"] for m in c.chat["messages"]] == ["user", "assistant"]
            mark = c.mark()
            await c.call("ChatState.continue_run")  # the retry runs (and fails the same way, cleanly)
            await c.wait_for(lambda c: c.seen_since(mark, "ChatState", "streaming", lambda v: v is True))
            await c.wait_for(
                lambda c: c.chat.get("status") == "failed" and c.chat.get("streaming") is False and c.chat.get("run_error")
            )
            # Retry took the cut-off words away before asking again: still one reply, not two
            assert [m["role"] for m in c.chat["messages"]] == ["user", "assistant"]

            # a new message after a failed run works
            await c.send("stream 4 words")
            await c.wait_for(lambda c: user_count(c) == 2 and c.chat.get("status") == "idle" and c.chat.get("streaming") is False)

            # a tool that raises: an error row on the thread, the turn completes
            await c.send("delete notes/nothing-here.txt")
            await c.wait_review(1)
            await c.call("ReviewState.choose", index=0, kind="approve")
            await c.call("ReviewState.submit")
            await c.wait_for(
                lambda c: any(
                    m["role"] == "tool" for m in c.chat.get("messages") or []
                ) and settled(c) and c.chat["status"] == "idle"
            )
            tool = [m for m in c.chat["messages"] if m["role"] == "tool"][-1]
            assert tool["outcome"] == "error" and "File not found" in tool["result"]

            # the app database locked by another process: a clear message, nothing lost, usable after
            locked = threading.Event()
            release = threading.Event()

            def hold_lock() -> None:
                con = sqlite3.connect(data / "hitl.sqlite", timeout=10)
                con.execute("BEGIN EXCLUSIVE")
                locked.set()
                release.wait(20)
                con.rollback()
                con.close()

            holder = threading.Thread(target=hold_lock)
            holder.start()
            assert locked.wait(10)
            try:
                await c.send("email pam@example.com about locked: db")
                await c.wait_for(lambda c: "database is busy or unreachable" in c.chat.get("composer_error", ""), timeout=30)
                assert c.connected
            finally:
                release.set()
                holder.join()
            assert user_count(c) == 3, "the refused message is not shown as sent"
            await c.send("email pam@example.com about locked: db")
            await c.wait_review(1)
            await c.call("ReviewState.choose", index=0, kind="approve")
            await c.call("ReviewState.submit")
            await c.wait_for(
                lambda c: sum(
                    1 for m in c.chat.get("messages") or [] if m["role"] == "tool"
                ) == 2 and settled(c) and c.chat["status"] == "idle"
            )
        assert app_db.outbox(data).count("pam@example.com") == 1
    finally:
        server.stop()
    await checkpoint_pairing(data, tid)
