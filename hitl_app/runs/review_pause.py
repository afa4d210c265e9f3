"""A run that pauses for people: the hook that may answer the review at once (grants), and the
hook that reads ahead what every tab's card needs of a review left to people.

``RunDriver`` calls ``answer_review`` each time a pass of the graph ends on an interrupt, and
``PausedHook`` once when the run ends paused (before it announces its end).
"""

# Tested by: tests/unit/runs/test_run_driver_grants.py

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from hitl_app.review.types import AnyDecision, PendingReview
from hitl_app.runs.agent_runtime import AgentRuntime, resume_command, thread_config
from hitl_app.threads.views import ThreadView, thread_view_from_snapshot

InterruptHook = Callable[[PendingReview, str], Awaitable[list[AnyDecision] | None]]
"""``(pending review, the run's owner) -> decisions`` to resume with at once (their claim written),
or None: people decide (``hitl_app.desk.grant_check.InterruptGrants``)."""

PausedHook = Callable[[PendingReview, str], asyncio.Future[Any]]
"""``(review the run just raised, the run's owner) -> a started task`` reading what every tab's card
needs of it (``hitl_app.threads.review_reads.ReviewReads.start``): the run starts it before it
announces its end and waits for it (at most ``READ_AHEAD_WAIT_S``) before its index writes."""

READ_AHEAD_WAIT_S = 0.5
"""The longest (seconds) a paused run's index writes wait for its review's rows to be read."""


async def answer_review(
    graph: AgentRuntime, max_steps: int, on_interrupt: InterruptHook, owner: str, *,
    thread_id: str, config: dict[str, Any], start: int | None, claims: set[str],
) -> tuple[Any, dict[str, Any], ThreadView | None]:
    """Ask ``on_interrupt`` about the review the run just paused on.

    Returns ``(Command(resume=...), config, None)`` when it answered the pending review (its claim
    is written), else ``(None, config, view)``: people decide; ``view`` is the thread as read here,
    which the driver's read-back reuses (the run holds the lease and resumes no more). The resumed
    graph gets the steps this run has left of ``max_steps`` (``start``: the step it started at);
    with none left, people decide. A review this run already claimed (in ``claims``) is never
    answered again; an answered one's interrupt id is added to ``claims``.
    """
    snapshot = await graph.aget_state(thread_config(thread_id))
    view = thread_view_from_snapshot(thread_id, snapshot)
    review = view.pending
    if review is None or review.interrupt_id in claims:
        return None, config, view
    step = (snapshot.metadata or {}).get("step")
    left = max_steps - (step - start) if start is not None and isinstance(step, int) else max_steps
    if left <= 0:
        return None, config, view
    try:
        decisions = await on_interrupt(review, owner)
    except BaseException:
        claims.add(review.interrupt_id)  # stopped meanwhile: its claim, if written, is released
        raise
    if decisions is None:
        return None, config, view
    claims.add(review.interrupt_id)
    command = resume_command(review.interrupt_id, decisions)
    return command, {**config, "recursion_limit": left}, None
