"""Grants in the app database: make, find the one covering a call, use it (audited), list, revoke,
withdraw (the approval it was made with was undone).

Keyword-only functions taking an ``AsyncSession``; the writers commit. Matching itself is
``hitl_app.review.grants.covers`` (pure); here the candidate rows are read and the use recorded.

Using a grant writes one ``AuditRecord`` for the call (``via = "grant:<id>"``, the grant's maker
as reviewer, the line "approved by grant: ...") under a key derived from the tool call id, so a
replayed check of the same call records it once and counts it once.
"""

# Tested by: tests/integration/desk/test_review_desk.py - grants made, matched, revoked and expired

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.grants import GrantRequest, args_hash, covers, grant_note, grant_of
from hitl_app.store.audit_chain import append_facts, decided_fact
from hitl_app.store.desk_tables import GrantRecord
from hitl_app.store.tables import AuditRecord, utcnow


@dataclass(frozen=True)
class NewGrant:
    """A grant to write: made on ``interrupt_id`` for the call ``tool``/``args`` in ``thread_id``
    (owned by ``owner_id``), by the person ``by_id``/``by_name``/``by_role``."""

    request: GrantRequest
    tool: str
    args: Mapping[str, Any]
    thread_id: str
    owner_id: str
    owner_name: str
    by_id: str
    by_name: str
    by_role: str
    interrupt_id: str


def grant_rows(grants: Sequence[NewGrant], *, now: datetime, completing: bool = False) -> list[GrantRecord]:
    """The rows of ``grants`` made at ``now`` (not added to any session). ``completing``: made with
    the submission that decided the review's last card (see ``GrantRecord``)."""
    return [
        GrantRecord(
            scope=g.request.scope, tool=g.tool, thread_id=None if g.request.scope == "person" else g.thread_id,
            owner_id=g.owner_id, owner_name=g.owner_name[:100],
            args_hash=args_hash(g.args) if g.request.scope == "call" else None,
            args=dict(g.args) if g.request.scope == "call" else None,
            granted_by_id=g.by_id[:100], granted_by_name=g.by_name[:100] or "anonymous", granted_by_role=g.by_role[:20],
            interrupt_id=g.interrupt_id, created_at=now, expires_at=now + timedelta(hours=g.request.hours),
            completing=completing,
        )
        for g in grants
    ]


async def create_grants(*, session: AsyncSession, grants: Sequence[NewGrant], now: datetime | None = None) -> list[int]:
    """Write ``grants``; commits. Returns their ids."""
    rows = grant_rows(grants, now=now or utcnow())
    session.add_all(rows)
    await session.commit()
    return [r.id for r in rows if r.id is not None]


async def find_grants(
    *, session: AsyncSession, thread_id: str, owner_id: str, tool: str, args: Mapping[str, Any] | None, now: datetime
) -> list[GrantRecord]:
    """The active grants covering the call, the narrowest scope first, then the newest."""
    stmt = select(GrantRecord).where(
        col(GrantRecord.tool) == tool, col(GrantRecord.revoked_at).is_(None), col(GrantRecord.expires_at) > now,
        or_(col(GrantRecord.thread_id) == thread_id, col(GrantRecord.owner_id) == owner_id),
    )
    rows = [
        g for g in (await session.exec(stmt)).all()
        if covers(g, thread_id=thread_id, owner_id=owner_id, tool=tool, args=args, now=now)
    ]
    rank = {"call": 0, "thread": 1, "person": 2}
    rows.sort(key=lambda g: (rank.get(g.scope, 3), -(g.id or 0)))
    return rows


def grant_audit_key(thread_id: str, tool_call_id: str) -> str:
    """The audit ``interrupt_id`` of a grant's auto-approval of one call (unique per call)."""
    return "grant:" + hashlib.sha256(f"{thread_id}\x00{tool_call_id}".encode()).hexdigest()[:40]


