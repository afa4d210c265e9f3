"""The thread index (``ThreadRecord``): who owns a thread, its title, whether a review is pending.

Keyword-only functions taking an ``AsyncSession`` on the app database; the writers commit. The
checkpointer, not this table, holds a thread's messages: this index only feeds the sidebar and the
owner check.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import true, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.desk_tables import ScheduledResume
from hitl_app.store.tables import ThreadRecord, utcnow

NEW_THREAD_TITLE = "New chat"
"""Title of a thread until its first message names it."""
TITLE_CHARS = 60
"""Longest title, in characters (longer first messages are cut with "...")."""


@dataclass(frozen=True)
class ThreadSummary:
    """A sidebar row: ``thread_id``, ``title``, ``updated_at`` (aware UTC), ``pending_review``;
    ``undo_window``: its review is decided and waits out its undo window (the run has not started);
    ``review_lost``: the agent deployment lost the thread while a review waited (it cannot be answered)."""

    thread_id: str
    title: str
    updated_at: datetime
    pending_review: bool
    undo_window: bool = False
    review_lost: bool = False


def title_from(text: str) -> str:
    """A one-line title from a first message: whitespace folded, at most ``TITLE_CHARS`` characters."""
    line = " ".join(text.split())
    if len(line) > TITLE_CHARS:
        return line[: TITLE_CHARS - 3] + "..."
    return line or NEW_THREAD_TITLE


async def get_thread(*, session: AsyncSession, thread_id: str) -> ThreadRecord | None:
    """The index row of ``thread_id``, or ``None`` for a thread never started."""
    return await session.get(ThreadRecord, thread_id)


async def touch_thread(
    *,
    session: AsyncSession,
    thread_id: str,
    owner: str | None,
    title: str | None = None,
    pending_review: bool | None = None,
) -> None:
    """Create or update the index row of ``thread_id`` and commit.

    Args:
        session: an open session on the app database.
        thread_id: the thread's id.
        owner: the owner of a new row (an existing row keeps its owner).
        title: the first message's text; names a thread still called ``NEW_THREAD_TITLE``.
        pending_review: the new flag, or ``None`` to leave it as it is.
    """
    record = await session.get(ThreadRecord, thread_id)
    if record is None:
        record = ThreadRecord(thread_id=thread_id, owner=owner, title=title_from(title or ""))
    elif title and record.title == NEW_THREAD_TITLE:
        record.title = title_from(title)
    record.updated_at = utcnow()
    if pending_review is not None:
        record.pending_review = pending_review
    if title:  # a new turn: the thread starts afresh on the deployment
        record.review_lost_at = None
    session.add(record)
    await session.commit()


async def list_threads(*, session: AsyncSession, owner: str | None, limit: int = 50) -> list[ThreadSummary]:
    """Threads of ``owner`` (every thread when ``owner`` is empty), most recently active first.

    Returns at most ``limit`` summaries.
    """
    stmt = select(ThreadRecord).order_by(col(ThreadRecord.updated_at).desc()).limit(limit)
    if owner:
        stmt = stmt.where(ThreadRecord.owner == owner)
    rows = (await session.exec(stmt)).all()
    waiting = select(ScheduledResume.thread_id).where(
        col(ScheduledResume.thread_id).in_([r.thread_id for r in rows]), col(ScheduledResume.status) == "pending"
    )
    undo = set((await session.exec(waiting)).all()) if rows else set()
    return [
        ThreadSummary(r.thread_id, r.title, r.updated_at, r.pending_review, r.thread_id in undo, r.review_lost_at is not None)
        for r in rows
    ]


async def pending_thread_ids(*, session: AsyncSession, owner: str | None, limit: int = 200) -> list[str]:
    """Ids of the threads marked ``pending_review`` (of ``owner``; every owner's when empty), at most ``limit``."""
    stmt = select(ThreadRecord.thread_id).where(col(ThreadRecord.pending_review) == true()).limit(limit)
    if owner:
        stmt = stmt.where(ThreadRecord.owner == owner)
    return list((await session.exec(stmt)).all())


async def mark_reviews_lost(*, session: AsyncSession, thread_ids: list[str]) -> int:
    """Mark the reviews of ``thread_ids`` lost: no longer pending (out of the sidebar's and the inbox's
    waiting reviews), ``review_lost_at`` now; commits. Nothing is recorded as decided. Returns rows changed."""
    if not thread_ids:
        return 0
    stmt = (
        update(ThreadRecord)
        .where(col(ThreadRecord.thread_id).in_(thread_ids), col(ThreadRecord.pending_review) == true())
        .values(pending_review=False, review_lost_at=utcnow())
    )
    changed = (await session.exec(stmt)).rowcount
    await session.commit()
    return int(changed or 0)
