"""Sign-in sessions: sign in with a password, resolve a session token on every event, sign out.

A session is a row in the app database keyed by the SHA-256 of a random token; the browser holds
the token in an HttpOnly cookie. Sessions expire after ``AuthConfig.session_ttl`` without activity
(sliding: each resolve moves the expiry, at most once a minute per session). A disabled account's
sessions stop resolving at once and are deleted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth.passwords import verify_password
from hitl_app.auth.ratelimit import retry_after
from hitl_app.auth.text import email_key
from hitl_app.auth.tokens import hash_token, new_token
from hitl_app.auth.types import AccountDisabled, AuthConfig, Principal, Role, TooManyAttempts, WrongCredentials
from hitl_app.store import accounts as db
from hitl_app.store.tables import utcnow

SLIDE_STEP = timedelta(seconds=60)
"""A session's expiry is moved forward only when its last recorded activity is older than this."""

MAX_TOKEN_LENGTH = 200
"""Longer presented tokens are refused without a database look-up."""


def aware(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (naive values from a database are taken as UTC)."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def principal_of(account: db.Account) -> Principal:
    """The ``Principal`` for a stored account."""
    return Principal(
        account_id=int(account.id or 0),
        display_name=account.display_name,
        role=Role(account.role),
        email=account.email,
        must_change_password=account.must_change_password,
    )


def _session(engine: AsyncEngine) -> AsyncSession:
    return AsyncSession(engine, expire_on_commit=False)


async def open_session(
    *, session: AsyncSession, account_id: int, client: str, config: AuthConfig, now: datetime | None = None
) -> str:
    """Insert a new session row for ``account_id`` and return its token (the caller commits)."""
    now = now or utcnow()
    token = new_token()
    row = db.AuthSession(
        token_hash=hash_token(token), account_id=account_id, created_at=now, last_seen_at=now,
        expires_at=now + config.session_ttl, client=(client or "")[:100],
    )
    await db.add_session(session=session, row=row)
    return token


async def _wait_before_next_try(s: AsyncSession, *, key: str, client: str, now: datetime, cfg: AuthConfig) -> timedelta | None:
    since = now - cfg.failure_window
    waits = []
    if key:
        per_account = await db.failure_times(session=s, since=since, email_key=key)
        waits.append(retry_after(per_account, now=now, limit=cfg.max_failures_per_account, window=cfg.failure_window))
    if client:
        per_address = await db.failure_times(session=s, since=since, client=client)
        waits.append(retry_after(per_address, now=now, limit=cfg.max_failures_per_address, window=cfg.failure_window))
    found = [w for w in waits if w is not None]
    return max(found) if found else None


async def sign_in(*, engine: AsyncEngine, email: str, password: str, client: str, config: AuthConfig | None = None) -> str:
    """Check an email and password and open a session; return the session token.

    Args:
        engine: the app database's async engine.
        email: as typed (compared case-insensitively).
        password: as typed.
        client: the client's address (for the per-address limit; "" skips that limit).
        config: limits and session lifetime (default: from the settings).

    Raises:
        TooManyAttempts: too many failures for this email or this address in the window (checked
            before the password, and such a refused try is not counted).
        WrongCredentials: no such account, no password on it, or a wrong password.
        AccountDisabled: the password was right but an admin disabled the account.
    """
    cfg = config or AuthConfig.from_settings()
    now, key = utcnow(), email_key(email)
    client = (client or "")[:100]
    async with _session(engine) as s:
        wait = await _wait_before_next_try(s, key=key, client=client, now=now, cfg=cfg)
        account = await db.find_account_by_email(session=s, email_key=key) if key else None
    if wait is not None:
        raise TooManyAttempts(wait)
    ok = await verify_password(password or "", account.password_hash if account else None)
    async with _session(engine) as s:
        if not ok or account is None:
            await db.add_attempt(session=s, email_key=key, client=client, succeeded=False, at=now)
            await db.prune_attempts(session=s, before=now - max(cfg.failure_window, timedelta(days=1)))
            await s.commit()
            raise WrongCredentials()
        if account.disabled:
            raise AccountDisabled()
        await db.forget_failures(session=s, email_key=key)
        await db.add_attempt(session=s, email_key=key, client=client, succeeded=True, at=now)
        token = await open_session(session=s, account_id=int(account.id or 0), client=client, config=cfg, now=now)
        await s.commit()
    return token


async def resolve_session(*, engine: AsyncEngine, token: str | None, config: AuthConfig | None = None) -> Principal | None:
    """The signed-in ``Principal`` for a session token, or None (call it on every event).

    None when the token is empty, unknown, expired (the row is deleted) or its account is disabled
    (all of that account's sessions are deleted). Otherwise the expiry slides to now + session_ttl.
    """
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    cfg = config or AuthConfig.from_settings()
    now, token_hash = utcnow(), hash_token(token)
    async with _session(engine) as s:
        found = await db.find_session(session=s, token_hash=token_hash)
        if found is None:
            return None
        row, account = found
        if aware(row.expires_at) <= now or account.disabled:
            if account.disabled:
                await db.delete_sessions_of(session=s, account_id=int(account.id or 0))
            else:
                await db.delete_session(session=s, token_hash=token_hash)
            await s.commit()
            return None
        if now - aware(row.last_seen_at) >= SLIDE_STEP:
            await db.extend_session(session=s, token_hash=token_hash, now=now, expires_at=now + cfg.session_ttl)
            await s.commit()
        return principal_of(account)


async def sign_out(*, engine: AsyncEngine, token: str | None) -> bool:
    """End the session of ``token``; True when a session ended (unknown tokens are ignored)."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return False
    async with _session(engine) as s:
        gone = await db.delete_session(session=s, token_hash=hash_token(token))
        await s.commit()
    return gone > 0


async def sign_out_everywhere(*, engine: AsyncEngine, account_id: int) -> int:
    """End every session of an account (every browser and tab); returns how many ended."""
    async with _session(engine) as s:
        gone = await db.delete_sessions_of(session=s, account_id=account_id)
        await s.commit()
    return gone


async def prune_expired_sessions(*, engine: AsyncEngine) -> int:
    """Delete expired session rows (housekeeping; resolve refuses them anyway); returns how many."""
    async with _session(engine) as s:
        gone = await db.delete_expired_sessions(session=s, now=utcnow())
        await s.commit()
    return gone
