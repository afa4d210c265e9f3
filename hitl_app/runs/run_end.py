"""What a run's end writes down: the thread's index rows and the webhooks' ``run.finished``.

``record_end`` is called by ``RunDriver._settle`` under the thread lock, after the tabs were told.
A failure is logged, never raised: the run's result is already shown and the index lags (the next
load or run writes it).
"""

# Tested by: tests/integration/webhooks/test_webhook_delivery.py - run.finished and review.waiting delivered

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app import traces
from hitl_app.review.audience import Audience, audience_of
from hitl_app.review.rights import ToolRights
from hitl_app.store.review_requests import record_review_waiting
from hitl_app.store.threads import touch_thread
from hitl_app.store.webhooks import enqueue
from hitl_app.threads.views import ThreadView

log = logging.getLogger("hitl_app.threads")


@dataclass(frozen=True)
class RunEnd:
    """What the end asks of the review signal: ``announce`` (a review waits) and its ``audience``
    (None: every open inbox re-reads)."""

    announce: bool
    audience: Audience | None = None


async def write_index(
    *, session: Callable[[], AsyncSession], thread_id: str, view: ThreadView, rights: Mapping[str, ToolRights]
) -> RunEnd:
    """The thread's index rows after a run (a new review's two rows in one transaction, with the
    run's ``traceparent`` when tracing), and whom a waiting review concerns."""
    audience: Audience | None = None
    try:
        async with session() as s:
            if view.pending is None:
                await touch_thread(session=s, thread_id=thread_id, owner=None, pending_review=False)
            else:
                parent = traces.traceparent()  # the run's span: the review's span joins its trace
                waiting = await record_review_waiting(session=s, review=view.pending, trace_parent=parent)
                # new or shown first by a tab (which wrote its row): whom the policy names; an
                # escalated one goes to every inbox (its role is the deadline's, not the policy's)
                if not waiting.escalated:
                    names = [a.name for a in view.pending.action_requests]
                    audience = audience_of(names, rights, waiting.owner or "")
    except Exception:  # noqa: BLE001 - the run's result is already shown; the index lags
        log.exception("thread index not updated after run thread=%s", thread_id)
    return RunEnd(announce=view.pending is not None, audience=audience)


async def queue_finished(
    *, session: Callable[[], AsyncSession], thread_id: str, run_id: str, outcome: str, view: ThreadView | None
) -> None:
    """The webhooks' ``run.finished`` (``{"thread_id", "run_id", "outcome", "pending_review"}``),
    queued in the database for the endpoints that want it."""
    pending = view.pending.interrupt_id if view is not None and view.pending is not None else None
    data = {"thread_id": thread_id, "run_id": run_id, "outcome": outcome, "pending_review": pending}
    try:
        async with session() as s:
            if await enqueue(session=s, event_type="run.finished", data=data):
                await s.commit()
    except Exception:  # noqa: BLE001 - the run's result is already shown
        log.exception("run.finished not queued thread=%s run=%s", thread_id, run_id)
