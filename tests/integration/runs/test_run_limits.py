"""Run limits: each one hit, with its plain message, and the thread still usable (pairing holds).

The real demo agent on a real checkpointer (SQLite and PostgreSQL); limits are set small.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent_loader import validators_for
from hitl_app.desk.cards import BrowserPerson
from hitl_app.runs.limits import RunLimits
from hitl_app.runs.tool_work import TOOL_WORK
from hitl_app.store.db import create_schema, make_engines
from hitl_app.threads.service import ThreadError, ThreadService
from tests.helpers.pairing import assert_pairing

OWNER = "owner-a"


@contextlib.asynccontextmanager
async def limited(database_url, workspace, saver, *, wps: float = 0, **limits):
    engines = make_engines(database_url)
    create_schema(engines)
    bundle = build_demo_agent(model=DemoChatModel(words_per_second=wps), workspace=workspace, checkpointer=saver)
    try:
        yield ThreadService(
            bundle.graph, engines, validators_for(bundle.tools_by_name), flush_interval=0.01, limits=RunLimits(**limits)
        )
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


def tid() -> str:
    return str(uuid.uuid4())


async def run(svc, t, text, owner=OWNER):
    """Start a turn, return its ``ended`` event."""
    await svc.start_turn(t, text, owner=owner)
    events = [e async for e in svc.subscribe(t)]
    await svc.wait(t)
    return events[-1] if events else None


async def usable(svc, t, owner=OWNER):
    """Pairing holds and a next turn is answered."""
    assert_pairing((await svc.graph.aget_state(svc.config(t))).values["messages"])
    await svc.start_turn(t, "stream 3 words", owner=owner)
    await svc.wait(t)
    view = await svc.load(t, owner=owner)
    assert view.status == "idle" and view.messages[-1].role == "assistant", (view.status, view.error)
    assert_pairing((await svc.graph.aget_state(svc.config(t))).values["messages"])


async def test_wall_clock_limit_stops_a_long_reply(database_url, workspace, saver):
    async with limited(database_url, workspace, saver, wps=40, run_timeout_s=1) as svc:
        t = tid()
        ended = await run(svc, t, "stream 400 words")
        assert ended.outcome == "failed"
        assert ended.error.startswith("The run took longer than 1 second; it was stopped.")
        await usable(svc, t)


async def test_wall_clock_limit_cancels_a_running_tool_and_answers_it(database_url, workspace, saver):
    async with limited(database_url, workspace, saver, run_timeout_s=2) as svc:
        t = tid()
        await run(svc, t, "wait 4 seconds")
        view = await svc.load(t, owner=OWNER)
        await svc.submit_review(t, view.pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "r"))
        ended = [e async for e in svc.subscribe(t)][-1]
        await svc.wait(t)
        assert ended.outcome == "failed" and "took longer than 2 seconds" in ended.error
        view = await svc.load(t, owner=OWNER)
        [row] = [m for m in view.messages if m.role == "tool"]
        assert row.tool_name == "slow_task" and row.text.startswith("Cancelled: the run reached its time limit")
        assert row.outcome == "cancelled"  # grey, not a red "error": the tool did not fail
        assert await TOOL_WORK.wait_idle(t, 10)
        await usable(svc, t)


def reply_steps(graph) -> int:
    """Graph steps of one plain reply: the before_agent hooks, the model and its model hooks.

    Read from the graph, since every middleware hook is a step of its own (with the built-in
    middlewares a plain reply is 6 steps, and a tool round 6 more).
    """
    hooks = (".before_agent", ".before_model", ".after_model", ".after_agent")
    return 1 + sum(1 for name in graph.nodes if name.endswith(hooks))


async def test_step_limit_stops_the_agent_and_answers_its_open_calls(database_url, workspace, saver):
    probe = build_demo_agent(model=DemoChatModel(words_per_second=0), workspace=workspace, checkpointer=None)
    steps = reply_steps(probe.graph)
    assert steps >= 4, sorted(probe.graph.nodes)
    async with limited(database_url, workspace, saver, max_steps=steps) as svc:
        t = tid()
        ended = await run(svc, t, "read records")  # the model and its hooks fill the budget: the tool is one step more
        assert ended.outcome == "failed"
        assert ended.error == f"The agent took more than {steps} steps; it was stopped. Send a new message to go on."
        view = await svc.load(t, owner=OWNER)
        [row] = [m for m in view.messages if m.role == "tool"]
        assert row.tool_name == "read_data" and row.text.startswith("Not run: the agent reached its step limit")
        assert row.outcome == "cancelled"
        await usable(svc, t)  # a plain reply fits the same budget


async def test_concurrent_runs_per_owner(database_url, workspace, saver):
    async with limited(database_url, workspace, saver, wps=40, runs_per_owner=2) as svc:
        a, b, c = tid(), tid(), tid()
        await svc.start_turn(a, "stream 400 words", owner=OWNER)
        await svc.start_turn(b, "stream 400 words", owner=OWNER)
        with pytest.raises(ThreadError, match="You already have 2 runs going, the limit") as info:
            await svc.start_turn(c, "stream 3 words", owner=OWNER)
        assert info.value.code == "limited"
        await svc.start_turn(c, "stream 3 words", owner="someone-else")  # another owner is not affected
        await svc.wait(c)
        await svc.stop(a, owner=OWNER)
        await usable(svc, c, owner="someone-else")
        await svc.start_turn(tid(), "stream 3 words", owner=OWNER)
        await svc.stop(b, owner=OWNER)
        await usable(svc, a)


async def test_messages_per_minute_per_owner(database_url, workspace, saver):
    async with limited(database_url, workspace, saver, messages_per_minute=3) as svc:
        t = tid()
        for n in range(3):
            await run(svc, t, f"stream {n + 1} words")
        with pytest.raises(ThreadError, match=r"You sent 3 messages in the last minute, the limit. Wait \d+ s"):
            await svc.start_turn(t, "one more", owner=OWNER)
        await run(svc, tid(), "stream 2 words", owner="someone-else")
        later = svc.runs.counter._clock() + 61
        svc.runs.counter._clock = lambda: later
        await usable(svc, t)


async def test_worker_run_limit_refuses_before_a_review_is_claimed(database_url, workspace, saver):
    async with limited(database_url, workspace, saver, wps=40, max_runs=1) as svc:
        r, s = tid(), tid()
        await run(svc, r, "email bob@example.com about x: y")
        pending = (await svc.load(r, owner=OWNER)).pending
        await svc.start_turn(s, "stream 400 words", owner="someone-else")
        with pytest.raises(ThreadError, match="The server is busy with other runs right now"):
            await svc.submit_review(r, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "r"))
        await svc.stop(s, owner="someone-else")
        # nothing was claimed: the same review is still answerable
        await svc.submit_review(r, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "r"))
        await svc.wait(r)
        assert (await svc.load(r, owner=OWNER)).status == "idle"
        await usable(svc, r)
        assert svc.runs.counter.live == 0 and not svc.runs.counter.by_owner


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_thousand_threads_touched_leave_no_per_thread_entries(database_url, workspace, saver):
    """Per-process maps keyed by thread id are pruned: locks, run tasks, run owners, bus entries."""
    async with limited(database_url, workspace, saver, messages_per_minute=1000, max_runs=1000) as svc:
        ids = [tid() for _ in range(1000)]
        for t in ids[:20]:
            await run(svc, t, "stream 2 words")
        for t in ids:
            with pytest.raises(ThreadError):
                await svc.continue_run(t, owner=OWNER)  # takes and releases the thread's lock
        await asyncio.sleep(0)
        bus = svc.bus
        left = {
            "locks": len(svc._locks), "tasks": len(svc.runs.tasks), "settling": len(svc.runs.settling),
            "owners": len(svc.runs._owners), "runs by owner": len(svc.runs.counter.by_owner),
            "tool work": len(TOOL_WORK), "bus": len(bus._channels) + len(bus._leases) + len(bus._generation) + len(bus._waiters),
        }
        assert left == dict.fromkeys(left, 0), left
