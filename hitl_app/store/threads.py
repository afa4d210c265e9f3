"""The thread index (``ThreadRecord``): who owns a thread, its title, whether a review is pending.

Keyword-only functions taking an ``AsyncSession`` on the app database; the writers commit. The
checkpointer, not this table, holds a thread's messages: this index only feeds the sidebar and the
owner check.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
    ``undo_window``: its review is decided and waits out its undo window (the run has not started)."""

    thread_id: str
    title: str
    updated_at: datetime
    pending_review: bool
    undo_window: bool = False


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
    return [ThreadSummary(r.thread_id, r.title, r.updated_at, r.pending_review, r.thread_id in undo) for r in rows]
