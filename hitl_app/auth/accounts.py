"""Managing accounts: the first admin, invites, temporary passwords, roles, disabling.

Functions that change someone else's account take ``by`` (the acting ``Principal``) and refuse
with ``NotAllowed`` unless it is an admin; the command line acts as ``SYSTEM``. The last active
admin cannot be demoted or disabled, so the app always has someone who can manage it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import attempts
from hitl_app.auth.passwords import hash_password, verify_password
from hitl_app.auth.sessions import aware, principal_of
from hitl_app.auth.text import MAX_PASSWORD, check_new_password, clean_display_name, email_key, normalize_email
from hitl_app.auth.tokens import hash_token, new_token
from hitl_app.auth.types import AuthConfig, AuthError, NotAllowed, Principal, Role, WrongCredentials
from hitl_app.store import accounts as db
from hitl_app.store.tables import utcnow

EMAIL_TAKEN = "An account with this email already exists"
INVITE_PENDING = "There is already a pending invite for {email} (emails ignore case). Revoke it first to send a new one."
SETUP_DONE = "The admin account already exists; sign in instead"
INVITE_INVALID = "This invite link is not valid any more (used or expired); ask for a new one"


@dataclass(frozen=True)
class AccountView:
    """One account as the admin page and the command line show it (never the password hash)."""

    account_id: int
    email: str
    display_name: str
    role: Role
    disabled: bool
    must_change_password: bool
    single_sign_on: bool
    created_at: datetime


def _view(a: db.Account) -> AccountView:
    return AccountView(
        account_id=int(a.id or 0), email=a.email, display_name=a.display_name, role=Role(a.role),
        disabled=a.disabled, must_change_password=a.must_change_password,
        single_sign_on=a.oidc_subject is not None, created_at=aware(a.created_at),
    )


def _session(engine: AsyncEngine) -> AsyncSession:
    return AsyncSession(engine, expire_on_commit=False)


def _require_admin(by: Principal) -> None:
    if not by.is_admin:
        raise NotAllowed("Only an admin can manage accounts")


async def _insert(s: AsyncSession, account: db.Account) -> db.Account:
    try:
        return await db.add_account(session=s, account=account)
    except IntegrityError:
        await s.rollback()
        raise AuthError(EMAIL_TAKEN) from None


async def _new_account(email: str, name: str, role: Role, password: str | None, must_change: bool) -> db.Account:
    shown, key = normalize_email(email)
    display_name = clean_display_name(name)
    password_hash = None
    if password is not None:
        check_new_password(password)
        password_hash = await hash_password(password)
    return db.Account(
        email=shown, email_key=key, display_name=display_name, role=role.value,
        password_hash=password_hash, must_change_password=must_change,
    )


async def first_run_needed(*, engine: AsyncEngine) -> bool:
    """True while no account exists: the app then offers "Create the admin account"."""
    async with _session(engine) as s:
        return await db.count_accounts(session=s) == 0


async def create_admin(
    *, engine: AsyncEngine, email: str, display_name: str, password: str, client: str = "", config: AuthConfig | None = None
) -> Principal:
    """Create the first account, as admin. Only works while no account exists (safe under races).

    Cheap checks come first: the email, name and password rules, then the try is counted against
    the per-address limits (``attempts.reserve``), then the accounts are counted; the password is
    hashed only when the app has no account yet.

    Raises:
        TooManyAttempts: too many failed tries from ``client`` (or for this email) in the window.
        AuthError: an account already exists ("... sign in instead"), or a bad email, name or password.
    """
    cfg = config or AuthConfig.from_settings()
    shown, key = normalize_email(email)
    clean_display_name(display_name)
    check_new_password(password)
    attempt = await attempts.reserve(engine=engine, email_key=key, client=client, config=cfg)
    if not await first_run_needed(engine=engine):
        raise AuthError(SETUP_DONE)
    account = await _new_account(email, display_name, Role.ADMIN, password, must_change=False)
    async with _session(engine) as s:
        await db.lock_for_first_account(session=s)
        if await db.count_accounts(session=s) > 0:
            raise AuthError(SETUP_DONE)
        await _insert(s, account)
        await attempts.settle_success_in(s, attempt)
        await s.commit()
    return principal_of(account)


async def add_account(
    *, engine: AsyncEngine, email: str, display_name: str, role: Role, password: str, by: Principal,
    must_change_password: bool = False,
) -> Principal:
    """Create an account with a password (the command line's ``users add --password-stdin``).

    Raises:
        NotAllowed: ``by`` is not an admin.
        AuthError: the email is taken, or a bad email, name or password.
    """
    _require_admin(by)
    account = await _new_account(email, display_name, role, password, must_change=must_change_password)
    async with _session(engine) as s:
        await _insert(s, account)
        await s.commit()
    return principal_of(account)


async def create_with_temporary_password(
    *, engine: AsyncEngine, email: str, display_name: str, role: Role, by: Principal
) -> tuple[Principal, str]:
    """Create an account with a random temporary password that must be changed at first sign-in.

    Returns:
        ``(principal, temporary_password)``: hand the password to the person once; it is not stored.

    Raises:
        NotAllowed, AuthError: as ``add_account``.
    """
    temporary = secrets.token_urlsafe(12)
    principal = await add_account(
        engine=engine, email=email, display_name=display_name, role=role, password=temporary, by=by,
        must_change_password=True,
    )
    return principal, temporary


async def create_invite(
    *, engine: AsyncEngine, email: str, role: Role, by: Principal, config: AuthConfig | None = None
) -> str:
    """Create a one-time invite for ``email`` with ``role``; return its token (put it in a link).

    The invite works once, until ``config.invite_ttl`` has passed.

    Raises:
        NotAllowed: ``by`` is not an admin.
        AuthError: a bad email, an account with it already exists, or a pending invite for it
            (in any case: ``INVITE_PENDING``).
    """
    _require_admin(by)
    cfg = config or AuthConfig.from_settings()
    shown, key = normalize_email(email)
    token, now = new_token(), utcnow()
    async with _session(engine) as s:
        if await db.find_account_by_email(session=s, email_key=key) is not None:
            raise AuthError(EMAIL_TAKEN)
        if await db.pending_invites(session=s, now=now, email_key=key):
            raise AuthError(INVITE_PENDING.format(email=shown))
        invite = db.Invite(
            token_hash=hash_token(token), email=shown, email_key=key, role=role.value,
            created_by=by.account_id or None, created_at=now, expires_at=now + cfg.invite_ttl,
        )
        await db.add_invite(session=s, invite=invite)
        await s.commit()
    return token


async def accept_invite(
    *, engine: AsyncEngine, token: str, display_name: str, password: str, client: str = "", config: AuthConfig | None = None
) -> Principal:
    """Create the invited account (email and role from the invite); the invite is then used up.

    Cheap checks come first: the name and password rules, then the try is counted against the
    per-address limits (``attempts.reserve``), then the invite is looked up; the password is
    hashed only for an invite that can be used (and whose maker can still make it, see
    ``invite_refusal``).

    Raises:
        TooManyAttempts: too many failed tries from ``client`` in the window.
        AuthError: the invite is unknown, used, expired or revoked ("... ask for a new one"); a bad
            name or password (the invite stays usable); or the email got an account meanwhile.
    """
    cfg = config or AuthConfig.from_settings()
    name = clean_display_name(display_name)
    check_new_password(password)
    attempt = await attempts.reserve(engine=engine, email_key="", client=client, config=cfg)
    token_hash = hash_token(token or "")
    async with _session(engine) as s:
        if not await db.invite_usable(session=s, token_hash=token_hash, now=utcnow()):
            raise AuthError(INVITE_INVALID)
    password_hash = await hash_password(password)
    async with _session(engine) as s:
        invite = await db.use_invite(session=s, token_hash=token_hash, now=utcnow())
        if invite is None:
            raise AuthError(INVITE_INVALID)
        account = db.Account(
            email=invite.email, email_key=invite.email_key, display_name=name, role=invite.role,
            password_hash=password_hash,
        )
        await _insert(s, account)
        await attempts.settle_success_in(s, attempt)
        await s.commit()
    return principal_of(account)


async def change_password(
    *, engine: AsyncEngine, account_id: int, current_password: str, new_password: str, keep_token: str | None = None,
    client: str = "", config: AuthConfig | None = None,
) -> None:
    """Change an account's own password and end its other sessions (``keep_token``'s stays).

    Clears ``must_change_password``. Guesses at ``current_password`` count like sign-in tries
    (the same limits, per account and address), before it is checked.

    Raises:
        TooManyAttempts: too many wrong current passwords for this account (or from ``client``).
        WrongCredentials: ``current_password`` is wrong (or the account has no password).
        AuthError: the new password breaks the rules, or equals the current one.
    """
    cfg = config or AuthConfig.from_settings()
    check_new_password(new_password)
    if new_password == current_password:
        raise AuthError("Choose a new password that differs from the current one")
    async with _session(engine) as s:
        account = await db.get_account(session=s, account_id=account_id)
    if account is None or len(current_password or "") > MAX_PASSWORD:
        raise WrongCredentials()
    attempt = await attempts.reserve(engine=engine, email_key=account.email_key, client=client, config=cfg)
    if not await verify_password(current_password, account.password_hash):
        raise WrongCredentials()
    new_hash = await hash_password(new_password)
    async with _session(engine) as s:
        account = await db.get_account(session=s, account_id=account_id)
        if account is None:
            raise WrongCredentials()
        account.password_hash, account.must_change_password = new_hash, False
        s.add(account)
        kept = hash_token(keep_token) if keep_token else None
        for row_hash in await db.session_hashes_of(session=s, account_id=account_id):
            if row_hash != kept:
                await db.delete_session(session=s, token_hash=row_hash)
        await attempts.settle_success_in(s, attempt)
        await s.commit()


async def _guard_last_admin(s: AsyncSession, account: db.Account) -> None:
    if account.role == Role.ADMIN.value and not account.disabled and await db.count_active_admins(session=s) <= 1:
        raise AuthError("This is the last active admin; make someone else admin first")


async def set_role(*, engine: AsyncEngine, account_id: int, role: Role, by: Principal) -> None:
    """Give an account another role (takes effect at its next event). Demoting an admin revokes
    the pending invites they made.

    Raises:
        NotAllowed: ``by`` is not an admin.
        AuthError: no such account, or it would demote the last active admin.
    """
    _require_admin(by)
    async with _session(engine) as s:
        account = await _get_or_fail(s, account_id)
        await change_role_in(s, account, role)
        await s.commit()


async def change_role_in(s: AsyncSession, account: db.Account, role: Role) -> None:
    """Within the caller's transaction (it commits): give ``account`` ``role``. Taking admin away
    revokes the pending invites the account made.

    Raises:
        AuthError: it would demote the last active admin (nothing changed).
    """
    if role is not Role.ADMIN and account.role == Role.ADMIN.value:
        await _guard_last_admin(s, account)
        await db.revoke_invites_by(session=s, account_id=int(account.id or 0), now=utcnow())
    account.role = role.value
    s.add(account)


async def disable(*, engine: AsyncEngine, account_id: int, by: Principal) -> int:
    """Disable an account, end all its sessions and revoke the pending invites it made; returns
    how many sessions ended.

    Its open tabs lose access at their next event (``resolve_session`` returns None).

    Raises:
        NotAllowed: ``by`` is not an admin.
        AuthError: no such account, or it is the last active admin.
    """
    _require_admin(by)
    async with _session(engine) as s:
        account = await _get_or_fail(s, account_id)
        await _guard_last_admin(s, account)
        account.disabled = True
        s.add(account)
        await db.revoke_invites_by(session=s, account_id=account_id, now=utcnow())
        gone = await db.delete_sessions_of(session=s, account_id=account_id)
        await s.commit()
    return gone


async def enable(*, engine: AsyncEngine, account_id: int, by: Principal) -> None:
    """Let a disabled account sign in again. Raises NotAllowed / AuthError as ``set_role``."""
    _require_admin(by)
    async with _session(engine) as s:
        account = await _get_or_fail(s, account_id)
        account.disabled = False
        s.add(account)
        await s.commit()


async def _get_or_fail(s: AsyncSession, account_id: int) -> db.Account:
    account = await db.get_account(session=s, account_id=account_id)
    if account is None:
        raise AuthError("No such account")
    return account


async def is_disabled(*, engine: AsyncEngine, account_id: int) -> bool:
    """True when the account exists and an admin disabled it (why its sessions ended)."""
    async with _session(engine) as s:
        account = await db.get_account(session=s, account_id=account_id)
    return account is not None and bool(account.disabled)


async def find_account(*, engine: AsyncEngine, email: str) -> AccountView | None:
    """The account with this email (any case), or None."""
    key = email_key(email)
    if not key:
        return None
    async with _session(engine) as s:
        account = await db.find_account_by_email(session=s, email_key=key)
    return None if account is None else _view(account)


async def list_accounts(*, engine: AsyncEngine) -> list[AccountView]:
    """Every account, oldest first, as ``AccountView`` rows."""
    async with _session(engine) as s:
        return [_view(a) for a in await db.list_accounts(session=s)]
