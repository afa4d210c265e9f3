"""Sign-in sessions: sign in with a password, resolve a session token on every event, sign out.

A session is a row in the app database keyed by the SHA-256 of a random token; the browser holds
the token in an HttpOnly cookie. Sessions expire after ``AuthConfig.session_ttl`` without activity
(sliding: each resolve moves the expiry, at most once a minute per session), and in any case
``AuthConfig.session_max_age`` after sign-in (then the person signs in again). A disabled account's
sessions stop resolving at once and are deleted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import attempts
from hitl_app.auth.passwords import verify_password
from hitl_app.auth.text import MAX_PASSWORD, email_key
from hitl_app.auth.tokens import hash_token, new_token
from hitl_app.auth.types import AccountDisabled, AuthConfig, Principal, Role, WrongCredentials
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
        expires_at=now + min(config.session_ttl, config.session_max_age), client=(client or "")[:100],
    )
    await db.add_session(session=session, row=row)
    return token


async def start_session(*, engine: AsyncEngine, account_id: int, client: str, config: AuthConfig | None = None) -> str:
    """Open a session for an account whose password was just set (first run, accepted invite),
    without checking that password again; returns the session token."""
    cfg = config or AuthConfig.from_settings()
    async with _session(engine) as s:
        token = await open_session(session=s, account_id=account_id, client=client, config=cfg)
        await s.commit()
    return token


async def sign_in(*, engine: AsyncEngine, email: str, password: str, client: str, config: AuthConfig | None = None) -> str:
    """Check an email and password and open a session; return the session token.

    The try is counted before the password is checked (``hitl_app.auth.attempts.reserve``), so
    simultaneous guesses cannot get past the limits.

    Args:
        engine: the app database's async engine.
        email: as typed (compared case-insensitively).
        password: as typed; one longer than ``MAX_PASSWORD`` is wrong without being checked.
        client: the client's address (for the per-address limits; "" from the command line).
        config: limits and session lifetime (default: from the settings).

    Raises:
        TooManyAttempts: too many failures for this email from this address, for this email from
            everywhere, or from this address, in the window (checked before the password; such a
            refused try is not counted).
        WrongCredentials: no such account, no password on it, or a wrong password.
        AccountDisabled: the password was right but an admin disabled the account.
    """
    cfg = config or AuthConfig.from_settings()
    if len(password or "") > MAX_PASSWORD:
        raise WrongCredentials()
    now, key = utcnow(), email_key(email)
    attempt = await attempts.reserve(engine=engine, email_key=key, client=client, config=cfg, now=now)
    async with _session(engine) as s:
        account = await db.find_account_by_email(session=s, email_key=key) if key else None
    ok = await verify_password(password or "", account.password_hash if account else None)
    if not ok or account is None:
        raise WrongCredentials()
    async with _session(engine) as s:
        await attempts.settle_success_in(s, attempt)
        if account.disabled:
            await s.commit()
            raise AccountDisabled()
        token = await open_session(session=s, account_id=int(account.id or 0), client=attempt.client, config=cfg, now=now)
        await s.commit()
    return token


async def resolve_session(*, engine: AsyncEngine, token: str | None, config: AuthConfig | None = None) -> Principal | None:
    """The signed-in ``Principal`` for a session token, or None (call it on every event).

    None when the token is empty, unknown, expired (the row is deleted), older than
    ``session_max_age`` however active (deleted too), or its account is disabled (all of that
    account's sessions are deleted). Otherwise the expiry slides to now + session_ttl, never past
    the session's absolute end (sign-in + session_max_age).
    """
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    return await resolve_session_hash(engine=engine, token_hash=hash_token(token), config=config)


async def resolve_session_hash(*, engine: AsyncEngine, token_hash: str, config: AuthConfig | None = None) -> Principal | None:
    """``resolve_session`` for a token known only by its SHA-256 (64 hex characters, what the
    database keeps; the websocket keeps no raw token, see ``hitl_app.ui.state.socket_gate``)."""
    if len(token_hash) != 64:
        return None
    cfg = config or AuthConfig.from_settings()
    now = utcnow()
    async with _session(engine) as s:
        found = await db.find_session(session=s, token_hash=token_hash)
        if found is None:
            return None
        row, account = found
        ends_at = aware(row.created_at) + cfg.session_max_age
        if aware(row.expires_at) <= now or ends_at <= now or account.disabled:
            if account.disabled:
                await db.delete_sessions_of(session=s, account_id=int(account.id or 0))
            else:
                await db.delete_session(session=s, token_hash=token_hash)
            await s.commit()
            return None
        if now - aware(row.last_seen_at) >= SLIDE_STEP:
            expires_at = min(now + cfg.session_ttl, ends_at)
            await db.extend_session(session=s, token_hash=token_hash, now=now, expires_at=expires_at)
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
