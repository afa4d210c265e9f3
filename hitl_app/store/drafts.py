"""Server-side drafts: each person's decision on each card of a pending interrupt.

Keyword-only functions taking an ``AsyncSession``; the writers commit.

Concurrency: every decision of one interrupt gets the next ``seq`` (0, 1, ...), and
``(interrupt_id, seq)`` is unique. A writer reads the drafts, checks the rights against them and
writes its rows numbered from the count it read; a writer that read an older state collides on
``seq`` and gets ``DraftConflict`` (nothing written), so it re-reads and re-checks. The rows that
decide the last open card are written in the same transaction as the review's claim (the unique
audit rows, see ``hitl_app.store.reviews``), so the run is resumed exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.audit_chain import append_facts, decided_fact
from hitl_app.store.reviews import AlreadyDecided, is_claimed
from hitl_app.store.tables import AuditRecord, DecisionDraft, ReviewRequestRecord, utcnow

NAME_CHARS = 100
"""Longest display name stored with a draft, in characters."""


class DraftConflict(Exception):
    """Another decision on the same interrupt was written since the drafts were read; re-read."""


@dataclass(frozen=True)
class NewDraft:
    """One decision to write: card ``action_index``, who (id as text, name, role), the payload, and
    how it arrived (``via``: ``hitl_app.review.via``; None for the policy's own rejections)."""

    action_index: int
    account_id: str
    display_name: str
    role: str
    decision: dict[str, Any] = field(default_factory=dict)
    via: str | None = None

    @property
    def decision_type(self) -> str:
        """The payload's ``type``."""
        return str(self.decision.get("type", ""))


async def read_drafts(*, session: AsyncSession, interrupt_id: str) -> list[DecisionDraft]:
    """Every decision recorded on ``interrupt_id``, in ``seq`` order (oldest first)."""
    stmt = select(DecisionDraft).where(DecisionDraft.interrupt_id == interrupt_id).order_by(col(DecisionDraft.seq))
    return list((await session.exec(stmt)).all())


async def has_decided(*, session: AsyncSession, thread_id: str, account_id: str) -> bool:
    """True when ``account_id`` recorded a decision on any card of ``thread_id`` (pending or decided
    review): such a reviewer may still read the thread and follow the run they released."""
    stmt = select(DecisionDraft.id).where(DecisionDraft.thread_id == thread_id, DecisionDraft.account_id == account_id).limit(1)
    return (await session.exec(stmt)).first() is not None


def next_seq(drafts: Sequence[DecisionDraft]) -> int:
    """The ``seq`` the next decision on the interrupt gets: one past the largest read (0 for none)."""
    return max((d.seq for d in drafts), default=-1) + 1


def _draft_rows(
    thread_id: str, interrupt_id: str, base_seq: int, drafts: Sequence[NewDraft], now: datetime, *, completing: bool
) -> list[DecisionDraft]:
    return [
        DecisionDraft(
            thread_id=thread_id, interrupt_id=interrupt_id, seq=base_seq + i, action_index=d.action_index,
            account_id=d.account_id[:100], display_name=d.display_name[:NAME_CHARS] or "anonymous",
            role=d.role[:20], decision_type=d.decision_type, decision=d.decision, decided_at=now,
            completing=completing, via=d.via,
        )
        for i, d in enumerate(drafts)
    ]


async def write_drafts(
    *,
    session: AsyncSession,
    thread_id: str,
    interrupt_id: str,
    base_seq: int,
    drafts: Sequence[NewDraft],
    claim: Sequence[AuditRecord] = (),
    now: datetime | None = None,
    also: Sequence[SQLModel] = (),
) -> list[int]:
    """Write ``drafts`` numbered from ``base_seq`` (the count read), with ``claim`` in one commit.

    Args:
        session: the app database session (committed here).
        thread_id: the review's thread.
        interrupt_id: the review the drafts answer.
        base_seq: ``next_seq`` of the drafts the caller read (its new rows get ``base_seq,
            base_seq + 1, ...``).
        drafts: the person's decisions, one per card they decided.
        claim: the review's audit rows when these drafts decide the last open card (empty
            otherwise); the drafts are then marked ``completing``.
        now: the decision time (aware UTC; default: now).
        also: more rows written in the same commit (the grants made with these decisions).

    Returns:
        The ids of the rows written.

    Raises:
        DraftConflict: another writer took one of the ``seq`` numbers (re-read and retry).
        AlreadyDecided: the review was claimed already (its run went on without these).
    """
    now = now or utcnow()
    if claim and await is_claimed(session=session, interrupt_id=interrupt_id):
        raise AlreadyDecided(interrupt_id)
    rows = _draft_rows(thread_id, interrupt_id, base_seq, drafts, now, completing=bool(claim))
    request = await session.get(ReviewRequestRecord, interrupt_id) if claim else None
    session.add_all([*rows, *claim, *also])
    if request is not None:
        request.decided = True
        session.add(request)
    try:
        await session.flush()
        if claim:  # the claim's audit rows and their link in the chain commit together
            await append_facts(session=session, facts=[decided_fact(claim)])
        await session.commit()
    except IntegrityError:
        await session.rollback()
        if claim and await is_claimed(session=session, interrupt_id=interrupt_id):
            raise AlreadyDecided(interrupt_id) from None
        raise DraftConflict(interrupt_id) from None
    return [r.id for r in rows if r.id is not None]
