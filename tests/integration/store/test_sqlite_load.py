"""SQLite under load from real server processes: no "database is locked" reaches a user, no write
is lost.

Ten threads at once each write a draft (an auto-approved ``write_file``) and then stream 200 words,
while three email cards are approved at the same moment and the audit page is refreshed over and
over; then the same with the threads spread over two server processes on the same data folder.
Every tab must end idle with its full reply, every draft file and every mail must exist once, and
no text the tabs received may mention a locked or busy database.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.pairing import assert_pairing
from tests.helpers.ws_client import SESSION, WsClient

pytestmark = pytest.mark.app

AUDIT = f"{SESSION}.hitl_app___ui___state___audit____audit_state"
WORDS = 200
ENV = {"HITL_DEMO_WPS": "150"}
_BAD = ("is locked", "database is busy", "database was busy", "busy or unreachable", "internal error")


def _settled(c: WsClient) -> bool:
    return c.chat.get("streaming") is False and c.chat.get("status") in ("idle", "failed", "incomplete", "review")


async def _turn(c: WsClient, text: str, *, timeout: float = 90) -> None:
    """Send ``text`` and wait until the run it started ended (a new assistant message, settled)."""
    before = len(c.chat.get("messages") or [])
    await c.send(text)
    await c.wait_for(
        lambda c: len(c.chat.get("messages") or []) > before and c.chat["messages"][-1]["role"] == "assistant" and _settled(c),
        timeout=timeout,
        what=f"reply to {text!r}",
    )


async def _writer(url: str, i: int, tag: str) -> WsClient:
    c = await WsClient(url).connect()
    await c.load_thread(str(uuid.uuid4()))
    await _turn(c, f"write drafts/{tag}-{i}.md: draft number {i} of {tag}")
    await _turn(c, f"stream {WORDS} words")
    assert len(c.chat["messages"][-1]["text"].split()) == WORDS
    return c


async def _mailer(url: str, j: int, tag: str, ready: list[int], go: asyncio.Event) -> WsClient:
    c = await WsClient(url).connect()
    await c.load_thread(str(uuid.uuid4()))
    await c.send(f"email {tag}{j}@example.com about load: mail {j}")
    await c.wait_review(1, timeout=90)
    await c.call("ReviewState.choose", index=0, kind="approve")
    ready.append(j)
    if len(ready) == 3:
        go.set()
    await go.wait()
    await c.call("ReviewState.submit")  # the three submissions go out at the same moment
    await c.wait_for(
        lambda c: any(m["role"] == "tool" for m in c.chat.get("messages") or []) and _settled(c) and c.chat["status"] == "idle",
        timeout=90,
        what="approved mail sent",
    )
    return c


async def _auditor(url: str, done: asyncio.Event) -> tuple[WsClient, int]:
    """Refresh the audit page every 100 ms until ``done``; returns the client and how many loads."""
    c = await WsClient(url).connect()
    await c.hydrate("/audit")
    loads = 0
    while not done.is_set():
        await c.call(f"{AUDIT}.load")
        loads += 1
        await asyncio.sleep(0.1)
    await c.settle()
    return c, loads


async def _load(urls: list[str], data: Path, tag: str) -> None:
    ready: list[int] = []
    go, done = asyncio.Event(), asyncio.Event()
    audit = asyncio.create_task(_auditor(urls[-1], done))
    try:
        jobs = [_writer(urls[i % len(urls)], i, tag) for i in range(10)]
        jobs += [_mailer(urls[j % len(urls)], j, tag, ready, go) for j in range(3)]
        clients = await asyncio.wait_for(asyncio.gather(*jobs), timeout=240)
    finally:
        done.set()
        auditor, loads = await audit
    try:
        assert loads > 10
        for c in [*clients, auditor]:
            seen = repr(c.log).lower() + repr(c.events).lower()
            assert not [
                w for w in _BAD if w in seen
            ], f"a tab was shown a database error: {c.chat.get('run_error') or c.chat.get('composer_error')}"
            assert c.chat.get("status") in (None, "idle"), c.chat.get("run_error")
        assert auditor.state.get(AUDIT, {}).get("error", "") == ""
        # no lost write: every draft on disk, every mail once, every effect recorded
        drafts = sorted(p.name for p in data.rglob(f"{tag}-*.md"))
        assert drafts == sorted(f"{tag}-{i}.md" for i in range(10)), drafts
        mails = [to for to in app_db.outbox(data) if to.startswith(tag)]
        assert sorted(mails) == [f"{tag}{j}@example.com" for j in range(3)]
        assert app_db.query(data, "SELECT count(*) FROM tool_effects")[0][0] >= 13
        await _pairing(data, [c.chat["tid"] for c in clients])
    finally:
        for c in [*clients, auditor]:
            await c.close()


async def _pairing(data: Path, thread_ids: list[str]) -> None:
    from hitl_app.agent.checkpoint import open_checkpointer

    async with open_checkpointer(f"sqlite:///{data / 'hitl.sqlite'}") as saver:
        for tid in thread_ids:
            tup = await saver.aget_tuple({"configurable": {"thread_id": tid}})
            assert tup is not None
            assert_pairing(tup.checkpoint["channel_values"].get("messages", []))


def _locked_in_log(*servers: AppServer) -> int:
    return sum(s.log_path.read_text(errors="replace").count("database is locked") for s in servers)


@pytest.mark.slow
async def test_ten_threads_three_approvals_and_audit_on_one_sqlite_file(tmp_path: Path):
    data = tmp_path / "app"
    with AppServer(data, env=ENV, frontend=False) as server:
        await _load([server.url], data, "one")
        assert _locked_in_log(server) == 0


@pytest.mark.slow
async def test_the_same_load_from_two_server_processes_on_one_file(tmp_path: Path):
    data = tmp_path / "app"
    first = AppServer(data, env=ENV, log_path=tmp_path / "first.log", frontend=False).start()
    try:
        second = AppServer(data, env=ENV, log_path=tmp_path / "second.log", frontend=False).start()
        try:
            await _load([first.url, second.url], data, "two")
            assert _locked_in_log(first, second) == 0
        finally:
            second.stop()
    finally:
        first.stop()
