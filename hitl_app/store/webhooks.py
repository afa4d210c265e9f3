"""Webhooks in the app database: endpoints, the durable delivery queue and its log.

- ``WebhookEndpoint``: a URL an admin registered, the events it wants, its signing secret.
- ``WebhookDelivery``: one event for one endpoint, a row of the queue. ``enqueue`` writes one per
  subscribed endpoint in the caller's transaction (with the fact that caused it: a review waiting,
  decided, expired or escalated, a run finished), so an event is never lost to a restart. ``status``:
  ``pending`` (due at ``next_attempt_at``) -> ``sending`` (claimed by one worker) -> ``delivered``,
  or back to ``pending`` with a later ``next_attempt_at`` after a failure, or ``failed`` when the
  attempts are used up. ``claim_due`` claims with a conditional UPDATE (one worker wins); a claim
  older than its lease (the worker died mid-send) is taken again, so delivery is at least once.
- ``WebhookAttempt``: one try (when, HTTP status or error, how long), the delivery log.

Keyword-only functions taking an ``AsyncSession``; the writers commit, except ``enqueue`` (the
caller's commit writes its rows with the fact).
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, or_, update
from sqlmodel import Field, SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.tables import UTCDateTime, as_utc, table_of, utcnow

WEBHOOK_EVENTS = ("review.waiting", "review.decided", "review.expired", "review.escalated", "run.finished")
"""The event types an endpoint may subscribe to."""


class WebhookEndpoint(SQLModel, table=True):
    """A registered receiver: ``url`` (http or https), ``events`` (a subset of ``WEBHOOK_EVENTS``),
    ``secret`` (the HMAC key both sides hold, ``whsec_...``), ``active`` (off: nothing is queued)."""

    __tablename__ = "webhook_endpoints"

    id: int | None = Field(default=None, primary_key=True)
    url: str = Field(max_length=2000)
    events: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    secret: str = Field(max_length=100)
    active: bool = Field(default=True)
    created_by: str = Field(default="", max_length=100)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class WebhookDelivery(SQLModel, table=True):
    """One event for one endpoint (see the module docstring). ``event_id`` is the same for every
    try and every endpoint (receivers drop duplicates by it); ``body`` is the exact JSON sent."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_due", "status", "next_attempt_at"),)

    id: int | None = Field(default=None, primary_key=True)
    endpoint_id: int = Field(index=True)
    event_id: str = Field(max_length=40, index=True)
    event_type: str = Field(max_length=40)
    body: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(default="pending", max_length=10)
    attempts: int = Field(default=0)
    next_attempt_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    claimed_by: str | None = Field(default=None, max_length=100)
    claimed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_result: str = Field(default="", max_length=300)
    delivered_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class WebhookAttempt(SQLModel, table=True):
    """One try of a delivery: when, the HTTP status (0: no answer) and a short result, in ms."""

    __tablename__ = "webhook_attempts"

    id: int | None = Field(default=None, primary_key=True)
    delivery_id: int = Field(index=True)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    status_code: int = Field(default=0)
    result: str = Field(default="", max_length=300)
    duration_ms: int = Field(default=0)


def new_secret() -> str:
    """A new signing secret: ``whsec_`` and 32 random bytes, URL-safe base64."""
    return "whsec_" + secrets.token_urlsafe(32)


async def add_endpoint(*, session: AsyncSession, url: str, events: Sequence[str], by: str) -> WebhookEndpoint:
    """Register an endpoint (``url`` and ``events`` checked by the caller); commits; returns it
    with its new secret."""
    row = WebhookEndpoint(url=url, events=list(events), secret=new_secret(), created_by=by[:100])
    session.add(row)
    await session.commit()
    await session.refresh(row)
    return row


async def list_endpoints(*, session: AsyncSession) -> list[WebhookEndpoint]:
    """Every endpoint, oldest first."""
    return list((await session.exec(select(WebhookEndpoint).order_by(col(WebhookEndpoint.id)))).all())


