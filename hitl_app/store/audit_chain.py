"""The audit chain: every audit fact appended to one hash chain per installation.

Each ``AuditLink`` row is one fact about the audit (``kind``): ``decided`` (audit rows written:
a review claimed, a grant used), ``released`` (a claim's audit rows removed, the review answerable
again), ``cleared`` (the executed arguments of calls that never ran forgotten), ``restored`` (those
of calls that finished after their run ended given back, ``{"rows": {id: args}}``), ``event`` (a
``ReviewEvent``: submitted, undone, resumed, expired, escalated) and ``adopted`` (the rows an
installation had before it had a chain, taken in as the first link). ``body`` is the fact as
canonical JSON (``canonical``); ``hash`` is SHA-256 over the link's ``seq``, ``at``, ``kind``,
``prev_hash`` and ``body`` (``link_hash``), and ``prev_hash`` is the hash of the link before it
(``GENESIS`` for the first), so changing, removing or inserting a link breaks the chain at that
point (``hitl_app.store.audit_proof`` walks it).

The one door: ``append_facts`` appends links inside the caller's transaction, after its rows are
flushed, so the fact and its link commit together or not at all. Appends are serialised per
installation: on PostgreSQL under a transaction-scoped advisory lock (``AUDIT_CHAIN_LOCK_KEY``), on
SQLite by taking the file's write lock (a write in the transaction) before the head is read; ``seq``
is the primary key besides, so two appenders can never fork the chain (one would fail and roll back).
The webhook events of the facts (a review decided, expired, escalated) are queued in the same
transaction (``hitl_app.store.webhooks.enqueue``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Column, Text, func, update
from sqlmodel import Field, SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.desk_tables import ReviewEvent
from hitl_app.store.tables import AuditRecord, UTCDateTime, as_utc, table_of, utcnow
from hitl_app.store.webhooks import enqueue, events_of_facts

GENESIS = "0" * 64
"""The ``prev_hash`` of the first link."""

AUDIT_CHAIN_LOCK_KEY = 7_463_521_017
"""PostgreSQL advisory-lock key held while a link is appended (one appender at a time)."""

KINDS = ("adopted", "decided", "released", "cleared", "restored", "event")
"""The kinds of link (see the module docstring)."""


class AuditLink(SQLModel, table=True):
    """One link of the audit chain: ``seq`` (1, 2, ...), when, which ``kind`` of fact, the fact as
    canonical JSON (``body``), the previous link's hash and its own (64 hex characters each)."""

    __tablename__ = "audit_chain"

    seq: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    at: datetime = Field(sa_type=UTCDateTime)
    kind: str = Field(max_length=12)
    body: str = Field(sa_column=Column(Text, nullable=False))
    prev_hash: str = Field(max_length=64)
    hash: str = Field(max_length=64, unique=True)


