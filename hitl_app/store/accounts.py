"""SQLModel tables and data functions for accounts, sign-in sessions and invites
(the sign-in attempts that the rate limits count are in ``store/sign_in_attempts.py``).

Tables (created with the app's other tables by ``create_schema``):

- ``Account``: one person. ``email_key`` is the normalised email (lower case) and is unique, so
  emails compare case-insensitively on SQLite and PostgreSQL alike. ``password_hash`` is NULL for
  accounts that only sign in through OpenID Connect (then ``oidc_issuer``/``oidc_subject`` are set).
- ``AuthSession``: one signed-in browser. Only the SHA-256 of the session token is stored, so a
  copy of the database does not hand out working sessions.
- ``Invite``: a one-time link to create an account; only the SHA-256 of its token is stored.

The functions are small, keyword-only and take an open ``AsyncSession``; the caller commits.
Times are timezone-aware UTC ``datetime`` values.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, UniqueConstraint, delete, func, or_, update
from sqlmodel import Field, SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.sign_in_attempts import SignInAttempt
from hitl_app.store.tables import table_of, utcnow


class Account(SQLModel, table=True):
    """A person who signs in. ``role`` is one of ``member``, ``reviewer``, ``admin``."""

    __tablename__ = "accounts"
    __table_args__ = (UniqueConstraint("oidc_issuer", "oidc_subject", name="uq_account_oidc"),)

    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(max_length=320)
    email_key: str = Field(max_length=320, unique=True)
    display_name: str = Field(max_length=100)
    role: str = Field(default="member", max_length=20)
    disabled: bool = Field(default=False)
    password_hash: str | None = Field(default=None, max_length=512)
    must_change_password: bool = Field(default=False)
    oidc_issuer: str | None = Field(default=None, max_length=500)
    oidc_subject: str | None = Field(default=None, max_length=255)
    created_at: datetime = Field(default_factory=utcnow)


class AuthSession(SQLModel, table=True):
    """A signed-in browser: the token's SHA-256 (hex), its account and its sliding expiry."""

    __tablename__ = "auth_sessions"

    token_hash: str = Field(primary_key=True, max_length=64)
    account_id: int = Field(foreign_key="accounts.id", index=True)
    created_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime = Field(index=True)
    client: str = Field(default="", max_length=100)


class Invite(SQLModel, table=True):
    """A one-time invite for ``email`` with ``role``; ``used_at`` is set when it is accepted,
    ``revoked_at`` when an admin took it back (then it never works)."""

    __tablename__ = "invites"

    token_hash: str = Field(primary_key=True, max_length=64)
    email: str = Field(max_length=320)
    email_key: str = Field(max_length=320, index=True)
    role: str = Field(max_length=20)
    created_by: int | None = Field(default=None)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    used_at: datetime | None = Field(default=None)
    revoked_at: datetime | None = Field(default=None)


ACCOUNT_TABLES = [
    table_of(Account),
    table_of(AuthSession),
    table_of(Invite),
    table_of(SignInAttempt),
]
"""The tables of this module, in creation order (``create_schema`` adds them to the app's)."""


# --- accounts ---------------------------------------------------------------------------------


async def count_accounts(*, session: AsyncSession) -> int:
    """How many accounts exist (disabled ones included)."""
    return int((await session.exec(select(func.count()).select_from(Account))).one())


async def count_active_admins(*, session: AsyncSession) -> int:
    """How many accounts have role ``admin`` and are not disabled."""
    stmt = select(func.count()).select_from(Account).where(Account.role == "admin", col(Account.disabled).is_(False))
    return int((await session.exec(stmt)).one())


async def get_account(*, session: AsyncSession, account_id: int) -> Account | None:
    """The account with this id, or None."""
    return await session.get(Account, account_id)


async def accounts_by_id(*, session: AsyncSession, account_ids: list[int]) -> list[Account]:
    """The accounts with these ids (missing ids are left out), in no particular order."""
    if not account_ids:
        return []
    return list((await session.exec(select(Account).where(col(Account.id).in_(account_ids)))).all())


