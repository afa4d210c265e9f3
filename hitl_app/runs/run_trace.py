"""Runs and reviews as OpenTelemetry spans (``hitl_app.traces``; nothing when tracing is off).

A run is a span ``hitl.run`` (``run_span``) with its thread, id and kind, and its outcome when it
ends. A review is a span ``hitl.review``, written when the run that resumes it starts
(``review_span``): it begins when the review was raised, its parent is the run that raised it (the
``traceparent`` kept on its "requested" row, so it joins that run's trace even when another
worker or a later process resumes it), and its events, at their own times, are ``review.raised``,
one ``review.decision`` per recorded decision (who: account id, name and role; which decision type;
which card), the deadline's (``review.expired`` or ``review.escalated``, from its claim), the
desk's other events (``review.submitted``, ``review.undone``) and ``review.resumed``. The
resuming run is the review span's child, so one trace reads: run, review, run.

Every review span ends with a status and ``hitl.review.outcome``: ``decided`` (OK: people decided
it), ``expired`` (ERROR: its deadline passed and the policy rejected it) or ``abandoned`` (ERROR:
it was never resumed, its interrupt gone from the thread when the sweeper looked:
``abandoned_review_span``, with a ``review.abandoned`` event saying why).
"""

# Tested by: tests/integration/threads/test_review_traces.py - spans of real runs with an in-memory exporter

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Literal

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app import traces
from hitl_app.store.desk import events_for, get_expiry
from hitl_app.store.drafts import read_drafts
from hitl_app.store.tables import ReviewRequestRecord, utcnow

log = logging.getLogger("hitl_app.threads")


def _ns(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)


Ending = Literal["resumed", "abandoned"]
"""How a review's span ends: its run resumed (by people or its deadline), or never (abandoned)."""


async def review_span(
    *, session: Callable[[], AsyncSession], interrupt_id: str, ending: Ending = "resumed", note: str = ""
) -> Context | None:
    """Write the span of the review ``interrupt_id`` as it ends now (see the module docstring):
    ``resumed`` (its run goes on) or ``abandoned`` (never resumed; ``note`` says why). Returns the
    context to start the resuming run in, None when the review has no "requested" row (nothing is
    written then)."""
    async with session() as s:
        request = await s.get(ReviewRequestRecord, interrupt_id)
        if request is None:
            return None
        drafts = await read_drafts(session=s, interrupt_id=interrupt_id)
        events = await events_for(session=s, interrupt_ids=[interrupt_id])
        expiry = await get_expiry(session=s, interrupt_id=interrupt_id)
    start = _ns(request.requested_at)
    span = traces.tracer().start_span(
        "hitl.review", context=traces.context_of(request.trace_parent), start_time=start,
        attributes={"hitl.thread_id": request.thread_id, "hitl.interrupt_id": interrupt_id,
                    "hitl.tools": request.tool_names, "hitl.cards": request.action_count},
    )
    span.add_event("review.raised", {"hitl.tools": request.tool_names}, timestamp=start)
    for d in drafts:
        span.add_event("review.decision", {
            "hitl.card": d.action_index, "hitl.decision.type": d.decision_type, "hitl.reviewer.id": d.account_id,
            "hitl.reviewer.name": d.display_name, "hitl.reviewer.role": d.role,
        }, timestamp=_ns(d.decided_at))
    expired = expiry is not None and expiry.status != "skipped" and expiry.outcome == "reject"
    if expiry is not None and expiry.status != "skipped":  # the deadline's claim, written before its resume
        span.add_event("review.expired" if expiry.outcome == "reject" else "review.escalated", {
            "hitl.deadline": expiry.due_at.isoformat(), "hitl.outcome": expiry.outcome,
            "hitl.escalate_to": expiry.escalate_to or "",
        }, timestamp=_ns(expiry.claimed_at))
    for e in events:
        if e.kind not in ("expired", "escalated"):  # the expiry row says those (its event may come later)
            span.add_event(f"review.{e.kind}", {"hitl.by": e.display_name, "hitl.note": e.note}, timestamp=_ns(e.at))
    now = _ns(utcnow())
    if ending == "abandoned":
        span.add_event("review.abandoned", {"hitl.note": note}, timestamp=now)
        span.set_attribute("hitl.review.outcome", "abandoned")
        span.set_status(Status(StatusCode.ERROR, f"abandoned: {note}" if note else "abandoned"))
    else:
        span.add_event("review.resumed", timestamp=now)
        span.set_attribute("hitl.review.outcome", "expired" if expired else "decided")
        span.set_status(Status(StatusCode.ERROR, "expired: rejected by its deadline") if expired else Status(StatusCode.OK))
    span.end(end_time=now)
    return trace.set_span_in_context(span)


async def abandoned_review_span(*, session: Callable[[], AsyncSession], interrupt_id: str, note: str) -> None:
    """End the span of a review that will never be resumed (``note``: why, e.g. "the review was no
    longer pending"); nothing when tracing is off; a failure is logged, never raised."""
    if not traces.enabled():
        return
    try:
        await review_span(session=session, interrupt_id=interrupt_id, ending="abandoned", note=note)
    except Exception:  # noqa: BLE001 - a span is never worth the sweeper's pass
        log.exception("review span not written interrupt=%s", interrupt_id)


@asynccontextmanager
async def run_span(
    *, session: Callable[[], AsyncSession], thread_id: str, run_id: str, run_kind: str, claimed: str | None
) -> AsyncIterator[None]:
    """The run as the current span for its whole life (a resume: first its review's span, the
    run's parent); yields at once, doing nothing, when tracing is off."""
    if not traces.enabled():
        yield
        return
    try:
        parent = await review_span(session=session, interrupt_id=claimed) if claimed else None
    except Exception:  # noqa: BLE001 - a span is never worth a run
        log.exception("review span not written interrupt=%s", claimed)
        parent = None
    attributes = {"hitl.thread_id": thread_id, "hitl.run_id": run_id, "hitl.run.kind": run_kind}
    with traces.tracer().start_as_current_span("hitl.run", context=parent, attributes=attributes):
        yield
