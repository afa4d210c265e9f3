"""Reviews decided in the app database: the exactly-once claim (the audit rows), its release, the
audit read, and the executed arguments of calls whose run ended first. The "requested" row of a
review waiting is ``hitl_app.store.review_requests``.

Keyword-only functions taking an ``AsyncSession``; the writers commit.

The claim: one ``AuditRecord`` per decision (``audit_rows``), written by
``hitl_app.store.drafts.write_drafts(claim=...)`` in one transaction with the drafts that decide the
last card. ``(interrupt_id, action_index)`` is unique, so of any number of concurrent claims on one
interrupt (tabs, retries, worker processes) exactly one commits; the others get ``AlreadyDecided``. The
claim is made before the graph is resumed; ``release_claim`` undoes it when the resume never
reached the checkpoint, so the review stays answerable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, update
from sqlmodel import col, delete, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.types import AnyDecision, PendingReview, decision_message, executed_args
from hitl_app.store.audit_chain import append_facts
from hitl_app.store.grants import withdraw_completing
from hitl_app.store.tables import AuditRecord, DecisionDraft, ReviewRequestRecord, ToolEffect

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
    ``via``: how it arrived (``hitl_app.review.via``: page, api, mail, deadline, ``grant:<id>``); ``args_proposed`` /
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


@dataclass(frozen=True)
class DecidedBy:
    """Who decided one card, for its audit row.

    Attributes:
        reviewer: display name(s) at the time, e.g. ``"Dana"`` or ``"Dana and Lee"``.
        reviewer_id: the deciding account's id as text (``""`` unknown).
        reviewer_role: the role it decided with (``""`` unknown).
        deciders: every decision on the card, ``[{"account_id", "display_name", "role", "type"}]``.
        asked: who the policy asked, ``"|reviewer|admin|dana@example.com|"`` (``""`` = the owner).
        via: how the decision that completed the card arrived (``hitl_app.review.via``; None unknown).
    """

    reviewer: str
    reviewer_id: str = ""
    reviewer_role: str = ""
    deciders: tuple[dict[str, str], ...] = ()
    asked: str = ""
    via: str | None = None


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
                via=by.via,
                requested_at=requested,
                decided_at=now,
                waited_seconds=max(0.0, (now - requested).total_seconds()),
                checkpoint_id=review.checkpoint_id,
            )
        )
    return rows


async def release_claim(
    *, session: AsyncSession, interrupt_id: str, claimed_before: datetime | None = None, keep_decisions: bool = False
) -> int:
    """Undo the claim on ``interrupt_id`` (its audit rows, the drafts written with them and the
    grants made with those go: ``store.grants.withdraw_completing``; the review is answerable
    again); commits.

    Args:
        session: an open session on the app database.
        interrupt_id: the review's interrupt id.
        claimed_before: only release a claim made before this time (aware UTC), e.g. a claim left
            by a worker that died; a newer claim may belong to a run that is still starting.
        keep_decisions: keep the drafts and grants written with the claim (only the audit rows go):
            an undo window that ended after an approval of it stopped counting (the card says why).

    Returns:
        How many audit rows were deleted (0: nothing was claimed, or the claim is too new).
    """
    stmt = delete(AuditRecord).where(col(AuditRecord.interrupt_id) == interrupt_id)
    if claimed_before is not None:
        stmt = stmt.where(col(AuditRecord.decided_at) < claimed_before)
    ids = sorted(int(i) for i in (await session.exec(stmt.returning(col(AuditRecord.id)))).scalars())
    deleted = len(ids)
    if ids:  # the release is a fact of the audit too: its link commits with it
        await append_facts(session=session, facts=[("released", {"interrupt_id": interrupt_id, "ids": ids})])
    if deleted and not keep_decisions:  # the decisions written with the claim go with it (earlier people's drafts stay)
        await session.exec(
            delete(DecisionDraft).where(
                col(DecisionDraft.interrupt_id) == interrupt_id, col(DecisionDraft.completing).is_(True)
            )
        )
        await withdraw_completing(session=session, interrupt_id=interrupt_id)  # the grants made with them too
    if deleted:
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


async def clear_executed(*, session: AsyncSession, thread_id: str, tool_call_ids: list[str]) -> int:
    """Forget the executed arguments of decisions whose tool calls never ran (their run ended
    first: Stop, a limit, a failure), so the audit shows none; returns the rows changed. Commits."""
    if not tool_call_ids:
        return 0
    result = await session.exec(
        update(AuditRecord)
        .where(col(AuditRecord.thread_id) == thread_id, col(AuditRecord.tool_call_id).in_(tool_call_ids))
        .values(args_executed=None)
        .returning(col(AuditRecord.id))
    )
    ids = sorted(int(i) for i in result.scalars())
    if ids:
        await append_facts(session=session, facts=[("cleared", {"ids": ids})])
    await session.commit()
    return len(ids)


async def finished_after_end(*, session: AsyncSession, keys: list[str]) -> dict[str, str]:
    """The recorded results of tool calls in the effect ledger (``tool_effects``: a built-in tool
    records its result there, keyed ``"<thread_id>:<tool_call_id>"``, in the transaction of its
    effect), for ``keys`` of that form; a key with no row is left out (the call never finished)."""
    if not keys:
        return {}
    rows = (await session.exec(select(ToolEffect).where(col(ToolEffect.tool_call_id).in_(keys)))).all()
    return {row.tool_call_id: row.result for row in rows}


async def restore_executed(*, session: AsyncSession, thread_id: str, executed: dict[str, dict[str, Any]]) -> int:
    """Give back the executed arguments that ``clear_executed`` forgot, for calls that finished
    after their run ended (``executed``: tool call id -> the arguments the call ran with); only
    rows whose executed arguments are empty change. Returns the rows changed. Commits."""
    if not executed:
        return 0
    rows = (await session.exec(select(AuditRecord).where(
        col(AuditRecord.thread_id) == thread_id, col(AuditRecord.tool_call_id).in_(list(executed)),
    ))).all()
    changed: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.args_executed is not None:  # (the JSON column's None is JSON null, not SQL NULL: compared here)
            continue
        row.args_executed = executed[str(row.tool_call_id)]
        session.add(row)
        changed[str(row.id)] = row.args_executed
    if changed:
        await session.flush()
        await append_facts(session=session, facts=[("restored", {"rows": changed})])
    await session.commit()
    return len(changed)


async def was_asked(*, session: AsyncSession, thread_id: str, role: str, email: str) -> bool:
    """True when a decided card of ``thread_id`` asked ``role`` or ``email`` to decide it (its
    audit row's ``asked``, e.g. ``"|reviewer|admin|"``): that person may still read the thread."""
    keys = [f"|{k}|" for k in (role.strip().lower(), email.strip().casefold()) if k]
    if not keys:
        return False
    # autoescape: "%" and "_" in an email are literal characters, never LIKE wildcards
    stmt = select(AuditRecord.id).where(
        AuditRecord.thread_id == thread_id, or_(*(col(AuditRecord.asked).contains(k, autoescape=True) for k in keys))
    ).limit(1)
    return (await session.exec(stmt)).first() is not None