async def find_account_by_email(*, session: AsyncSession, email_key: str) -> Account | None:
    """The account whose normalised email is ``email_key``, or None."""
    return (await session.exec(select(Account).where(Account.email_key == email_key))).first()


async def find_account_by_oidc(*, session: AsyncSession, issuer: str, subject: str) -> Account | None:
    """The account linked to the OpenID Connect identity ``(issuer, subject)``, or None."""
    stmt = select(Account).where(Account.oidc_issuer == issuer, Account.oidc_subject == subject)
    return (await session.exec(stmt)).first()


async def list_accounts(*, session: AsyncSession) -> list[Account]:
    """Every account, oldest first."""
    return list((await session.exec(select(Account).order_by(col(Account.id)))).all())


async def add_account(*, session: AsyncSession, account: Account) -> Account:
    """Insert ``account`` and flush, so its ``id`` is set.

    Raises:
        sqlalchemy.exc.IntegrityError: the email (or OIDC identity) is already taken.
    """
    session.add(account)
    await session.flush()
    return account


async def lock_for_first_account(*, session: AsyncSession) -> None:
    """Serialise "create the first account" across workers, inside the caller's transaction.

    PostgreSQL: a transaction-scoped advisory lock. SQLite: a no-op write, which takes the
    database's write lock (waiting up to the busy timeout) before the caller counts accounts.
    """
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        await session.exec(select(func.pg_advisory_xact_lock(FIRST_ACCOUNT_LOCK_KEY)))
    else:
        await session.exec(delete(Account).where(col(Account.id) < 0))


FIRST_ACCOUNT_LOCK_KEY = 7_463_521_002
"""PostgreSQL advisory-lock key held while the first (admin) account is created."""


# --- sessions ---------------------------------------------------------------------------------


async def add_session(*, session: AsyncSession, row: AuthSession) -> None:
    """Insert a sign-in session row."""
    session.add(row)
    await session.flush()


async def find_session(*, session: AsyncSession, token_hash: str) -> tuple[AuthSession, Account] | None:
    """The session with this token hash and its account, or None (expiry is not checked here)."""
    stmt = (
        select(AuthSession, Account)
        .join(Account, col(Account.id) == col(AuthSession.account_id))
        .where(AuthSession.token_hash == token_hash)
    )
    row = (await session.exec(stmt)).first()
    return None if row is None else (row[0], row[1])


async def extend_session(*, session: AsyncSession, token_hash: str, now: datetime, expires_at: datetime) -> None:
    """Record activity on a session and move its expiry to ``expires_at``."""
    stmt = (
        update(AuthSession)
        .where(col(AuthSession.token_hash) == token_hash)
        .values(last_seen_at=now, expires_at=expires_at)
    )
    await session.exec(stmt)


async def delete_session(*, session: AsyncSession, token_hash: str) -> int:
    """Delete one session; returns how many rows went (0 or 1)."""
    result = await session.exec(delete(AuthSession).where(col(AuthSession.token_hash) == token_hash))
    return int(result.rowcount or 0)


async def delete_sessions_of(*, session: AsyncSession, account_id: int) -> int:
    """Delete every session of an account; returns how many went."""
    result = await session.exec(delete(AuthSession).where(col(AuthSession.account_id) == account_id))
    return int(result.rowcount or 0)


async def delete_expired_sessions(*, session: AsyncSession, now: datetime) -> int:
    """Delete sessions whose expiry is at or before ``now``; returns how many went."""
    result = await session.exec(delete(AuthSession).where(col(AuthSession.expires_at) <= now))
    return int(result.rowcount or 0)


async def session_hashes_of(*, session: AsyncSession, account_id: int) -> list[str]:
    """The token hashes of an account's sessions."""
    stmt = select(AuthSession.token_hash).where(AuthSession.account_id == account_id)
    return list((await session.exec(stmt)).all())


