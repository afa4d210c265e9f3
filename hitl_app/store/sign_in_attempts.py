"""The sign-in attempts table and its data functions: every password try, counted for the rate limits.

``SignInAttempt`` is one try (when, which normalised email, which client address, whether it
succeeded). ``hitl_app.auth.attempts`` counts them per (account, address), per account and per
address before any password is checked; these functions are the store side of that rule:
small, keyword-only, taking an open ``AsyncSession``; the caller commits. Times are
timezone-aware UTC ``datetime`` values. The table is created with the account tables
(``store/accounts.py ACCOUNT_TABLES``).
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import delete, func, update
from sqlmodel import Field, SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.tables import utcnow


class SignInAttempt(SQLModel, table=True):
    """One sign-in try: when, for which email (normalised), from which client address, and result."""

    __tablename__ = "sign_in_attempts"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, index=True)
    email_key: str = Field(max_length=320, index=True)
    client: str = Field(default="", max_length=100, index=True)
    succeeded: bool = Field(default=False)


async def lock_attempt_keys(*, session: AsyncSession, keys: list[str]) -> None:
    """Serialise check-and-count of sign-in tries for these keys across workers, inside the
    caller's transaction (held until it commits or rolls back).

    PostgreSQL: one transaction-scoped advisory lock per key, taken in a fixed order (no deadlock
    between two callers with overlapping keys). SQLite: a no-op write, which takes the database's
    write lock (waiting up to the busy timeout) before the caller counts.
    """
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        ids = sorted({int.from_bytes(hashlib.sha256(k.encode()).digest()[:8], "big", signed=True) for k in keys})
        for lock_id in ids:
            await session.exec(select(func.pg_advisory_xact_lock(lock_id)))
    else:
        await session.exec(delete(SignInAttempt).where(col(SignInAttempt.id) < 0))


async def add_attempt(*, session: AsyncSession, email_key: str, client: str, succeeded: bool, at: datetime) -> int:
    """Record one sign-in try; returns its id."""
    row = SignInAttempt(at=at, email_key=email_key, client=client, succeeded=succeeded)
    session.add(row)
    await session.flush()
    return int(row.id or 0)


async def mark_attempt_succeeded(*, session: AsyncSession, attempt_id: int) -> None:
    """Turn a try recorded as failed (counted while it was checked) into a success."""
    await session.exec(update(SignInAttempt).where(col(SignInAttempt.id) == attempt_id).values(succeeded=True))


async def failure_times(
    *, session: AsyncSession, since: datetime, email_key: str | None = None, client: str | None = None
) -> list[datetime]:
    """Times of failed tries after ``since`` for an email and/or a client address, oldest first."""
    stmt = select(SignInAttempt.at).where(col(SignInAttempt.at) > since, col(SignInAttempt.succeeded).is_(False))
    if email_key is not None:
        stmt = stmt.where(SignInAttempt.email_key == email_key)
    if client is not None:
        stmt = stmt.where(SignInAttempt.client == client)
    return list((await session.exec(stmt.order_by(col(SignInAttempt.at)))).all())


async def forget_failures(*, session: AsyncSession, email_key: str, client: str | None = None) -> None:
    """Delete the failed tries of an email (called after a successful sign-in); only those from
    ``client`` when given (so a success does not wipe what another address tried)."""
    stmt = delete(SignInAttempt).where(
        col(SignInAttempt.email_key) == email_key, col(SignInAttempt.succeeded).is_(False)
    )
    if client is not None:
        stmt = stmt.where(col(SignInAttempt.client) == client)
    await session.exec(stmt)


async def prune_attempts(*, session: AsyncSession, before: datetime) -> None:
    """Delete tries older than ``before`` (they no longer count toward any window)."""
    await session.exec(delete(SignInAttempt).where(col(SignInAttempt.at) < before))