async def use_grant(
    *, session: AsyncSession, grant: GrantRecord, thread_id: str, tool_call_id: str, args: Mapping[str, Any], now: datetime
) -> str:
    """Record that ``grant`` approved the call: its audit row and one more use; commits.

    Returns the line to show under the call. A second use for the same call id records nothing.
    """
    note = grant_note(grant.scope, grant.granted_by_name, grant.expires_at, now, grant.owner_name)
    row = AuditRecord(
        thread_id=thread_id, interrupt_id=grant_audit_key(thread_id, tool_call_id), action_index=0,
        tool_call_id=tool_call_id, tool_name=grant.tool, decision_type="approve", args_proposed=dict(args),
        args_executed=dict(args), message=note, reviewer=grant.granted_by_name, reviewer_id=grant.granted_by_id,
        reviewer_role=grant.granted_by_role or None, requested_at=now, decided_at=now, waited_seconds=0.0,
        via=f"grant:{grant.id}",
    )
    session.add(row)
    try:
        await session.flush()
        await append_facts(session=session, facts=[decided_fact([row])])
        await session.commit()
    except IntegrityError:  # this call was approved by a grant already (a replayed check)
        await session.rollback()
        return note
    await session.exec(
        update(GrantRecord).where(col(GrantRecord.id) == grant.id)
        .values(uses=GrantRecord.uses + 1, last_used_at=now)
    )
    await session.commit()
    return note


async def list_grants(*, session: AsyncSession, account_id: str | None, limit: int = 200) -> list[GrantRecord]:
    """Grants made by ``account_id`` or covering its threads (all of them for ``None``: an
    admin), newest first."""
    stmt = select(GrantRecord).order_by(col(GrantRecord.created_at).desc()).limit(limit)
    if account_id is not None:
        stmt = stmt.where(or_(col(GrantRecord.granted_by_id) == account_id, col(GrantRecord.owner_id) == account_id))
    return list((await session.exec(stmt)).all())


async def revoke_grant(*, session: AsyncSession, grant_id: int, by: str, now: datetime | None = None) -> bool:
    """Revoke an active grant; commits. False when it was revoked already or does not exist."""
    result = await session.exec(
        update(GrantRecord).where(col(GrantRecord.id) == grant_id, col(GrantRecord.revoked_at).is_(None))
        .values(revoked_at=now or utcnow(), revoked_by=by[:100])
    )
    await session.commit()
    return bool(result.rowcount)


async def get_grant(*, session: AsyncSession, grant_id: int) -> GrantRecord | None:
    """One grant by id."""
    return await session.get(GrantRecord, grant_id)


async def withdraw_completing(*, session: AsyncSession, interrupt_id: str, now: datetime | None = None) -> int:
    """Withdraw the grants made with the submission that completed ``interrupt_id`` (it was undone,
    or its claim released): an unused one is deleted, one used meanwhile (a ``person`` grant in
    another thread during an undo window) is revoked, so its audit rows still name it. Grants made
    with earlier, partial submissions stay. Does not commit (``store.reviews.release_claim`` does,
    with the claim). Returns how many were withdrawn."""
    stmt = select(GrantRecord).where(col(GrantRecord.interrupt_id) == interrupt_id, col(GrantRecord.completing).is_(True))
    rows = (await session.exec(stmt)).all()
    for row in rows:
        if row.uses:
            row.revoked_at, row.revoked_by = row.revoked_at or now or utcnow(), row.revoked_by or "(approval withdrawn)"
            session.add(row)
        else:
            await session.delete(row)
    return len(rows)


async def name_granted(*, session: AsyncSession, rows: Sequence[AuditRecord]) -> None:
    """Give the audit rows of cards a grant approved (drafted under ``grant_decider``) the grant's
    maker as reviewer, ``via = "grant:<id>"`` and the line "approved by grant: ..."; in place,
    nothing is written. Rows of people's decisions are left as they are."""
    ids = {g for r in rows if (g := grant_of(r.reviewer_id)) is not None}
    if not ids:
        return
    found = {g.id: g for g in (await session.exec(select(GrantRecord).where(col(GrantRecord.id).in_(ids)))).all()}
    for row in rows:
        grant = found.get(grant_of(row.reviewer_id) or -1)
        if grant is None:
            continue
        row.via, row.reviewer = f"grant:{grant.id}", grant.granted_by_name
        row.reviewer_id, row.reviewer_role = grant.granted_by_id, grant.granted_by_role or None
        row.message = grant_note(grant.scope, grant.granted_by_name, grant.expires_at, row.decided_at, grant.owner_name)
        row.waited_seconds = 0.0


async def count_uses(*, session: AsyncSession, grant_ids: Sequence[int], now: datetime) -> None:
    """One more use of each of ``grant_ids`` (an id listed twice counts twice); commits."""
    for grant_id in grant_ids:
        await session.exec(
            update(GrantRecord).where(col(GrantRecord.id) == grant_id).values(uses=GrantRecord.uses + 1, last_used_at=now)
        )
    await session.commit()
