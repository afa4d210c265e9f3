"""The review desk's claims in the app database: deadline expiries, undo windows, review events.

Keyword-only functions taking an ``AsyncSession``; the writers commit.

Exactly once, across workers and restarts:

- a deadline: ``claim_expiry`` INSERTs the review's ``ReviewExpiry`` row (primary key
  ``interrupt_id``); of any number of sweepers one commits, the others get False. A claim left
  ``acting`` by a worker that died is taken over after ``stale_before`` (a conditional UPDATE).
- an undo window: ``take_due_resumes`` moves each due ``ScheduledResume`` from ``pending`` to
  ``running`` with ``UPDATE ... WHERE status = 'pending'``; ``undo_resume`` moves it to
  ``undone`` the same way (only before ``due_at``), so a review is either resumed once or undone.
"""

# Tested by: tests/integration/desk/test_review_desk.py - deadlines, undo windows and events on SQLite and PostgreSQL

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.audit_chain import append_facts, event_fact
from hitl_app.store.desk_tables import ReviewEvent, ReviewExpiry, ScheduledResume
from hitl_app.store.tables import ReviewRequestRecord, utcnow


async def open_reviews(*, session: AsyncSession, requested_before: datetime, limit: int = 200) -> list[ReviewRequestRecord]:
    """Undecided reviews raised before ``requested_before``, oldest first."""
    stmt = (
        select(ReviewRequestRecord)
        .where(col(ReviewRequestRecord.decided).is_(False), col(ReviewRequestRecord.requested_at) <= requested_before)
        .order_by(col(ReviewRequestRecord.requested_at)).limit(limit)
    )
    return list((await session.exec(stmt)).all())


async def claim_expiry(
    *, session: AsyncSession, interrupt_id: str, thread_id: str, due_at: datetime, outcome: str,
    escalate_to: str | None, worker: str, stale_before: datetime,
) -> bool:
    """Claim the review's deadline for ``worker``; commits. True for exactly one claimant (or
    for the one taking over a claim left ``acting`` before ``stale_before``)."""
    session.add(ReviewExpiry(
        interrupt_id=interrupt_id, thread_id=thread_id, due_at=due_at, outcome=outcome,
        escalate_to=escalate_to, worker=worker[:100], claimed_at=utcnow(),
    ))
    try:
        await session.commit()
        return True
    except IntegrityError:
        await session.rollback()
    result = await session.exec(
        update(ReviewExpiry).where(
            col(ReviewExpiry.interrupt_id) == interrupt_id, col(ReviewExpiry.status) == "acting",
            col(ReviewExpiry.claimed_at) < stale_before,
        ).values(worker=worker[:100], claimed_at=utcnow())
    )
    await session.commit()
    return bool(result.rowcount)


async def finish_expiry(*, session: AsyncSession, interrupt_id: str, status: str) -> None:
    """Set the claimed expiry's final ``status`` (``expired``, ``escalated``, ``skipped``); commits."""
    await session.exec(
        update(ReviewExpiry).where(col(ReviewExpiry.interrupt_id) == interrupt_id).values(status=status)
    )
    await session.commit()


async def drop_expiry(*, session: AsyncSession, interrupt_id: str) -> None:
    """Forget the claim (the deadline is looked at again on a later sweep); commits."""
    row = await session.get(ReviewExpiry, interrupt_id)
    if row is not None:
        await session.delete(row)
        await session.commit()


async def get_expiry(*, session: AsyncSession, interrupt_id: str) -> ReviewExpiry | None:
    """The review's expiry row, if its deadline was acted on."""
    return await session.get(ReviewExpiry, interrupt_id)


async def schedule_resume(*, session: AsyncSession, row: ScheduledResume) -> None:
    """Write a review's undo window (replacing an undone one of the same review); commits."""
    old = await session.get(ScheduledResume, row.interrupt_id)
    if old is not None:
        await session.delete(old)
        await session.flush()
    session.add(row)
    await session.commit()


async def get_resume(*, session: AsyncSession, interrupt_id: str) -> ScheduledResume | None:
    """The review's undo window row (any status)."""
    return await session.get(ScheduledResume, interrupt_id)


async def take_due_resumes(*, session: AsyncSession, now: datetime, limit: int = 20) -> list[ScheduledResume]:
    """Move each due ``pending`` window to ``running`` and return the ones THIS call moved; commits."""
    stmt = select(ScheduledResume).where(
        col(ScheduledResume.status) == "pending", col(ScheduledResume.due_at) <= now
    ).limit(limit)
    taken = []
    for row in (await session.exec(stmt)).all():
        result = await session.exec(
            update(ScheduledResume).where(
                col(ScheduledResume.interrupt_id) == row.interrupt_id, col(ScheduledResume.status) == "pending"
            ).values(status="running", claimed_at=now)
        )
        await session.commit()
        if result.rowcount:
            taken.append(row)
    return taken


async def finish_resume(*, session: AsyncSession, interrupt_id: str, status: str = "done") -> None:
    """Set a taken window's final status; commits."""
    await session.exec(
        update(ScheduledResume).where(col(ScheduledResume.interrupt_id) == interrupt_id).values(status=status)
    )
    await session.commit()


async def undo_resume(*, session: AsyncSession, interrupt_id: str, now: datetime) -> bool:
    """Move a ``pending`` window that is not due yet to ``undone``; commits. False when it ran,
    was undone already, or its time is up."""
    result = await session.exec(
        update(ScheduledResume).where(
            col(ScheduledResume.interrupt_id) == interrupt_id, col(ScheduledResume.status) == "pending",
            col(ScheduledResume.due_at) > now,
        ).values(status="undone")
    )
    await session.commit()
    return bool(result.rowcount)


async def add_event(*, session: AsyncSession, event: ReviewEvent) -> None:
    """Record a review event and its link in the audit chain; commits."""
    session.add(event)
    await session.flush()
    await append_facts(session=session, facts=[event_fact(event)])
    await session.commit()


async def events_for(
    *, session: AsyncSession, interrupt_ids: Sequence[str] = (), thread_id: str | None = None
) -> list[ReviewEvent]:
    """Events of some reviews or of a thread, oldest first."""
    stmt = select(ReviewEvent).order_by(col(ReviewEvent.at), col(ReviewEvent.id))
    if thread_id is not None:
        stmt = stmt.where(col(ReviewEvent.thread_id) == thread_id)
    if interrupt_ids:
        stmt = stmt.where(col(ReviewEvent.interrupt_id).in_(list(interrupt_ids)))
    return list((await session.exec(stmt)).all())