async def set_active(*, session: AsyncSession, endpoint_id: int, active: bool) -> bool:
    """Turn an endpoint on or off; commits. False when there is no such endpoint."""
    result = await session.exec(update(WebhookEndpoint).where(col(WebhookEndpoint.id) == endpoint_id).values(active=active))
    await session.commit()
    return bool(result.rowcount)


async def rotate_secret(*, session: AsyncSession, endpoint_id: int) -> str | None:
    """Give an endpoint a new signing secret (``new_secret``); commits. Every try from now on, a
    retry of an older delivery included, is signed with it (the deliverer reads the secret as it
    sends). Returns the new secret (to show once, never to keep), None when there is no such endpoint."""
    secret = new_secret()
    result = await session.exec(update(WebhookEndpoint).where(col(WebhookEndpoint.id) == endpoint_id).values(secret=secret))
    await session.commit()
    return secret if result.rowcount else None


async def delete_endpoint(*, session: AsyncSession, endpoint_id: int) -> bool:
    """Remove an endpoint; its deliveries not sent yet are marked ``failed`` ("endpoint removed")
    and the log keeps them all; commits. False when there is no such endpoint."""
    row = await session.get(WebhookEndpoint, endpoint_id)
    if row is None:
        return False
    await session.exec(
        update(WebhookDelivery)
        .where(col(WebhookDelivery.endpoint_id) == endpoint_id, col(WebhookDelivery.status).in_(["pending", "sending"]))
        .values(status="failed", last_result="endpoint removed", claimed_by=None)
    )
    await session.delete(row)
    await session.commit()
    return True


def event_body(event_id: str, event_type: str, data: dict[str, Any], at: datetime) -> str:
    """The JSON body of an event: ``{"id", "type", "created_at", "data"}`` (keys sorted)."""
    doc = {"id": event_id, "type": event_type, "created_at": as_utc(at).isoformat(timespec="seconds"), "data": data}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


async def enqueue(*, session: AsyncSession, event_type: str, data: dict[str, Any]) -> int:
    """Queue ``event_type`` for every active endpoint subscribed to it, in the caller's transaction
    (not committed here). Returns how many deliveries were queued (0: nobody listens; nothing
    written). Raises ValueError for an unknown event type."""
    if event_type not in WEBHOOK_EVENTS:
        raise ValueError(f"unknown webhook event {event_type!r}")
    endpoints = (await session.exec(select(WebhookEndpoint).where(col(WebhookEndpoint.active).is_(True)))).all()
    wanted = [e for e in endpoints if event_type in (e.events or [])]
    if not wanted:
        return 0
    now = utcnow()
    event_id = "evt_" + uuid.uuid4().hex
    body = event_body(event_id, event_type, data, now)
    for endpoint in wanted:
        session.add(WebhookDelivery(endpoint_id=endpoint.id or 0, event_id=event_id, event_type=event_type, body=body,
                                    next_attempt_at=now, created_at=now))
    return len(wanted)


