"""Personal API tokens: a person makes, names, scopes and revokes their own; a script presents one.

A token is ``hitl_pat_`` + 43 random URL-safe characters, shown once when it is made; the database
keeps its SHA-256 (``hitl_app.store.api_tokens``). It acts with exactly its owner's rights as they
are at each request (``principal_of`` the account row read then): a demoted or disabled owner's
tokens lose those rights at once. Scopes narrow what it may call: ``read`` (list and read reviews)
and ``decide`` (decide them; a token with ``decide`` may read too). It ends at ``expires_at`` (at
most ``HITL_API_TOKEN_MAX_DAYS`` days) or when revoked.

Every refusal is an ``ApiTokenRefused`` whose ``str()`` is the sentence to show, with an HTTP status.
"""

# Tested by: tests/integration/api/test_decision_api.py

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth.sessions import principal_of
from hitl_app.auth.tokens import hash_token, new_token
from hitl_app.auth.types import Principal
from hitl_app.store import api_tokens as db
from hitl_app.store.tables import utcnow

TOKEN_PREFIX = "hitl_pat_"
"""Every personal token starts with this (so a leaked one is easy to find in logs and code)."""
SCOPES: tuple[str, ...] = ("read", "decide")
"""The scopes a token may carry."""
MAX_NAME = 80
"""The longest token name, in characters."""
MAX_TOKENS = 50
"""Live (not revoked, not expired) tokens one person may hold."""


class ApiTokenRefused(Exception):
    """A token or a token change was refused; ``str()`` is the sentence, ``status`` the HTTP status
    (400 bad input, 401 no usable token, 403 scope, 429 rate limit with ``retry_after`` seconds)."""

    def __init__(self, message: str, status: int = 401, retry_after: int = 0) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


@dataclass(frozen=True)
class TokenView:
    """A token as its owner's page shows it (never the token itself).

    ``state`` is ``active``, ``expired`` or ``revoked``; ``prefix`` the first characters of the token
    (to tell tokens apart); times are aware UTC.
    """

    token_id: int
    name: str
    prefix: str
    scopes: tuple[str, ...]
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime | None
    state: str


@dataclass(frozen=True)
class TokenCaller:
    """Who a presented token acts for: the owner as now (``principal``), the token's id and scopes."""

    principal: Principal
    token_id: int
    scopes: tuple[str, ...]

    def require(self, scope: str) -> None:
        """Raise ``ApiTokenRefused`` (403) unless the token carries ``scope`` (``decide`` covers ``read``)."""
        if scope not in self.scopes and not (scope == "read" and "decide" in self.scopes):
            raise ApiTokenRefused(f"This token may not {scope}: make a token with the {scope} scope on your account page.", 403)


def _view(row: db.ApiToken, now: datetime) -> TokenView:
    state = "revoked" if row.revoked_at is not None else "expired" if row.expires_at <= now else "active"
    return TokenView(
        token_id=int(row.id or 0), name=row.name, prefix=row.prefix, scopes=tuple(row.scopes.split()),
        created_at=row.created_at, expires_at=row.expires_at, last_used_at=row.last_used_at, state=state,
    )


def _session(engine: AsyncEngine) -> AsyncSession:
    return AsyncSession(engine, expire_on_commit=False)


