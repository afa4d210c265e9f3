"""Checkpoint growth: the bytes a turn adds stay flat over a long thread; older threads still load.

``messages`` is stored as deltas (``hitl_app/agent/state.py``). Before, every checkpoint copied the
whole history: with a ~2 KB message per turn the increments were about 23 KB, 90 KB, 411 KB and
812 KB at turns 1, 5, 25 and 50 (quadratic in total).
"""

from __future__ import annotations

import sqlite3
import uuid

import pytest
from langchain.agents.middleware.types import AgentState
from langgraph.types import Command

from hitl_app.agent import build
from hitl_app.threads.views import thread_view_from_snapshot
from tests.helpers.pairing import assert_pairing


def stored_bytes(path) -> int:
    """Bytes of checkpoints (blob + metadata) and pending writes in the SQLite checkpointer."""
    with sqlite3.connect(path) as conn:
        checkpoints = conn.execute(
            "SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints"
        ).fetchone()[0]
        writes = conn.execute("SELECT coalesce(sum(length(value)), 0) FROM writes").fetchone()[0]
    return checkpoints + writes


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_bytes_per_turn_stay_flat_over_50_turns(make_agent, database_url):
    graph = make_agent().graph
    path = database_url.removeprefix("sqlite:///")
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    increments, before = [], 0
    for n in range(1, 51):
        await graph.ainvoke({"messages": [{"role": "user", "content": f"turn {n}: " + "x" * 2000}]}, config)
        after = stored_bytes(path)
        increments.append(after - before)
        before = after
    turn = {n: increments[n - 1] for n in (1, 5, 25, 49, 50)}
    print("bytes added per turn:", turn)
    assert turn[25] <= 1.5 * turn[5] and turn[49] <= 1.5 * turn[5], turn
    # one full copy of the history every SNAPSHOT_EVERY updates (two per turn): at most one turn in 50
    assert sum(1 for b in increments[5:] if b > 1.5 * turn[5]) <= 1, increments
    state = await graph.aget_state(config)
    assert len(state.values["messages"]) == 100
    assert state.values["messages"][-2].content.startswith("turn 50: ")


async def test_thread_written_before_deltas_still_loads_and_resumes(make_agent, monkeypatch):
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    with monkeypatch.context() as patch:
        patch.setattr(build, "DeltaAgentState", AgentState)  # the schema threads were written with
        old = make_agent().graph
        assert type(old.channels["messages"]).__name__ == "BinaryOperatorAggregate"
        await old.ainvoke({"messages": [{"role": "user", "content": "stream 3 words"}]}, config)
        await old.ainvoke({"messages": [{"role": "user", "content": "email bob@example.com about old: thread"}]}, config)
    new = make_agent().graph
    assert type(new.channels["messages"]).__name__ == "DeltaChannel"
    view = thread_view_from_snapshot("t", await new.aget_state(config))
    assert [m.role for m in view.messages] == ["user", "assistant", "user", "assistant"]
    assert view.status == "review" and view.pending.action_requests[0].args["to"] == "bob@example.com"
    await new.ainvoke(Command(resume={view.pending.interrupt_id: {"decisions": [{"type": "approve"}]}}), config)
    await new.ainvoke({"messages": [{"role": "user", "content": "stream 2 words"}]}, config)
    messages = (await new.aget_state(config)).values["messages"]
    assert [m.type for m in messages] == ["human", "ai", "human", "ai", "tool", "ai", "human", "ai"]
    assert_pairing(messages)