def events_of_facts(facts: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The webhook events of audit facts (``hitl_app.store.audit_chain``): ``review.decided`` per
    review whose audit rows were written (one entry per card: tool, decision, reviewer, ``via``),
    ``review.expired`` / ``review.escalated`` per such review event."""
    out: list[tuple[str, dict[str, Any]]] = []
    for kind, body in facts:
        if kind == "decided":
            by_review: dict[str, list[dict[str, Any]]] = {}
            for row in body.get("audit", []):
                by_review.setdefault(str(row["interrupt_id"]), []).append(row)
            for interrupt_id, rows in by_review.items():
                out.append(("review.decided", {
                    "thread_id": rows[0]["thread_id"], "interrupt_id": interrupt_id,
                    "decisions": [{"card": r["action_index"], "tool": r["tool_name"], "decision": r["decision_type"],
                                   "reviewer": r["reviewer"], "via": r.get("via")} for r in rows],
                }))
        elif kind == "event" and body["event"]["kind"] in ("expired", "escalated"):
            event = body["event"]
            out.append((f"review.{event['kind']}", {
                "thread_id": event["thread_id"], "interrupt_id": event["interrupt_id"], "note": event["note"],
            }))
    return out


async def claim_due(
    *, session: AsyncSession, worker: str, now: datetime, lease: timedelta, limit: int = 20
) -> list[tuple[WebhookDelivery, WebhookEndpoint]]:
    """Claim due deliveries for ``worker``: ``pending`` ones due by ``now`` and ``sending`` ones
    whose claim is older than ``lease`` (a worker that died). Returns the ones THIS call claimed,
    with their endpoints; commits."""
    due = or_(
        (col(WebhookDelivery.status) == "pending") & (col(WebhookDelivery.next_attempt_at) <= now),
        (col(WebhookDelivery.status) == "sending") & (col(WebhookDelivery.claimed_at) < now - lease),
    )
    stmt = select(WebhookDelivery).where(due).order_by(col(WebhookDelivery.next_attempt_at)).limit(limit)
    taken = []
    for row in (await session.exec(stmt)).all():
        result = await session.exec(
            update(WebhookDelivery)
            .where(col(WebhookDelivery.id) == row.id, col(WebhookDelivery.status) == row.status,
                   col(WebhookDelivery.attempts) == row.attempts)
            .values(status="sending", claimed_by=worker[:100], claimed_at=now)
        )
        await session.commit()
        if result.rowcount:
            endpoint = await session.get(WebhookEndpoint, row.endpoint_id)
            if endpoint is not None:
                taken.append((row, endpoint))
    return taken


async def record_attempt(
    *, session: AsyncSession, delivery: WebhookDelivery, worker: str, status_code: int, result: str, duration_ms: int,
    delivered: bool, retry_at: datetime | None,
) -> None:
    """Log one try and move the delivery on: ``delivered``; ``pending`` again at ``retry_at``; or
    ``failed`` (``retry_at`` None). Only while ``worker`` still holds the claim; commits."""
    now = utcnow()
    session.add(WebhookAttempt(delivery_id=delivery.id or 0, at=now, status_code=status_code, result=result[:300],
                               duration_ms=duration_ms))
    status = "delivered" if delivered else "pending" if retry_at is not None else "failed"
    await session.exec(
        update(WebhookDelivery)
        .where(col(WebhookDelivery.id) == delivery.id, col(WebhookDelivery.status) == "sending",
               col(WebhookDelivery.claimed_by) == worker[:100])
        .values(status=status, attempts=WebhookDelivery.attempts + 1, last_result=result[:300],
                next_attempt_at=retry_at or now, delivered_at=now if delivered else None, claimed_by=None)
    )
    await session.commit()


async def send_again(*, session: AsyncSession, delivery_id: int) -> bool:
    """Queue a delivery again now (same event id, so a receiver that has it can drop it); commits.
    False when there is no such delivery or it is being sent right now."""
    result = await session.exec(
        update(WebhookDelivery)
        .where(col(WebhookDelivery.id) == delivery_id, col(WebhookDelivery.status) != "sending")
        .values(status="pending", next_attempt_at=utcnow())
    )
    await session.commit()
    return bool(result.rowcount)


async def recent_deliveries(*, session: AsyncSession, endpoint_id: int | None = None, limit: int = 50) -> list[WebhookDelivery]:
    """The latest deliveries (of one endpoint, or all), newest first."""
    stmt = select(WebhookDelivery).order_by(col(WebhookDelivery.id).desc()).limit(limit)
    if endpoint_id is not None:
        stmt = stmt.where(col(WebhookDelivery.endpoint_id) == endpoint_id)
    return list((await session.exec(stmt)).all())


async def attempts_of(*, session: AsyncSession, delivery_ids: Sequence[int]) -> list[WebhookAttempt]:
    """The tries of some deliveries, oldest first."""
    if not delivery_ids:
        return []
    stmt = select(WebhookAttempt).where(col(WebhookAttempt.delivery_id).in_(list(delivery_ids)))
    return list((await session.exec(stmt.order_by(col(WebhookAttempt.id)))).all())


WEBHOOK_TABLES = [table_of(WebhookEndpoint), table_of(WebhookDelivery), table_of(WebhookAttempt)]
"""The webhook tables, created with the app's (``hitl_app.store.db.create_schema``)."""
