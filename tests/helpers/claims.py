"""The review claim as the app writes it, for store contract tests: the drafts that decide the last
card and the audit rows, in one commit (``hitl_app.store.drafts.write_drafts(claim=...)``, the
function ``hitl_app.desk.decide``, the sweeper and the grant check call)."""

from __future__ import annotations

from datetime import datetime

from hitl_app.review import AnyDecision, PendingReview
from hitl_app.review.types import decision_payload
from hitl_app.store.drafts import NewDraft, next_seq, read_drafts, write_drafts
from hitl_app.store.review_requests import requested_at
from hitl_app.store.reviews import DecidedBy, audit_rows
from hitl_app.store.tables import utcnow


async def claim(session, review: PendingReview, decisions: list[AnyDecision], reviewer: str,
                now: datetime | None = None) -> None:
    """Write ``reviewer``'s ``decisions`` (one per card) as the review's claim; raises
    ``AlreadyDecided`` when it was claimed already."""
    now = now or utcnow()
    requested = await requested_at(session=session, interrupt_id=review.interrupt_id, now=now)
    rows = audit_rows(review=review, decisions=decisions, who=[DecidedBy(reviewer)] * len(decisions),
                      requested=requested, now=now)
    drafts = [NewDraft(i, "7", reviewer, "reviewer", decision_payload(d)) for i, d in enumerate(decisions)]
    read = await read_drafts(session=session, interrupt_id=review.interrupt_id)
    await write_drafts(session=session, thread_id=review.thread_id, interrupt_id=review.interrupt_id,
                       base_seq=next_seq(read), drafts=drafts, claim=rows, now=now)
