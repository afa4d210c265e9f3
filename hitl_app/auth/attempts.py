"""Password tries counted before they are checked: the sign-in limits, kept under concurrency.

Every route that checks or hashes a password (sign-in, first run, accepting an invite, changing a
password) first calls ``reserve``: in ONE transaction, under a lock on the account's and the
address's keys (advisory locks on PostgreSQL, the write lock on SQLite, so it holds across app
workers), it counts the recent failures and, when a try is allowed, records this try as a failure
("in flight"). Only then is the password checked. A try that succeeds is settled with
``settle_success`` (it then stops counting, and the failures of that account from that address are
forgotten). So N simultaneous guesses check at most the limit, and the rest get ``TooManyAttempts``.

Limits (``AuthConfig``), each over the sliding ``failure_window``:

- ``max_failures_per_account`` per (account, address) pair: a stranger guessing from another
  address cannot lock the real person out;
- ``max_failures_per_account_anywhere`` per account from all addresses together (a much higher
  ceiling against guessing from many addresses);
- ``max_failures_per_address`` per address over all accounts and routes.
"""

# Tested by: tests/integration/auth/test_signin_limits.py

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth.ratelimit import retry_after
from hitl_app.auth.types import AuthConfig, TooManyAttempts
from hitl_app.store import sign_in_attempts as db
from hitl_app.store.tables import utcnow

KEEP_ATTEMPTS = timedelta(days=1)
"""Tries older than this (or than the window, if longer) are deleted as new ones come in."""


@dataclass(frozen=True)
class Attempt:
    """One try recorded as in flight: its row id, the account key ("" for none) and the address."""

    attempt_id: int
    email_key: str
    client: str


async def _wait(s: AsyncSession, *, key: str, client: str, now: datetime, cfg: AuthConfig) -> timedelta | None:
    since, waits = now - cfg.failure_window, []
    pair = await db.failure_times(session=s, since=since, email_key=key, client=client)
    waits.append(retry_after(pair, now=now, limit=cfg.max_failures_per_account, window=cfg.failure_window))
    if key:
        anywhere = await db.failure_times(session=s, since=since, email_key=key)
        waits.append(retry_after(anywhere, now=now, limit=cfg.max_failures_per_account_anywhere, window=cfg.failure_window))
    if client:
        per_address = await db.failure_times(session=s, since=since, client=client)
        waits.append(retry_after(per_address, now=now, limit=cfg.max_failures_per_address, window=cfg.failure_window))
    found = [w for w in waits if w is not None]
    return max(found) if found else None


async def reserve(
    *, engine: AsyncEngine, email_key: str, client: str, config: AuthConfig, now: datetime | None = None
) -> Attempt:
    """Count one password try before it is checked (see the module docstring).

    Args:
        engine: the app database's async engine.
        email_key: the account's normalised email ("" when the try names no account, e.g. an invite).
        client: the client's address ("" from the command line), cut to 100 characters.
        config: the limits and window.
        now: the time of the try (default: now, aware UTC).

    Returns:
        The ``Attempt``, recorded as a failure until ``settle_success`` is called for it.

    Raises:
        TooManyAttempts: a limit is reached (this refused try is not counted).
    """
    now, client = now or utcnow(), (client or "")[:100]
    async with AsyncSession(engine, expire_on_commit=False) as s:
        await db.lock_attempt_keys(session=s, keys=[f"account:{email_key}", f"address:{client}"])
        wait = await _wait(s, key=email_key, client=client, now=now, cfg=config)
        if wait is not None:
            await s.rollback()
            raise TooManyAttempts(wait)
        attempt_id = await db.add_attempt(session=s, email_key=email_key, client=client, succeeded=False, at=now)
        await db.prune_attempts(session=s, before=now - max(config.failure_window, KEEP_ATTEMPTS))
        await s.commit()
    return Attempt(attempt_id=attempt_id, email_key=email_key, client=client)


async def settle_success_in(s: AsyncSession, attempt: Attempt) -> None:
    """Within the caller's transaction: ``attempt`` succeeded, so it stops counting, and the
    failures of its account from its address are forgotten (the caller commits)."""
    await db.mark_attempt_succeeded(session=s, attempt_id=attempt.attempt_id)
    if attempt.email_key:
        await db.forget_failures(session=s, email_key=attempt.email_key, client=attempt.client)


async def settle_success(*, engine: AsyncEngine, attempt: Attempt) -> None:
    """``settle_success_in`` in its own transaction."""
    async with AsyncSession(engine, expire_on_commit=False) as s:
        await settle_success_in(s, attempt)
        await s.commit()
