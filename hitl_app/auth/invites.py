"""Invites after they were made: the admin's list of pending ones, revoking one, and what an
invite link says before anyone fills in its form.

An invite is *pending* while it is not used, not revoked, not expired and its email (in any case)
has no account. Only an admin lists or
revokes them; the invite page asks ``invite_refusal`` first, so a used, expired or revoked link
shows a plain refusal instead of a form that would only refuse on submit. Accepting stays in
``hitl_app.auth.accounts.accept_invite`` (one conditional update: a revoked invite never works).
"""

# Tested by: tests/integration/auth/test_invites.py

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth.sessions import aware
from hitl_app.auth.tokens import hash_token
from hitl_app.auth.types import AuthError, NotAllowed, Principal, Role
from hitl_app.store import accounts as db
from hitl_app.store.tables import utcnow

INVITE_USED = "This invite link was used already. Sign in with the account it created, or ask for a new link."
INVITE_EXPIRED = "This invite link has expired. Ask the person who invited you for a new one."
INVITE_REVOKED = "This invite link was withdrawn by an admin. Ask for a new one if you still need an account."
INVITE_UNKNOWN = "This invite link is not valid. Check that you copied all of it, or ask for a new one."
INVITE_HAS_ACCOUNT = (
    "An account for {email} exists already, so this invite can't be used. Sign in with that account, "
    "or ask an admin if it isn't yours."
)
NOT_PENDING = "This invite is no longer pending (used or revoked meanwhile)"


@dataclass(frozen=True)
class InviteView:
    """One pending invite as the admin page shows it (never the token).

    Attributes:
        invite_id: the stored token hash (hex; identifies the invite, cannot be used as a link).
        email: who it is for; role: the role they get.
        invited_by: the inviting admin's display name now ("" when unknown).
        created_at, expires_at: aware UTC.
    """

    invite_id: str
    email: str
    role: Role
    invited_by: str
    created_at: datetime
    expires_at: datetime


def _session(engine: AsyncEngine) -> AsyncSession:
    return AsyncSession(engine, expire_on_commit=False)


def _require_admin(by: Principal) -> None:
    if not by.is_admin:
        raise NotAllowed("Only an admin can manage invites")


async def pending_invites(*, engine: AsyncEngine, by: Principal, now: datetime | None = None) -> list[InviteView]:
    """The invites not used, revoked or expired yet, soonest to expire first.

    Raises:
        NotAllowed: ``by`` is not an admin.
    """
    _require_admin(by)
    async with _session(engine) as s:
        rows = await db.pending_invites(session=s, now=now or utcnow())
        admins = await db.accounts_by_id(session=s, account_ids=sorted({r.created_by for r in rows if r.created_by}))
        names = {a.id: a.display_name for a in admins}
    return [
        InviteView(r.token_hash, r.email, Role(r.role), names.get(r.created_by or 0, ""), aware(r.created_at),
                   aware(r.expires_at))
        for r in rows
    ]


async def revoke_invite(*, engine: AsyncEngine, invite_id: str, by: Principal) -> str:
    """Revoke the pending invite ``invite_id``: its link stops working at once. Returns its email.

    Raises:
        NotAllowed: ``by`` is not an admin.
        AuthError: no such invite, or it is no longer pending (``NOT_PENDING``).
    """
    _require_admin(by)
    if not isinstance(invite_id, str) or not invite_id:
        raise AuthError("No such invite")
    async with _session(engine) as s:
        invite = await db.get_invite(session=s, token_hash=invite_id)
        if invite is None:
            raise AuthError("No such invite")
        if not await db.revoke_invite(session=s, token_hash=invite_id, now=utcnow()):
            raise AuthError(NOT_PENDING)
        await s.commit()
        return invite.email


async def _may_invite(s: AsyncSession, account_id: int) -> bool:
    account = await db.get_account(session=s, account_id=account_id)
    return account is not None and account.role == Role.ADMIN.value and not account.disabled


async def check_invite(*, engine: AsyncEngine, token: str, now: datetime | None = None) -> tuple[str, str]:
    """``(refusal, email)`` of the invite link with ``token``: ``refusal`` says why it cannot be
    used, as a sentence to show (``""`` when it can: pending); ``email`` is whom it is for (``""``
    for an unknown link). Checks in this order: unknown, revoked, used, the email has an account
    now (``INVITE_HAS_ACCOUNT``), expired. An invite whose maker is no longer an active admin
    counts as revoked."""
    async with _session(engine) as s:
        invite = await db.get_invite(session=s, token_hash=hash_token(token or ""))
        taken = invite is not None and await db.find_account_by_email(session=s, email_key=invite.email_key) is not None
        maker_gone = invite is not None and invite.created_by is not None and not await _may_invite(s, invite.created_by)
    if invite is None:
        return INVITE_UNKNOWN, ""
    if invite.revoked_at is not None or maker_gone:
        return INVITE_REVOKED, invite.email
    if invite.used_at is not None:
        return INVITE_USED, invite.email
    if taken:
        return INVITE_HAS_ACCOUNT.format(email=invite.email), invite.email
    if aware(invite.expires_at) <= (now or utcnow()):
        return INVITE_EXPIRED, invite.email
    return "", invite.email


async def invite_refusal(*, engine: AsyncEngine, token: str, now: datetime | None = None) -> str:
    """Why the invite link with ``token`` cannot be used, as a sentence to show; ``""`` when it can
    (pending). See ``check_invite``."""
    return (await check_invite(engine=engine, token=token, now=now))[0]
