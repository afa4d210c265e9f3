"""Reviews in the app database: the "requested" row, the exactly-once claim, the audit read.

Keyword-only functions taking an ``AsyncSession``; the writers commit.

The claim: ``claim_review`` inserts one ``AuditRecord`` per decision in one transaction.
``(interrupt_id, action_index)`` is unique, so of any number of concurrent claims on one interrupt
(tabs, retries, worker processes) exactly one commits; the others get ``AlreadyDecided``. The
claim is made before the graph is resumed; ``release_claim`` undoes it when the resume never
reached the checkpoint, so the review stays answerable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.types import AnyDecision, PendingReview, decision_message, executed_args
from hitl_app.store.grants import withdraw_completing
from hitl_app.store.tables import AuditRecord, DecisionDraft, ReviewRequestRecord, ThreadRecord, utcnow

REVIEWER_CHARS = 100
"""Longest reviewer name stored, in characters."""


def stored_reviewer(reviewer: object) -> str:
    """The reviewer name as stored: a string on one line (runs of whitespace, newlines included,
    become one space), cut to ``REVIEWER_CHARS``; ``"anonymous"`` for an empty or non-string value."""
    if not isinstance(reviewer, str):
        return "anonymous"
    return " ".join(reviewer.split())[:REVIEWER_CHARS] or "anonymous"


class AlreadyDecided(Exception):
    """Another submission claimed this interrupt first (nothing was written by this one)."""


@dataclass(frozen=True)
class AuditEntry:
    """A decision as shown under its tool call (times aware UTC, ``waited_seconds`` in seconds;
    ``via``: ``"grant:<id>"`` or ``"deadline"`` when no person decided it then; ``args_proposed`` /
    ``args_executed`` the model's and the run's arguments, None when unknown)."""

    tool_call_id: str | None
    tool_name: str
    decision_type: str
    reviewer: str
    decided_at: datetime
    waited_seconds: float
    message: str | None
    via: str | None = None
    args_proposed: dict[str, Any] | None = None
    args_executed: dict[str, Any] | None = None


def review_cards(review: PendingReview) -> list[dict[str, Any]]:
    """The review's cards as stored in ``ReviewRequestRecord.cards``:
    ``[{"name", "args", "allowed_decisions"}]``, one per action request, in order."""
    return [
        {"name": a.name, "args": dict(a.args), "allowed_decisions": list(c.allowed_decisions)}
        for a, c in zip(review.action_requests, review.review_configs, strict=True)
    ]


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
        await session.commit()
    except IntegrityError:  # another reader wrote it first
        await session.rollback()
        other = await session.get(ReviewRequestRecord, review.interrupt_id)
        return other.requested_at if other is not None else at
    return at


async def record_review_waiting(*, session: AsyncSession, review: PendingReview) -> tuple[bool, str | None]:
    """The two index rows of a new review in one transaction (one commit): its "requested" row
    (as ``record_review_requested``) and its thread's row marked ``pending_review`` and touched
    (as ``touch_thread``; a thread without a row gets one, owner unknown). Commits.

    Returns (True when the "requested" row is new, the thread's owner as stored: account id as
    text, None when unknown), for the review signal's audience. Raises what the database raises
    (nothing is then written).
    """
    cards = review_cards(review)
    values: dict[str, Any] = {
        "interrupt_id": review.interrupt_id, "thread_id": review.thread_id, "requested_at": utcnow(),
        "action_count": len(review.action_requests),
        "tool_names": ",".join(a.name for a in review.action_requests)[:2000],
        "decided": False, "cards": cards,
    }
    bind = session.bind
    is_postgres = bind is not None and bind.dialect.name == "postgresql"
    insert = (pg_insert if is_postgres else sqlite_insert)(ReviewRequestRecord).values(**values)
    inserted = insert.on_conflict_do_nothing(index_elements=["interrupt_id"]).returning(col(ReviewRequestRecord.interrupt_id))
    new = (await session.exec(inserted)).first() is not None
    if not new:  # written before (a re-read): an older row gets its cards
        existing = await session.get(ReviewRequestRecord, review.interrupt_id)
        if existing is not None and existing.cards is None:
            existing.cards = cards
            session.add(existing)
    touched = update(ThreadRecord).where(col(ThreadRecord.thread_id) == review.thread_id)
    owners = await session.exec(
        touched.values(updated_at=utcnow(), pending_review=True).returning(col(ThreadRecord.owner))
    )
    found = owners.first()
    if found is None:
        session.add(ThreadRecord(thread_id=review.thread_id, owner=None, pending_review=True))
    await session.commit()
    return new, None if found is None else found[0]


@dataclass(frozen=True)
class DecidedBy:
    """Who decided one card, for its audit row.

    Attributes:
        reviewer: display name(s) at the time, e.g. ``"Dana"`` or ``"Dana and Lee"``.
        reviewer_id: the deciding account's id as text (``""`` unknown).
        reviewer_role: the role it decided with (``""`` unknown).
        deciders: every decision on the card, ``[{"account_id", "display_name", "role", "type"}]``.
        asked: who the policy asked, ``"|reviewer|admin|dana@example.com|"`` (``""`` = the owner).
    """

    reviewer: str
    reviewer_id: str = ""
    reviewer_role: str = ""
    deciders: tuple[dict[str, str], ...] = ()
    asked: str = ""


async def requested_at(*, session: AsyncSession, interrupt_id: str, now: datetime) -> datetime:
    """When the review ``interrupt_id`` was first shown (``now`` when it has no "requested" row)."""
    request = await session.get(ReviewRequestRecord, interrupt_id)
    return request.requested_at if request is not None else now


def audit_rows(
    *, review: PendingReview, decisions: list[AnyDecision], who: list[DecidedBy], requested: datetime, now: datetime
) -> list[AuditRecord]:
    """The review's audit rows (one per action request, in order; not added to any session).

    ``who[i]`` decided card ``i``; ``waited_seconds`` counts from ``requested`` to ``now``.
    Raises ValueError when the lists differ in length.
    """
    ids = review.tool_call_ids
    rows = []
    for index, (action, decision, by) in enumerate(zip(review.action_requests, decisions, who, strict=True)):
        rows.append(
            AuditRecord(
                thread_id=review.thread_id,
                interrupt_id=review.interrupt_id,
                action_index=index,
                tool_call_id=ids[index] if index < len(ids) else None,
                tool_name=action.name,
                decision_type=decision.type,
                args_proposed=action.args,
                args_executed=executed_args(decision, action.args),
                message=decision_message(decision),
                reviewer=stored_reviewer(by.reviewer),
                reviewer_id=by.reviewer_id[:100] or None,
                reviewer_role=by.reviewer_role[:20] or None,
                deciders=[dict(d) for d in by.deciders] or None,
                asked=by.asked[:2000] or None,
                requested_at=requested,
                decided_at=now,
                waited_seconds=max(0.0, (now - requested).total_seconds()),
                checkpoint_id=review.checkpoint_id,
            )
        )
    return rows


async def claim_review(
    *,
    session: AsyncSession,
    review: PendingReview,
    decisions: list[AnyDecision],
    reviewer: str | DecidedBy,
    now: datetime | None = None,
) -> None:
    """Record ``decisions`` (one per action request, in order) as the review's audit rows; commits.

    Args:
        session: the app database session (committed here).
        review: the pending review the decisions answer.
        decisions: one per action request, in order.
        reviewer: who decided every card (a name is cut to ``REVIEWER_CHARS``; empty becomes
            ``anonymous``).
        now: the decision time (aware UTC; default: now). ``waited_seconds`` counts from the
            "requested" row (or from ``now`` when there is none).

    Raises:
        AlreadyDecided: the interrupt was claimed already (by anyone, in any process).
        ValueError: ``decisions`` and the action requests differ in length.
    """
    now = now or utcnow()
    by = reviewer if isinstance(reviewer, DecidedBy) else DecidedBy(reviewer)
    requested = await requested_at(session=session, interrupt_id=review.interrupt_id, now=now)
    request = await session.get(ReviewRequestRecord, review.interrupt_id)
    session.add_all(audit_rows(review=review, decisions=decisions, who=[by] * len(decisions), requested=requested, now=now))
    if request is not None:
        request.decided = True
        session.add(request)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        raise AlreadyDecided(review.interrupt_id) from None


async def release_claim(
    *, session: AsyncSession, interrupt_id: str, claimed_before: datetime | None = None
) -> int:
    """Undo the claim on ``interrupt_id`` (its audit rows, the drafts written with them and the
    grants made with those go: ``store.grants.withdraw_completing``; the review is answerable
    again); commits.

    Args:
        session: an open session on the app database.
        interrupt_id: the review's interrupt id.
        claimed_before: only release a claim made before this time (aware UTC), e.g. a claim left
            by a worker that died; a newer claim may belong to a run that is still starting.

    Returns:
        How many audit rows were deleted (0: nothing was claimed, or the claim is too new).
    """
    stmt = delete(AuditRecord).where(col(AuditRecord.interrupt_id) == interrupt_id)
    if claimed_before is not None:
        stmt = stmt.where(col(AuditRecord.decided_at) < claimed_before)
    deleted = (await session.exec(stmt)).rowcount
    if deleted:  # the decisions written with the claim go with it (earlier people's drafts stay)
        await session.exec(
            delete(DecisionDraft).where(
                col(DecisionDraft.interrupt_id) == interrupt_id, col(DecisionDraft.completing).is_(True)
            )
        )
        await withdraw_completing(session=session, interrupt_id=interrupt_id)  # the grants made with them too
        request = await session.get(ReviewRequestRecord, interrupt_id)
        if request is not None:
            request.decided = False
            session.add(request)
    await session.commit()
    return int(deleted or 0)


async def is_claimed(*, session: AsyncSession, interrupt_id: str) -> bool:
    """True when audit rows (a claim) exist for ``interrupt_id``."""
    stmt = select(AuditRecord.id).where(AuditRecord.interrupt_id == interrupt_id).limit(1)
    return (await session.exec(stmt)).first() is not None


async def reviewers_by_card(*, session: AsyncSession, interrupt_id: str) -> dict[int, str]:
    """Who decided each card of ``interrupt_id`` (card index -> its audit row's reviewer, e.g.
    ``"Dana and Lee"``); empty when the review is not claimed."""
    stmt = select(AuditRecord.action_index, AuditRecord.reviewer).where(AuditRecord.interrupt_id == interrupt_id)
    return {int(index): name or "" for index, name in (await session.exec(stmt)).all()}


async def claimed_by(*, session: AsyncSession, interrupt_id: str) -> list[str] | None:
    """Who decided ``interrupt_id``'s cards (its audit rows' reviewer names, each once, in card
    order); None when the review is not claimed."""
    by_card = await reviewers_by_card(session=session, interrupt_id=interrupt_id)
    return None if not by_card else list(dict.fromkeys(n for _, n in sorted(by_card.items()) if n))


async def audit_for_thread(*, session: AsyncSession, thread_id: str) -> dict[str, AuditEntry]:
    """Decisions recorded for ``thread_id``, keyed by tool call id (rows without one are left out)."""
    rows = (await session.exec(select(AuditRecord).where(AuditRecord.thread_id == thread_id))).all()
    return {
        r.tool_call_id: AuditEntry(
            r.tool_call_id, r.tool_name, r.decision_type, r.reviewer, r.decided_at, r.waited_seconds, r.message, r.via,
            r.args_proposed, r.args_executed,
        )
        for r in rows
        if r.tool_call_id
    }


async def was_asked(*, session: AsyncSession, thread_id: str, role: str, email: str) -> bool:
    """True when a decided card of ``thread_id`` asked ``role`` or ``email`` to decide it (its
    audit row's ``asked``, e.g. ``"|reviewer|admin|"``): that person may still read the thread."""
    keys = [f"%|{k}|%" for k in (role.strip().lower(), email.strip().casefold()) if k]
    if not keys:
        return False
    stmt = select(AuditRecord.id).where(
        AuditRecord.thread_id == thread_id, or_(*(col(AuditRecord.asked).like(k) for k in keys))
    ).limit(1)
    return (await session.exec(stmt)).first() is not None
