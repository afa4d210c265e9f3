"""A review's "requested" row (``review_requests``): written once per interrupt when the review is
first shown or raised, with its cards, and the ``review.waiting`` webhook event that goes with it.

Keyword-only functions taking an ``AsyncSession``; the writers commit. The claim and the audit rows
that decide the review are ``hitl_app.store.reviews``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.types import PendingReview
from hitl_app.store.desk_tables import ReviewExpiry
from hitl_app.store.tables import ReviewRequestRecord, ThreadRecord, utcnow
from hitl_app.store.webhooks import enqueue


def review_cards(review: PendingReview) -> list[dict[str, Any]]:
    """The review's cards as stored in ``ReviewRequestRecord.cards``:
    ``[{"name", "args", "allowed_decisions"}]``, one per action request, in order."""
    return [
        {"name": a.name, "args": dict(a.args), "allowed_decisions": list(c.allowed_decisions)}
        for a, c in zip(review.action_requests, review.review_configs, strict=True)
    ]


def waiting_event(review: PendingReview) -> dict[str, Any]:
    """The ``review.waiting`` webhook event's data: thread, interrupt, tools (in card order)."""
    return {"thread_id": review.thread_id, "interrupt_id": review.interrupt_id,
            "tools": [a.name for a in review.action_requests]}


async def record_review_requested(*, session: AsyncSession, review: PendingReview) -> datetime:
    """Write the review's "requested" row once per interrupt, however often it is read; commits.

    Returns the row's ``requested_at`` (aware UTC: when the review was first shown). A row an older
    version wrote without ``cards`` gets them now (its time stays)."""
    existing = await session.get(ReviewRequestRecord, review.interrupt_id)
    if existing is not None:
        if existing.cards is None:
            existing.cards = review_cards(review)
            session.add(existing)
            await session.commit()
        return existing.requested_at
    row = ReviewRequestRecord(
        interrupt_id=review.interrupt_id,
        thread_id=review.thread_id,
        action_count=len(review.action_requests),
        tool_names=",".join(a.name for a in review.action_requests)[:2000],
        cards=review_cards(review),
    )
    at = row.requested_at
    session.add(row)
    try:
        await session.flush()
        await enqueue(session=session, event_type="review.waiting", data=waiting_event(review))
        await session.commit()
    except IntegrityError:  # another reader wrote it first
        await session.rollback()
        other = await session.get(ReviewRequestRecord, review.interrupt_id)
        return other.requested_at if other is not None else at
    return at


@dataclass(frozen=True)
class ReviewWaiting:
    """What ``record_review_waiting`` found: ``new`` (its "requested" row was written now; False
    when a tab showing the review wrote it first), ``owner`` (the thread's owner as stored: account
    id as text, None when unknown) and ``escalated`` (a deadline escalated it: its audience is no
    longer the policy's reviewers)."""

    new: bool
    owner: str | None
    escalated: bool


async def record_review_waiting(
    *, session: AsyncSession, review: PendingReview, trace_parent: str | None = None
) -> ReviewWaiting:
    """The two index rows of a new review in one transaction (one commit): its "requested" row
    (as ``record_review_requested``) and its thread's row marked ``pending_review`` and touched
    (as ``touch_thread``; a thread without a row gets one, owner unknown). Commits.

    ``trace_parent``: the raising run's W3C ``traceparent`` (kept on the "requested" row, also one
    a tab wrote first). Returns a ``ReviewWaiting``, for the review signal's audience. Raises what
    the database raises (nothing is then written).
    """
    cards = review_cards(review)
    values: dict[str, Any] = {
        "interrupt_id": review.interrupt_id, "thread_id": review.thread_id, "requested_at": utcnow(),
        "action_count": len(review.action_requests),
        "tool_names": ",".join(a.name for a in review.action_requests)[:2000],
        "decided": False, "cards": cards, "trace_parent": trace_parent,
    }
    bind = session.bind
    is_postgres = bind is not None and bind.dialect.name == "postgresql"
    insert = (pg_insert if is_postgres else sqlite_insert)(ReviewRequestRecord).values(**values)
    inserted = insert.on_conflict_do_nothing(index_elements=["interrupt_id"]).returning(col(ReviewRequestRecord.interrupt_id))
    new = (await session.exec(inserted)).first() is not None
    if new:  # the webhooks' "review waiting", once per review (whichever writer made its row)
        await enqueue(session=session, event_type="review.waiting", data=waiting_event(review))
    escalated = False
    if not new:  # written before (a tab showed it first, or a re-read): an older row gets its cards
        existing = await session.get(ReviewRequestRecord, review.interrupt_id)
        if existing is not None and (existing.cards is None or (trace_parent and not existing.trace_parent)):
            existing.cards = existing.cards or cards
            existing.trace_parent = existing.trace_parent or trace_parent
            session.add(existing)
        expiry = await session.get(ReviewExpiry, review.interrupt_id)
        escalated = expiry is not None and expiry.status == "escalated"
    touched = update(ThreadRecord).where(col(ThreadRecord.thread_id) == review.thread_id)
    owners = await session.exec(
        touched.values(updated_at=utcnow(), pending_review=True, review_lost_at=None).returning(col(ThreadRecord.owner))
    )
    found = owners.first()
    if found is None:
        session.add(ThreadRecord(thread_id=review.thread_id, owner=None, pending_review=True))
    await session.commit()
    return ReviewWaiting(new=new, owner=None if found is None else found[0], escalated=escalated)


async def requested_at(*, session: AsyncSession, interrupt_id: str, now: datetime) -> datetime:
    """When the review ``interrupt_id`` was first shown (``now`` when it has no "requested" row)."""
    request = await session.get(ReviewRequestRecord, interrupt_id)
    return request.requested_at if request is not None else now