def checked_scopes(scopes: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The scopes in ``SCOPES`` order. Raises ``ApiTokenRefused`` (400) for none or an unknown one."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise ApiTokenRefused("Pick the token's scopes: read, decide, or both.", 400)
    return tuple(s for s in SCOPES if s in scopes)


async def create_api_token(
    *, engine: AsyncEngine, owner: Principal, name: str, scopes: list[str] | tuple[str, ...], days: int, max_days: int = 365,
) -> tuple[str, TokenView]:
    """Make a token for ``owner``; returns (the token, shown once; its view).

    Args:
        engine: the app database's async engine.
        owner: the signed-in person the token acts for.
        name: a label for the owner (1 to ``MAX_NAME`` characters, spaces folded).
        scopes: some of ``SCOPES``.
        days: its lifetime in days, 1 to ``max_days``.
        max_days: the longest lifetime allowed (``HITL_API_TOKEN_MAX_DAYS``).

    Raises:
        ApiTokenRefused (400): no name, a name too long, no or unknown scopes, a lifetime out of
            range, or ``MAX_TOKENS`` live tokens already.
    """
    label = " ".join(str(name).split())
    if not label or len(label) > MAX_NAME:
        raise ApiTokenRefused(f"Name the token (1 to {MAX_NAME} characters), e.g. 'deploy bot'.", 400)
    wanted = checked_scopes(scopes)
    if not isinstance(days, int) or not 1 <= days <= max_days:
        raise ApiTokenRefused(f"A token lasts 1 to {max_days} days.", 400)
    now = utcnow()
    token = TOKEN_PREFIX + new_token()
    async with _session(engine) as s:
        live = [t for t in await db.tokens_of(session=s, account_id=owner.account_id) if _view(t, now).state == "active"]
        if len(live) >= MAX_TOKENS:
            raise ApiTokenRefused(f"You have {MAX_TOKENS} live tokens: revoke one first.", 400)
        row = await db.add_token(session=s, row=db.ApiToken(
            account_id=owner.account_id, name=label, token_hash=hash_token(token), prefix=token[:13],
            scopes=" ".join(wanted), created_at=now, expires_at=now + timedelta(days=days),
        ))
        await s.commit()
    return token, _view(row, now)


async def list_api_tokens(*, engine: AsyncEngine, owner: Principal) -> list[TokenView]:
    """The owner's tokens, newest first (revoked and expired ones too, marked by ``state``)."""
    now = utcnow()
    async with _session(engine) as s:
        return [_view(t, now) for t in await db.tokens_of(session=s, account_id=owner.account_id)]


async def revoke_api_token(*, engine: AsyncEngine, owner: Principal, token_id: int) -> bool:
    """Revoke one of the owner's tokens (effective at the next request); True when it was live.
    Another person's token id changes nothing (False)."""
    async with _session(engine) as s:
        done = await db.revoke_token(session=s, token_id=int(token_id), account_id=owner.account_id, now=utcnow())
        await s.commit()
    return done


async def resolve_api_token(*, engine: AsyncEngine, token: str, per_minute: int) -> TokenCaller:
    """The caller a presented token acts for, counting the request against its rate limit.

    Raises:
        ApiTokenRefused: 401 for a missing, malformed, unknown, revoked or expired token, or one
            whose account is disabled or must change its password first; 429 when the token made
            ``per_minute`` requests in this minute already (``retry_after``: seconds to the next).
    """
    if not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise ApiTokenRefused("Send a personal API token: Authorization: Bearer hitl_pat_... (make one on your account page).")
    now = utcnow()
    async with _session(engine) as s:
        found = await db.find_token(session=s, token_hash=hash_token(token))
        if found is None:
            raise ApiTokenRefused("That API token is not known: make a new one on your account page.")
        row, account = found
        if row.revoked_at is not None:
            raise ApiTokenRefused("That API token was revoked: make a new one on your account page.")
        if row.expires_at <= now:
            raise ApiTokenRefused("That API token has expired: make a new one on your account page.")
        if account.disabled:
            raise ApiTokenRefused("This account is disabled")
        if account.must_change_password:
            raise ApiTokenRefused("Change your temporary password in the app first, then use the token.")
        epoch = time.time()
        count = await db.count_request(session=s, token_id=int(row.id or 0), window=int(epoch // 60), now=now)
    if count > per_minute:
        wait = max(1, math.ceil(60 - epoch % 60))
        raise ApiTokenRefused(
            f"Too many requests with this token ({per_minute} a minute); try again in {wait} seconds.", 429, wait
        )
    return TokenCaller(principal=principal_of(account), token_id=int(row.id or 0), scopes=tuple(row.scopes.split()))