async def count_sessions_of(*, session: AsyncSession, account_id: int) -> int:
    """How many session rows an account has (expired ones included until they are pruned)."""
    stmt = select(func.count()).select_from(AuthSession).where(AuthSession.account_id == account_id)
    return int((await session.exec(stmt)).one())


# --- invites ----------------------------------------------------------------------------------


async def add_invite(*, session: AsyncSession, invite: Invite) -> None:
    """Insert an invite row."""
    session.add(invite)
    await session.flush()


def maker_may_invite() -> ColumnElement[bool]:
    """SQL condition on ``Invite``: its maker may still invite (the command line, ``created_by``
    NULL, or an account that is an active admin now)."""
    active_admin = (
        select(Account.id)
        .where(col(Account.id) == col(Invite.created_by), Account.role == "admin", col(Account.disabled).is_(False))
        .exists()
    )
    return or_(col(Invite.created_by).is_(None), active_admin)


async def use_invite(*, session: AsyncSession, token_hash: str, now: datetime) -> Invite | None:
    """Mark the invite used, if it exists, is unused, not revoked, has not expired and its maker
    may still invite (``maker_may_invite``); return it, else None.

    A conditional UPDATE, so of two concurrent accepts exactly one gets the invite.
    """
    stmt = (
        update(Invite)
        .where(
            col(Invite.token_hash) == token_hash,
            col(Invite.used_at).is_(None),
            col(Invite.revoked_at).is_(None),
            col(Invite.expires_at) > now,
            maker_may_invite(),
        )
        .values(used_at=now)
    )
    result = await session.exec(stmt)
    if not result.rowcount:
        return None
    return await session.get(Invite, token_hash)


async def invite_usable(*, session: AsyncSession, token_hash: str, now: datetime) -> bool:
    """True when the invite exists, is unused, not revoked and not expired at ``now`` (a cheap
    look-up before any password is hashed; ``use_invite`` decides for real)."""
    stmt = select(Invite.token_hash).where(
        col(Invite.token_hash) == token_hash, col(Invite.used_at).is_(None), col(Invite.revoked_at).is_(None),
        col(Invite.expires_at) > now, maker_may_invite(),
    )
    return (await session.exec(stmt)).first() is not None


async def get_invite(*, session: AsyncSession, token_hash: str) -> Invite | None:
    """The invite row with this token hash (any state), or None."""
    return await session.get(Invite, token_hash)


async def pending_invites(*, session: AsyncSession, now: datetime, email_key: str | None = None) -> list[Invite]:
    """Invites not used, not revoked and not expired at ``now``, whose email has no account yet
    (emails compare by ``email_key``), soonest to expire first; only those for ``email_key`` when given."""
    has_account = select(Account.id).where(col(Account.email_key) == col(Invite.email_key)).exists()
    stmt = (
        select(Invite)
        .where(col(Invite.used_at).is_(None), col(Invite.revoked_at).is_(None), col(Invite.expires_at) > now, ~has_account)
        .order_by(col(Invite.expires_at))
    )
    if email_key is not None:
        stmt = stmt.where(col(Invite.email_key) == email_key)
    return list((await session.exec(stmt)).all())


async def revoke_invites_by(*, session: AsyncSession, account_id: int, now: datetime) -> int:
    """Revoke every unused, unrevoked invite ``account_id`` made (their maker was disabled or is no
    admin any more); returns how many; not committed."""
    result = await session.exec(
        update(Invite)
        .where(col(Invite.created_by) == account_id, col(Invite.used_at).is_(None), col(Invite.revoked_at).is_(None))
        .values(revoked_at=now)
    )
    return int(result.rowcount or 0)


async def revoke_invite(*, session: AsyncSession, token_hash: str, now: datetime) -> bool:
    """Revoke a pending invite (a conditional UPDATE: an invite accepted meanwhile stays used).
    True when this call revoked it; not committed."""
    result = await session.exec(
        update(Invite)
        .where(col(Invite.token_hash) == token_hash, col(Invite.used_at).is_(None), col(Invite.revoked_at).is_(None))
        .values(revoked_at=now)
    )
    return bool(result.rowcount)
