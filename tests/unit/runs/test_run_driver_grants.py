"""The run driver's answer to a review grants cover (``RunDriver._answer_review``), on a fake graph:
the step budget left to the resumed graph, a review never answered twice, Stop while asking, and
the thread read once when people decide (``_read_back`` reuses it)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.types import Command, Interrupt

from hitl_app.bus.local import LocalRunBus
from hitl_app.review.types import ApproveDecision
from hitl_app.runs.limits import RunLimits
from hitl_app.runs.run_driver import RunDriver

TID = "6f1c3e1a-5b2d-4c7e-9f00-1a2b3c4d5e6f"


class FakeGraph:
    """A graph paused on one HITL review (``refund_payment``) at checkpoint step ``step``."""

    def __init__(self, step: int) -> None:
        call = {"name": "refund_payment", "args": {"order_id": "A-1"}, "id": "call-1"}
        value = {
            "action_requests": [{"name": "refund_payment", "args": {"order_id": "A-1"}, "description": ""}],
            "review_configs": [{"action_name": "refund_payment", "allowed_decisions": ["approve", "reject"]}],
        }
        self.reads = 0
        self.snapshot = SimpleNamespace(
            values={"messages": [AIMessage(content="", tool_calls=[call])]}, interrupts=(Interrupt(value=value, id="i-1"),),
            metadata={"step": step}, config={"configurable": {"checkpoint_id": "c-1"}}, tasks=(), next=("x",),
        )

    async def aget_state(self, config: Any) -> Any:
        self.reads += 1
        return self.snapshot


def driver(step: int, hook) -> RunDriver:
    return RunDriver(graph=FakeGraph(step), bus=LocalRunBus(), session=None,  # type: ignore[arg-type]
                     lock_for=lambda t: asyncio.Lock(), limits=RunLimits(max_steps=20), on_interrupt=hook)


async def test_covered_review_resumes_with_the_steps_the_run_has_left():
    asked = []

    async def hook(review, owner):
        asked.append((review.interrupt_id, [a.name for a in review.action_requests]))
        return [ApproveDecision(type="approve")]

    claims: set[str] = set()
    inp, config, paused = await driver(12, hook)._answer_review(TID, {"recursion_limit": 20}, 2, claims)
    assert paused is None, "the run goes on: its end is read back as usual"
    assert isinstance(inp, Command) and inp.resume == {"i-1": {"decisions": [{"type": "approve"}]}}
    assert config["recursion_limit"] == 10, "20 steps per run, 10 used since the run started"
    assert asked == [("i-1", ["refund_payment"])] and claims == {"i-1"}
    # the same review again (its resume did not go through): never answered twice
    again, _, _ = await driver(12, hook)._answer_review(TID, {"recursion_limit": 20}, 2, claims)
    assert again is None and len(asked) == 1


async def test_no_steps_left_or_no_grant_leaves_the_review_to_people():
    async def hook(review, owner):
        return None

    async def never(review, owner):
        raise AssertionError("a run out of steps must not be answered")

    claims: set[str] = set()
    assert (await driver(30, never)._answer_review(TID, {}, 10, claims))[0] is None
    assert (await driver(12, hook)._answer_review(TID, {}, 2, claims))[0] is None
    assert claims == set(), "nothing claimed: nothing to release"


async def test_stop_while_the_grants_are_checked_marks_the_review_for_release():
    async def stopped(review, owner):
        raise asyncio.CancelledError

    claims: set[str] = set()
    with pytest.raises(asyncio.CancelledError):
        await driver(12, stopped)._answer_review(TID, {}, 2, claims)
    assert claims == {"i-1"}, "its claim, if written, is released when the run's end is read back"


async def test_a_review_left_to_people_is_read_once_and_announced_as_read():
    async def hook(review, owner):
        return None

    runs = driver(12, hook)
    inp, _, paused = await runs._answer_review(TID, {}, 2, set())
    assert inp is None and paused is not None and paused.pending is not None
    view, outcome, error = await runs._read_back(TID, "interrupted", None, set(), paused)
    assert (outcome, error) == ("interrupted", None)
    assert view is not None and view.pending is not None and view.pending.interrupt_id == "i-1"
    assert [a.name for a in view.pending.action_requests] == ["refund_payment"]
    assert runs.graph.reads == 1, "the checkpoint is not read a second time before the card is announced"
