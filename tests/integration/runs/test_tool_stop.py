"""Stop through the ThreadService really stops a tool's SQL, and Continue after Stop does not run
the stopped write again (real demo agent, real checkpointer, real SQLite demo database)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import time
import uuid

import pytest

from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.agent_loader import validators_for
from hitl_app.desk.cards import BrowserPerson
from hitl_app.runs.tool_work import TOOL_WORK
from hitl_app.store.db import create_schema, make_engines
from hitl_app.threads.service import ThreadService
from tests.helpers.demo_db import write_in_progress

OWNER = "owner-a"
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
SLOW_UPDATE = (
    "UPDATE records SET amount = amount + 1 WHERE (SELECT count(*) FROM (WITH RECURSIVE c(x) AS "
    "(SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000000) SELECT x FROM c)) > 0"
)

STOPPED_S = 30.0
"""Generous deadline (seconds) for a stopped tool's worker thread to be free: half the SQL limit,
so only an interrupted statement meets it (a loaded machine only makes the wait longer)."""


async def until_the_tool_runs(
    svc: ThreadService, thread_id: str, timeout_s: float = 30.0, *, writing: DemoWorkspace | None = None
) -> None:
    """Wait until the run of ``thread_id`` has its tool's SQL running in a worker thread; with
    ``writing``, until that SQL holds the owner's demo database's write lock (an approved UPDATE:
    PostgreSQL's checkpointer also works in the run's worker threads, before the call starts)."""
    deadline = time.monotonic() + timeout_s
    while not (
        await svc.is_running(thread_id) and TOOL_WORK.busy(thread_id)
        and (writing is None or write_in_progress(writing.space(OWNER).demo_db))
    ):
        assert time.monotonic() < deadline, "the approved tool never started"
        await asyncio.sleep(0.02)


@pytest.fixture
def patient_workspace(tmp_path, database_url):
    """A workspace whose SQL time limit (60 s) is far above this test's statements, so only Stop stops them."""
    engines = make_engines(database_url)
    ws = DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite", limits=ToolLimits(sql_timeout_s=60))
    ws.ensure()
    yield ws
    engines.sync.dispose()


def totals(workspace) -> float:
    """Sum of amounts over the spaces this test's runs may use (the owner's, or the shared one)."""
    out = 0.0
    for owner in ("", OWNER):
        with sqlite3.connect(workspace.space(owner).demo_db) as conn:
            out += conn.execute("SELECT sum(amount) FROM records").fetchone()[0]
    return round(out, 2)


async def make_service(database_url, workspace, saver) -> ThreadService:
    from hitl_app.agent.build import build_demo_agent

    engines = make_engines(database_url)
    create_schema(engines)
    bundle = build_demo_agent(model=DemoChatModel(words_per_second=0), workspace=workspace, checkpointer=saver)
    return ThreadService(bundle.graph, engines, validators_for(bundle.tools_by_name), flush_interval=0.01)


async def test_stop_interrupts_an_auto_approved_endless_query(database_url, patient_workspace, saver):
    workspace = patient_workspace
    loop = asyncio.get_running_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=2))
    svc = await make_service(database_url, workspace, saver)
    t = str(uuid.uuid4())
    await svc.start_turn(t, f"sql: {ENDLESS}", owner=OWNER)
    await until_the_tool_runs(svc, t)
    assert await svc.stop(t, owner=OWNER)
    # the endless query would hold its worker thread for the whole 60 s SQL limit: both worker
    # threads free again well before that means Stop interrupted it
    assert await TOOL_WORK.wait_idle(t, STOPPED_S), "the query was left running in its worker thread"
    await asyncio.wait_for(asyncio.gather(*(loop.run_in_executor(None, time.sleep, 0.1) for _ in range(2))), STOPPED_S)
    await svc.engines.async_.dispose()
    svc.engines.sync.dispose()


async def test_stop_rolls_back_an_approved_write_and_continue_does_not_run_it(database_url, patient_workspace, saver):
    """Stop means stop: the running UPDATE is interrupted and rolled back, its call is answered
    "Cancelled by the user" (the issue's pairing rule, whichever path comes next), and Continue
    lets the agent go on without running the write: the total is unchanged, not changed once later."""
    workspace = patient_workspace
    svc = await make_service(database_url, workspace, saver)
    t = str(uuid.uuid4())
    before = totals(workspace)
    await svc.start_turn(t, f"sql: {SLOW_UPDATE}", owner=OWNER)
    await svc.wait(t)
    pending = (await svc.load(t, owner=OWNER)).pending
    await svc.submit_review(t, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "r"))
    await until_the_tool_runs(svc, t, writing=workspace)
    assert await svc.stop(t, owner=OWNER)
    assert await TOOL_WORK.wait_idle(t, STOPPED_S), "the UPDATE was left running in its worker thread"
    assert totals(workspace) == before
    await svc.continue_run(t, owner=OWNER)
    await svc.wait(t, timeout=60)
    assert totals(workspace) == before  # not applied by Continue either
    view = await svc.load(t, owner=OWNER)
    assert view.status == "idle"
    [row] = [m for m in view.messages if m.role == "tool" and m.tool_call_id == pending.tool_call_ids[0]]
    assert row.outcome == "cancelled" and row.text.startswith("Cancelled by the user (Stop)")  # neutral, not "error"
    assert view.messages[-1].role == "assistant" and "Cancelled by the user" in view.messages[-1].text
    await svc.engines.async_.dispose()
    svc.engines.sync.dispose()
