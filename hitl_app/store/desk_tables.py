"""Tables of the review desk: grants, deadline claims, undo windows and review events.

- ``GrantRecord``: an "always allow" grant (scope, tool, who made it, when it ends, how often used).
- ``ReviewExpiry``: the claim on a review's deadline; ``interrupt_id`` is the key, so of any number
  of sweepers (workers, restarts) exactly one inserts it and acts on the expiry.
- ``ScheduledResume``: a submitted review waiting out its undo window; the sweeper that moves its
  ``status`` from ``pending`` to ``running`` (a conditional UPDATE) is the one that resumes it,
  and Undo moves it to ``undone`` the same way, so exactly one of them happens.
- ``ReviewEvent``: what happened to a review besides its decisions (submitted with an undo
  window, undone, expired, escalated), with who did it; read with the audit.

Times are aware UTC (``UTCDateTime``), as in ``hitl_app.store.tables``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from hitl_app.store.tables import UTCDateTime, table_of, utcnow


class GrantRecord(SQLModel, table=True):
    """One grant. ``scope``: ``call`` (``thread_id`` + ``args_hash``), ``thread`` (``thread_id``)
    or ``person`` (every thread of ``owner_id``). ``interrupt_id`` is the review it was made on;
    ``completing`` is True when it was made with the submission that decided that review's last
    card (an Undo of that submission, or a released claim, withdraws it; a grant made with an
    earlier, partial submission stands as long as that approval does)."""

    __tablename__ = "grants"

    id: int | None = Field(default=None, primary_key=True)
    scope: str = Field(max_length=10)
    tool: str = Field(index=True, max_length=200)
    thread_id: str | None = Field(default=None, index=True, max_length=64)
    owner_id: str = Field(index=True, max_length=100)
    owner_name: str = Field(default="", max_length=100)
    args_hash: str | None = Field(default=None, max_length=64)
    args: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    granted_by_id: str = Field(index=True, max_length=100)
    granted_by_name: str = Field(max_length=100)
    granted_by_role: str = Field(default="", max_length=20)
    interrupt_id: str | None = Field(default=None, index=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    revoked_by: str | None = Field(default=None, max_length=100)
    uses: int = Field(default=0)
    last_used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    completing: bool | None = Field(default=None)


class ReviewExpiry(SQLModel, table=True):
    """The claim on one review's deadline (inserted once; ``status``: ``acting`` while the worker
    works, then ``expired``, ``escalated`` or ``skipped`` when the review was decided first)."""

    __tablename__ = "review_expiries"

    interrupt_id: str = Field(primary_key=True, max_length=64)
    thread_id: str = Field(index=True, max_length=64)
    status: str = Field(default="acting", max_length=12)
    outcome: str = Field(default="reject", max_length=12)
    escalate_to: str | None = Field(default=None, max_length=20)
    worker: str = Field(default="", max_length=100)
    due_at: datetime = Field(sa_type=UTCDateTime)
    claimed_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class ScheduledResume(SQLModel, table=True):
    """A decided review whose run starts at ``due_at`` unless undone. ``decisions`` are the
    payloads to resume with; ``status``: ``pending`` -> ``running`` -> ``done``, or ``undone``."""

    __tablename__ = "scheduled_resumes"

    interrupt_id: str = Field(primary_key=True, max_length=64)
    thread_id: str = Field(index=True, max_length=64)
    owner_id: str = Field(default="", max_length=100)
    decisions: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    status: str = Field(default="pending", index=True, max_length=10)
    due_at: datetime = Field(sa_type=UTCDateTime, index=True)
    by_id: str = Field(default="", max_length=100)
    by_name: str = Field(default="", max_length=100)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    claimed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class ReviewEvent(SQLModel, table=True):
    """Something that happened to a review: ``kind`` is ``submitted`` (with an undo window),
    ``undone``, ``resumed``, ``expired`` or ``escalated``; who (``""`` = the policy) and a note."""

    __tablename__ = "review_events"

    id: int | None = Field(default=None, primary_key=True)
    thread_id: str = Field(index=True, max_length=64)
    interrupt_id: str = Field(index=True, max_length=64)
    kind: str = Field(max_length=12)
    account_id: str = Field(default="", max_length=100)
    display_name: str = Field(default="", max_length=100)
    role: str = Field(default="", max_length=20)
    note: str = Field(default="", max_length=500)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)


DESK_TABLES = [table_of(GrantRecord), table_of(ReviewExpiry), table_of(ScheduledResume), table_of(ReviewEvent)]
"""The desk's tables, created with the app's (``hitl_app.store.db.create_schema``)."""
