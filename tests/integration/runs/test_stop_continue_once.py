"""Stop while an approved write runs, then Continue: the write happens at most once.

Stop cancels the run, but a synchronous tool keeps running in its worker thread until it returns.
Continue must not start that call again meanwhile (it waits, or refuses with a plain message),
and the thread must not show the call as executed twice.
"""

from __future__ import annotations

import asyncio
import re
import uuid

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent_loader import validators_for
from hitl_app.desk.cards import BrowserPerson
from hitl_app.runs.tool_work import TOOL_WORK
from hitl_app.store.db import create_schema, make_engines
from hitl_app.threads.service import ThreadError, ThreadService
from tests.helpers.demo_db import write_in_progress
from tests.helpers.pairing import assert_pairing

OWNER = "owner-a"
SLOW_UPDATE = (
    "sql: UPDATE records SET amount = amount + 1 WHERE (SELECT count(*) FROM (WITH RECURSIVE c(x) AS "
    "(SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 40000000) SELECT x FROM c)) > 0"
)


async def read_sql(svc, t, query) -> str:
    """Run an auto-approved SELECT through the agent; its tool result text."""
    await svc.start_turn(t, f"sql: {query}", owner=OWNER)
    await svc.wait(t)
    view = await svc.load(t, owner=OWNER)
    return [m for m in view.messages if m.role == "tool"][-1].text


async def until_the_tool_runs(svc, t, workspace, timeout_s=60.0) -> None:
    """Wait until the approved update itself works in its worker thread, while the run is live.
    ``TOOL_WORK.busy`` alone is not that: PostgreSQL's checkpointer loads the resume's writes in
    worker threads of the same run, before the call starts (a Stop then lands before anything ran)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not (TOOL_WORK.busy(t) and write_in_progress(workspace.space(OWNER).demo_db)):
        assert await svc.is_running(t), "the run ended before its approved update was seen running"
        assert asyncio.get_running_loop().time() < deadline, "the approved update never started"
        await asyncio.sleep(0.005)


async def until_started(action, timeout_s=240.0):
    """Call ``action`` until it is not refused as busy (the plain refusal is allowed).

    The deadline is generous: the stopped update is CPU-bound SQLite work in a worker thread, and on
    a loaded 2-core CI machine it ran past 30 s. Continue, refused as ``busy`` meanwhile, must start
    once it returns. A decided review still shown by the checkpoint in the moment its late result is
    written is refused as ``busy`` too (``RunControl._refuse_pending_review``, ``threads/run_control.py``),
    never as a review to decide."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        try:
            return await action()
        except ThreadError as exc:
            assert exc.code == "busy", exc
            assert asyncio.get_running_loop().time() < deadline, "still refused"
            await asyncio.sleep(0.2)


async def test_continue_after_stop_never_runs_the_approved_write_twice(database_url, workspace, saver):
    engines = make_engines(database_url)
    create_schema(engines)
    bundle = build_demo_agent(model=DemoChatModel(words_per_second=0), workspace=workspace, checkpointer=saver)
    svc = ThreadService(bundle.graph, engines, validators_for(bundle.tools_by_name), flush_interval=0.01)
    try:
        t = str(uuid.uuid4())
        rows = int(re.findall(r"\d+", await read_sql(svc, t, "SELECT count(*) FROM records"))[-1])
        before = float(re.findall(r"-?\d+(?:\.\d+)?", await read_sql(svc, t, "SELECT sum(amount) FROM records"))[-1])

        await svc.start_turn(t, SLOW_UPDATE, owner=OWNER)
        await svc.wait(t)
        pending = (await svc.load(t, owner=OWNER)).pending
        call_id = pending.tool_call_ids[0]
        await svc.submit_review(t, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "r"))
        await until_the_tool_runs(svc, t, workspace)  # Stop while the approved update works in its worker thread
        assert await svc.stop(t, owner=OWNER)

        await until_started(lambda: svc.continue_run(t, owner=OWNER))
        await svc.wait(t, 60)
        assert await TOOL_WORK.wait_idle(t, 60), "work left in a worker thread"  # before reading the sum
        after = float(
            re.findall(r"-?\d+(?:\.\d+)?", await until_started(lambda: read_sql(svc, t, "SELECT sum(amount) FROM records")))[-1]
        )
        assert round(after - before, 2) in (0, rows), f"+{after - before:g} for {rows} rows: the update ran twice"

        view = await svc.load(t, owner=OWNER)
        answers = [m for m in view.messages if m.role == "tool" and m.tool_call_id == call_id]
        assert len(answers) == 1, "one answer for the stopped call"
        # Stop answered the call; or, when Stop landed while the resume was being saved, Continue went
        # on with the decided review and the call ran (once): the answer then says what it did
        ran = round(after - before, 2) == rows
        said_cancelled = "Cancelled by the user" in answers[0].text
        assert said_cancelled is not ran, answers[0].text
        assert_pairing((await svc.graph.aget_state(svc.config(t))).values["messages"])
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()
