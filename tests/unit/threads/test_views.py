"""Thread status read from a checkpoint snapshot: a stopped run is incomplete, not failed."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from langchain_core.messages import HumanMessage

from hitl_app.threads.views import thread_view_from_snapshot


def _snapshot(error):
    task = SimpleNamespace(error=error, interrupts=())
    return SimpleNamespace(
        values={"messages": [HumanMessage("stream 600 words", id="h1")]},
        config={"configurable": {"thread_id": "t", "checkpoint_id": "c1"}},
        interrupts=(),
        tasks=(task,),
        next=("model",),
    )


def test_a_stopped_run_is_incomplete_not_a_failure():
    view = thread_view_from_snapshot("t", _snapshot(asyncio.CancelledError()))
    assert view.status == "incomplete"
    assert view.error is None


def test_a_run_that_raised_is_failed_with_a_log_id_not_its_details():
    view = thread_view_from_snapshot("t", _snapshot(RuntimeError("model broke at db.internal")))
    assert view.status == "failed"
    assert view.error is not None and "log id" in view.error and "db.internal" not in view.error


def test_a_non_hitl_interrupt_is_a_readable_notice_not_a_crash():
    """A custom agent's own ``interrupt(...)`` (or a malformed HITL value) cannot be answered with
    cards: the thread says what the agent asked instead of raising inside ``load``."""
    for value in ("Which colour should the button be?", {"action_requests": [{"args": {}}]}):
        snap = _snapshot(None)
        snap.tasks = ()
        snap.interrupts = (SimpleNamespace(id="i1", value=value),)
        view = thread_view_from_snapshot("t", snap)
        assert view.pending is None and view.status == "failed"
        assert view.error is not None and "cannot answer" in view.error
        assert not isinstance(value, str) or value in view.error
