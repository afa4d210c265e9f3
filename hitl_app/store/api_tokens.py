"""Personal API tokens and the decision API's idempotency keys: tables and keyword-only data functions.

Tables (created with the app's other tables by ``create_schema``):

- ``ApiToken``: one personal token a person made on their account page. Only the SHA-256 of the
  token is stored (``token_hash``), with its name, scopes (``"read"``, ``"read decide"``), expiry and
  revocation; ``window_start``/``window_count`` count its requests in the current minute (the
  per-token rate limit, shared by every worker through this row).
- ``ApiIdempotency``: one ``Idempotency-Key`` a token used on a decision, unique per token: the first
  request claims it (``state = "working"``), a success keeps its answer (``"done"``) for a retry to
  get again; a refusal drops the row (nothing changed, so a retry is tried afresh).

The functions take an open ``AsyncSession``; the caller commits unless a docstring says otherwise.
Times are aware UTC (``UTCDateTime``).
"""

# Tested by: tests/integration/api/test_decision_api.py

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint, case, delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.accounts import Account
from hitl_app.store.tables import UTCDateTime, table_of, utcnow


class ApiToken(SQLModel, table=True):
    """A personal API token: whose, its name and scopes, when it ends; the token itself is never kept."""

    __tablename__ = "api_tokens"

    id: int | None = Field(default=None, primary_key=True)
    account_id: int = Field(foreign_key="accounts.id", index=True)
    name: str = Field(max_length=80)
    token_hash: str = Field(max_length=64, unique=True)
    prefix: str = Field(max_length=16)
    scopes: str = Field(max_length=40)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    window_start: int = Field(default=0)
    window_count: int = Field(default=0)


class ApiIdempotency(SQLModel, table=True):
    """One ``Idempotency-Key`` of one token: the request it named (SHA-256) and, once done, the answer."""

    __tablename__ = "api_idempotency"
    __table_args__ = (UniqueConstraint("token_id", "key", name="uq_api_idempotency_key"),)

    id: int | None = Field(default=None, primary_key=True)
    token_id: int = Field(index=True)
    key: str = Field(max_length=200)
    request_hash: str = Field(max_length=64)
    state: str = Field(default="working", max_length=10)
    status: int = Field(default=0)
    answer: str = Field(default="", max_length=20_000)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


API_TABLES = [table_of(ApiToken), table_of(ApiIdempotency)]
"""The tables of this module, in creation order (after the account tables)."""


async def add_token(*, session: AsyncSession, row: ApiToken) -> ApiToken:
    """Insert a token row; returns it with its id (flushed, the caller commits)."""
    session.add(row)
    await session.flush()
    return row


async def tokens_of(*, session: AsyncSession, account_id: int) -> list[ApiToken]:
    """Every token of an account (revoked and expired ones too), newest first."""
    stmt = select(ApiToken).where(col(ApiToken.account_id) == account_id).order_by(col(ApiToken.id).desc())
    return list((await session.exec(stmt)).all())


async def revoke_token(*, session: AsyncSession, token_id: int, account_id: int, now: datetime) -> bool:
    """Revoke one token of ``account_id`` (another person's token is not touched); True when it was live."""
    stmt = (
        update(ApiToken)
        .where(col(ApiToken.id) == token_id, col(ApiToken.account_id) == account_id, col(ApiToken.revoked_at).is_(None))
        .values(revoked_at=now)
    )
    return bool((await session.exec(stmt)).rowcount)


async def find_token(*, session: AsyncSession, token_hash: str) -> tuple[ApiToken, Account] | None:
    """The token row with that hash and its account, or None."""
    stmt = select(ApiToken, Account).join(Account, col(Account.id) == col(ApiToken.account_id)).where(
        col(ApiToken.token_hash) == token_hash
    )
    found = (await session.exec(stmt)).first()
    return (found[0], found[1]) if found else None


async def count_request(*, session: AsyncSession, token_id: int, window: int, now: datetime) -> int:
    """Count one request of the token in minute ``window`` (``int(epoch // 60)``) and return the
    window's count so far, this one included. One conditional UPDATE, so concurrent requests in
    several workers each get their own number. Commits."""
    stmt = (
        update(ApiToken)
        .where(col(ApiToken.id) == token_id)
        .values(
            window_count=case((col(ApiToken.window_start) == window, col(ApiToken.window_count) + 1), else_=1),
            window_start=window,
            last_used_at=now,
        )
        .returning(col(ApiToken.window_count))
    )
    count = (await session.exec(stmt)).scalar_one()
    await session.commit()
    return int(count)


async def claim_key(*, session: AsyncSession, token_id: int, key: str, request_hash: str) -> ApiIdempotency | None:
    """Claim ``key`` for this request; commits. Returns None when this call claimed it, else the
    row already there (the same key used before: ``state`` ``working`` or ``done``)."""
    session.add(ApiIdempotency(token_id=token_id, key=key, request_hash=request_hash))
    try:
        await session.commit()
        return None
    except IntegrityError:
        await session.rollback()
    stmt = select(ApiIdempotency).where(col(ApiIdempotency.token_id) == token_id, col(ApiIdempotency.key) == key)
    return (await session.exec(stmt)).first()


async def finish_key(*, session: AsyncSession, token_id: int, key: str, status: int, answer: str) -> None:
    """Keep the answer of a claimed key's request (a retry gets it again); commits."""
    stmt = (
        update(ApiIdempotency)
        .where(col(ApiIdempotency.token_id) == token_id, col(ApiIdempotency.key) == key)
        .values(state="done", status=status, answer=answer)
    )
    await session.exec(stmt)
    await session.commit()


async def drop_key(*, session: AsyncSession, token_id: int, key: str) -> None:
    """Let a claimed key go (its request was refused and changed nothing); commits."""
    stmt = delete(ApiIdempotency).where(
        col(ApiIdempotency.token_id) == token_id, col(ApiIdempotency.key) == key, col(ApiIdempotency.state) == "working"
    )
    await session.exec(stmt)
    await session.commit()