def _plain(value: Any) -> Any:
    """``value`` with datetimes as ISO 8601 UTC text (microseconds), the rest as JSON takes it."""
    if isinstance(value, datetime):
        return as_utc(value).isoformat(timespec="microseconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def iso_utc(value: datetime) -> str:
    """``value`` as the chain writes times: ISO 8601 UTC with microseconds."""
    return str(_plain(value))


def canonical(value: Any) -> str:
    """``value`` as canonical JSON: keys sorted, no spaces, UTF-8 text unescaped, datetimes as ISO
    8601 UTC with microseconds. Equal values give equal text on every backend. Raises TypeError for
    a value JSON cannot hold."""
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def link_hash(*, seq: int, at: datetime | str, kind: str, prev_hash: str, body: str) -> str:
    """The SHA-256 (hex) of one link: ``seq``, ``at`` (ISO UTC), ``kind``, ``prev_hash`` and
    ``body``, one per line, UTF-8."""
    when = at if isinstance(at, str) else iso_utc(at)
    material = "\n".join((str(seq), when, kind, prev_hash, body))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def row_fact(row: SQLModel) -> dict[str, Any]:
    """A table row as the chain keeps it: every column by name, datetimes as ISO UTC text."""
    return {c.name: _plain(getattr(row, c.name)) for c in table_of(type(row)).columns}


async def _take_lock(session: AsyncSession) -> None:
    bind = session.bind
    if bind is not None and bind.dialect.name == "postgresql":
        await session.exec(select(func.pg_advisory_xact_lock(AUDIT_CHAIN_LOCK_KEY)))
    else:  # a write takes SQLite's write lock now (waiting its busy timeout), before the head is read
        await session.exec(update(AuditLink).where(col(AuditLink.seq) < 0).values(kind="none"))


async def _adopted(session: AsyncSession, facts: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The rows written before this installation had a chain, less those ``facts`` name (None
    when there are none)."""
    new_audit = {r["id"] for kind, body in facts if kind == "decided" for r in body["audit"]}
    new_events = {body["event"]["id"] for kind, body in facts if kind == "event"}
    audit = [r for r in (await session.exec(select(AuditRecord).order_by(col(AuditRecord.id)))).all() if r.id not in new_audit]
    events = [e for e in (await session.exec(select(ReviewEvent).order_by(col(ReviewEvent.id)))).all() if e.id not in new_events]
    if not audit and not events:
        return None
    return {"audit": [row_fact(r) for r in audit], "events": [row_fact(e) for e in events]}


async def append_facts(*, session: AsyncSession, facts: Sequence[tuple[str, dict[str, Any]]]) -> list[AuditLink]:
    """Append one link per ``(kind, body)`` to the chain, in the caller's transaction (flushed,
    not committed: the caller's commit writes the facts and their links together).

    Call it after the rows the facts name are flushed (their ids known). The first append of an
    installation whose tables already hold audit rows or review events takes them in first
    (``adopted``). Raises ValueError for an unknown kind; what the database raises otherwise (the
    caller rolls back).
    """
    if not facts:
        return []
    for kind, _ in facts:
        if kind not in KINDS:
            raise ValueError(f"unknown audit fact kind {kind!r} (one of {', '.join(KINDS)})")
    await _take_lock(session)
    head = (await session.exec(select(AuditLink).order_by(col(AuditLink.seq).desc()).limit(1))).first()
    seq, prev = (head.seq, head.hash) if head is not None else (0, GENESIS)
    todo = list(facts)
    if head is None and (old := await _adopted(session, facts)) is not None:
        todo.insert(0, ("adopted", old))
    now = utcnow()
    links = []
    for kind, body in todo:
        seq += 1
        text_body = canonical(body)
        digest = link_hash(seq=seq, at=now, kind=kind, prev_hash=prev, body=text_body)
        links.append(AuditLink(seq=seq, at=now, kind=kind, body=text_body, prev_hash=prev, hash=digest))
        prev = digest
    session.add_all(links)
    for event_type, data in events_of_facts(facts):  # the webhooks' queue, in the same transaction
        await enqueue(session=session, event_type=event_type, data=data)
    await session.flush()
    return links


def decided_fact(rows: Sequence[AuditRecord]) -> tuple[str, dict[str, Any]]:
    """The ``decided`` fact of audit rows just flushed (ids set)."""
    return "decided", {"audit": [row_fact(r) for r in rows]}


def event_fact(event: ReviewEvent) -> tuple[str, dict[str, Any]]:
    """The ``event`` fact of a review event just flushed (id set)."""
    return "event", {"event": row_fact(event)}


async def read_chain(*, session: AsyncSession) -> list[AuditLink]:
    """Every link, in ``seq`` order."""
    return list((await session.exec(select(AuditLink).order_by(col(AuditLink.seq)))).all())


CHAIN_TABLES = [table_of(AuditLink)]
"""The chain's table, created with the app's (``hitl_app.store.db.create_schema``)."""
