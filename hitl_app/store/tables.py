"""SQLModel tables owned by the app (not by LangGraph).

App database (``DATABASE_URL``): ``ThreadRecord`` (thread index), ``ReviewRequestRecord`` (one row
per interrupt shown to a reviewer), ``ReviewReminder`` (who opened or was mailed about a pending
review), ``DecisionDraft`` (each person's decision on each card, kept
after the review is decided: the record of who approved), ``AuditRecord`` (one row per decided
card), ``OutboxMail`` (what
``send_email`` sent) and ``ToolEffect`` (the recorded result of each executed tool call, which makes
the demo tools idempotent per tool call id). ``OutboxMail`` and ``ToolEffect`` carry the owner's
key (``hitl_app.store.owners.owner_key``) so each owner sees only its own.

Demo databases (one SQLite file per owner, see ``hitl_app.store.owners``): ``Record``, the table
``execute_sql`` and ``read_data`` work on. They are kept apart so an approved ``DROP TABLE`` cannot
touch the app's own tables or another owner's data.

Times are timezone-aware UTC ``datetime`` values, both ways: every time column is ``UTCDateTime``,
which stores UTC and returns aware UTC values whatever the backend (SQLite keeps no zone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, Table, UniqueConstraint, text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (a naive value is taken to be UTC already)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp column that stores UTC and always reads back an aware UTC ``datetime``.

    PostgreSQL gets ``timestamp with time zone``; SQLite stores the UTC wall time as text and the
    zone is put back on read. A naive value written is taken to be UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """A datetime on its way into the database, as UTC."""
        return None if value is None else as_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """A datetime read back, timezone-aware in UTC (SQLite stores it without a zone)."""
        return None if value is None else as_utc(value)


class ThreadRecord(SQLModel, table=True):
    """One row per thread for the sidebar: title, last activity and whether a review is pending."""

    __tablename__ = "threads"

    thread_id: str = Field(primary_key=True, max_length=64)
    title: str = Field(default="New chat", max_length=200)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, index=True, sa_type=UTCDateTime)
    pending_review: bool = Field(default=False)
    owner: str | None = Field(default=None, max_length=100, index=True)
    review_lost_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    """When the agent deployment was found not to have this thread any more while a review waited in it
    (``hitl_app.threads.lost``); NULL otherwise, and again once a new review or turn starts."""


class ReviewRequestRecord(SQLModel, table=True):
    """One row per interrupt a reviewer was shown (written once, however often the node re-ran)."""

    __tablename__ = "review_requests"
    __table_args__ = (
        # the inbox's pages and count scan the undecided reviews oldest first (hitl_app.store.inbox_query);
        # decided history stays out of it. create_schema adds it to databases made before it.
        Index("ix_review_requests_open", "requested_at", "interrupt_id",
              sqlite_where=text("decided = 0"), postgresql_where=text("decided = false")),
    )

    interrupt_id: str = Field(primary_key=True, max_length=64)
    thread_id: str = Field(index=True, max_length=64)
    requested_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    action_count: int
    tool_names: str = Field(default="", max_length=2000)
    decided: bool = Field(default=False)
    cards: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    """One entry per action request, in order: ``{"name", "args", "allowed_decisions"}`` (what
    the inbox needs to apply the review rights without reading the checkpoint); NULL on rows an
    older version wrote until the review is read again."""
    trace_parent: str | None = Field(default=None, max_length=64)
    """The W3C ``traceparent`` of the run that raised the review (``hitl_app.traces``), when
    tracing was on: the review's span joins that run's trace."""


class AuditRecord(SQLModel, table=True):
    """One stored decision: who, when, what was asked, what was decided, how long it waited.

    ``(interrupt_id, action_index)`` is unique: inserting the rows of a submission is the claim that
    makes a review decided exactly once, across tabs, retries and worker processes.

    Who: ``reviewer`` is the display name(s) at the time (``"Dana and Lee"`` for a two-person
    approval), ``reviewer_id`` / ``reviewer_role`` the account id and role of the decision that
    decided the card, ``deciders`` every decision recorded on the card (``[{"account_id",
    "display_name", "role", "type"}]``, oldest first), and ``asked`` who the policy asked, as
    ``"|reviewer|admin|dana@example.com|"`` (roles that may decide, emails; for the audit filter).
    Rows written before accounts existed have NULL in these columns.
    """

    __tablename__ = "audit_records"
    __table_args__ = (UniqueConstraint("interrupt_id", "action_index", name="uq_audit_decision"),)

    id: int | None = Field(default=None, primary_key=True)
    thread_id: str = Field(index=True, max_length=64)
    interrupt_id: str = Field(index=True, max_length=64)
    action_index: int
    tool_call_id: str | None = Field(default=None, max_length=200)
    tool_name: str = Field(index=True, max_length=200)
    decision_type: str = Field(index=True, max_length=20)
    args_proposed: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    args_executed: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    message: str | None = None
    reviewer: str = Field(default="anonymous", max_length=100)
    reviewer_id: str | None = Field(default=None, max_length=100, index=True)
    reviewer_role: str | None = Field(default=None, max_length=20)
    deciders: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    asked: str | None = Field(default=None, max_length=2000)
    requested_at: datetime = Field(sa_type=UTCDateTime)
    decided_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    waited_seconds: float
    checkpoint_id: str | None = Field(default=None, max_length=100)
    via: str | None = Field(default=None, max_length=40, index=True)  # "grant:<id>", "deadline"; None: a person


class DecisionDraft(SQLModel, table=True):
    """One person's decision on one card of a pending interrupt (a server-side draft).

    ``seq`` numbers the decisions of one interrupt from 0; ``(interrupt_id, seq)`` is unique, so of
    two submissions that read the same drafts and write at once exactly one commits (the other
    re-reads and re-checks). ``decision`` is the decision payload as resumed (``{"type": ...}``).
    ``completing`` marks the rows written with the claim that decided the review (they go when the
    claim is released). ``via`` says how the decision arrived (``hitl_app.review.via``; None on rows
    written before it was kept). Rows stay after the review is decided: they say who approved.
    """

    __tablename__ = "decision_drafts"
    __table_args__ = (UniqueConstraint("interrupt_id", "seq", name="uq_draft_seq"),)

    id: int | None = Field(default=None, primary_key=True)
    thread_id: str = Field(index=True, max_length=64)
    interrupt_id: str = Field(index=True, max_length=64)
    seq: int
    action_index: int
    account_id: str = Field(index=True, max_length=100)
    display_name: str = Field(max_length=100)
    role: str = Field(default="", max_length=20)
    decision_type: str = Field(max_length=20)
    decision: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    decided_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    completing: bool = Field(default=False)
    via: str | None = Field(default=None, max_length=40)  # how it arrived: "page", "api", "mail" (review/via.py)


class ReviewReminder(SQLModel, table=True):
    """One person's notice state for one pending interrupt: ``opened`` (they opened the thread
    while it waited) or ``mailed`` (they were sent the reminder mail; ``sending`` while it goes).

    ``(interrupt_id, account_id)`` is unique: the row is written once, and the worker whose insert
    commits is the one that sends the mail, so a reviewer gets at most one mail per review however
    many workers look. A person who opened the review first is never mailed for it.
    """

    __tablename__ = "review_reminders"
    __table_args__ = (UniqueConstraint("interrupt_id", "account_id", name="uq_reminder_person"),)

    id: int | None = Field(default=None, primary_key=True)
    interrupt_id: str = Field(index=True, max_length=64)
    account_id: str = Field(max_length=100)
    state: str = Field(max_length=20)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class OutboxMail(SQLModel, table=True):
    """A mail ``send_email`` sent. ``tool_call_id`` is unique: a replayed call never sends twice."""

    __tablename__ = "outbox"

    id: int | None = Field(default=None, primary_key=True)
    tool_call_id: str = Field(unique=True, max_length=200)
    to: str = Field(max_length=320)
    subject: str = Field(default="", max_length=500)
    body: str = ""
    sent_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    owner: str = Field(default="anonymous", max_length=64, index=True)


class ToolEffect(SQLModel, table=True):
    """The result of an executed tool call, keyed by tool call id (replays return it unchanged)."""

    __tablename__ = "tool_effects"

    tool_call_id: str = Field(primary_key=True, max_length=200)
    tool_name: str = Field(max_length=200)
    result: str
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    owner: str = Field(default="anonymous", max_length=64, index=True)


class Record(SQLModel, table=True):
    """A row of the demo ``records`` table (lives in an owner's demo database, not the app database)."""

    __tablename__ = "records"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    category: str
    amount: float


def table_of(model: type[SQLModel]) -> Table:
    """The SQLAlchemy ``Table`` of a ``table=True`` model."""
    return model.__table__  # type: ignore[attr-defined]  # set by SQLModel's metaclass, not declared in its types


APP_TABLES = [
    table_of(ThreadRecord),
    table_of(ReviewRequestRecord),
    table_of(DecisionDraft),
    table_of(AuditRecord),
    table_of(ReviewReminder),
    table_of(OutboxMail),
    table_of(ToolEffect),
]
"""Tables created in the app database (``Record`` is not one of them)."""
