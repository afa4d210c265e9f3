"""State of the admin page (/admin): accounts, invites (pending ones listed, revocable), temporary
passwords, roles, disabling.

Every handler re-checks that the signed-in account is an admin (``_require_principal``) before it
reads or changes anything; the rules themselves (last admin, taken emails, ...) are in
``hitl_app.auth.accounts``, which refuses with a sentence shown on the page.
"""

# Tested by: tests/e2e/test_accounts.py

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import reflex as rx
from reflex.event import EventSpec

from hitl_app import auth
from hitl_app.auth import AuthError, Principal, Role
from hitl_app.runtime import get_runtime
from hitl_app.ui.state.session import SessionState, sign_in_redirect

ROLES = [r.value for r in Role]


@dataclass
class AccountRow:
    """One account as the admin table shows it (plain text fields)."""

    account_id: int
    email: str
    name: str
    role: str
    status: str
    single_sign_on: bool


def _row(a: auth.AccountView) -> AccountRow:
    status = "disabled" if a.disabled else ("must change password" if a.must_change_password else "active")
    return AccountRow(a.account_id, a.email, a.display_name, a.role.value, status, a.single_sign_on)


@dataclass
class InviteRow:
    """One pending invite as the admin page shows it (plain text fields; never the link)."""

    invite_id: str
    email: str
    role: str
    invited_by: str
    expires: str


def expires_text(when: datetime, now: datetime) -> str:
    """``"in 3 days (Dec 4, 14:50 UTC)"``: how long an invite still works (rounded to the nearest
    day, hour or minute), and until when."""
    left = max(0, round((when - now).total_seconds() / 60))
    days, hours = round(left / 1440), round(left / 60)
    span = (f"{days} day{'s' if days != 1 else ''}" if left >= 1440 else f"{hours} h" if left >= 60 else f"{left} min")
    return f"in {span} ({when.astimezone(UTC):%b %-d, %H:%M} UTC)"


def _invite_row(i: auth.InviteView, now: datetime) -> InviteRow:
    return InviteRow(i.invite_id, i.email, i.role.value, i.invited_by or "an admin", expires_text(i.expires_at, now))


def _text(form: Any, key: str) -> str:
    value = form.get(key) if isinstance(form, dict) else None
    return value.strip() if isinstance(value, str) else ""


SECRET_BOX_ID = "admin-secret"
"""The DOM id of the box the one-time secret is written into (``show_secret``)."""
_FILL_SECRET_JS = (
    "(function fill(text, tries) { const el = document.getElementById(%s);"
    " if (el) { el.textContent = text; } else if (tries > 0) { setTimeout(() => fill(text, tries - 1), 50); } })(%s, 60)"
)


def show_secret(secret: str, box_id: str = SECRET_BOX_ID) -> EventSpec:
    """The one-shot event that writes ``secret`` into a page's secret box (DOM id ``box_id``, the
    admin page's by default) in the browser, waiting up to 3 s for the box to render. The secret
    travels in this event only: it is in no state var, so Reflex never saves it with the tab
    (``.states`` or Redis)."""
    return rx.call_script(_FILL_SECRET_JS % (json.dumps(box_id), json.dumps(secret)))


class AdminState(SessionState):
    """The account list and the results of the last action (a link or password shown once)."""

    accounts: list[AccountRow] = []
    invites: list[InviteRow] = []
    message: str = ""
    error: str = ""
    secret_shown: bool = False
    """An invite link or temporary password was just handed out: its box shows, filled by the
    browser from the one-shot ``show_secret`` event (the secret is never a state var, so it is not
    saved with the tab's state)."""

    async def _admin(self) -> Principal | None:
        """The signed-in admin, or None (then the caller leaves: not signed in, or not an admin)."""
        who = await self._require_principal()
        if who is None or not who.is_admin:
            self.accounts, self.invites, self.secret_shown = [], [], False
            return None
        return who

    def _leave(self):
        return sign_in_redirect() if not self.user_name else rx.redirect("/")

    async def _reload(self, who: Principal) -> None:
        engine, now = get_runtime().engines.async_, datetime.now(UTC)
        self.accounts = [_row(a) for a in await auth.list_accounts(engine=engine)]
        self.invites = [_invite_row(i, now) for i in await auth.pending_invites(engine=engine, by=who, now=now)]

    def _clear(self) -> None:
        self.message = self.error = ""
        self.secret_shown = False

    @rx.event
    async def load(self):
        """on_load of /admin: the accounts (admins only; others go back to the chat)."""
        if (who := await self._admin()) is None:
            return self._leave()
        self._clear()
        await self._reload(who)
        return None

    async def _act(self, change) -> Any:
        """Run ``change(who)`` as the signed-in admin; an ``AuthError`` is shown, then reload.
        A secret ``change`` returns (an invite link, a temporary password) goes to the browser
        once, by ``show_secret``."""
        if (who := await self._admin()) is None:
            return self._leave()
        self._clear()
        secret = None
        try:
            secret = await change(who)
        except AuthError as exc:
            self.error = str(exc)
        await self._reload(who)
        if isinstance(secret, str) and secret:
            self.secret_shown = True
            return show_secret(secret)
        return None

    @rx.event
    async def invite(self, form_data: dict[str, Any]):
        """Create a one-time invite link for an email with a role (shown once on the page)."""
        email, role = _text(form_data, "email"), _text(form_data, "role") or "member"
        origin = (self.router.headers.origin or "").rstrip("/")

        async def change(who: Principal) -> str:
            token = await auth.create_invite(engine=get_runtime().engines.async_, email=email, role=Role.parse(role), by=who)
            self.message = f"Invite for {email} ({role}): send this link; it works once."
            return f"{origin}/invite/{token}"

        return await self._act(change)

    @rx.event
    async def revoke_invite(self, invite_id: str):
        """Take back a pending invite: its link stops working at once."""

        async def change(who: Principal) -> None:
            email = await auth.revoke_invite(engine=get_runtime().engines.async_, invite_id=str(invite_id), by=who)
            self.message = f"Invite for {email} revoked: its link no longer works."

        return await self._act(change)

    @rx.event
    async def renew_invite(self, invite_id: str):
        """A new link for a pending invite, same email and role; the earlier link stops working. A
        link is shown once and only its hash is kept, so this is how an admin gets it again (QA M6).
        The invite is read again at the server, never taken from the page."""
        origin = (self.router.headers.origin or "").rstrip("/")

        async def change(who: Principal) -> str:
            engine = get_runtime().engines.async_
            pending = {i.invite_id: i for i in await auth.pending_invites(engine=engine, by=who)}
            if (invite := pending.get(str(invite_id))) is None:
                raise AuthError("This invite is no longer pending: it was used, revoked or has expired.")
            await auth.revoke_invite(engine=engine, invite_id=invite.invite_id, by=who)
            token = await auth.create_invite(engine=engine, email=invite.email, role=invite.role, by=who)
            self.message = f"New invite link for {invite.email} ({invite.role.value}): send it; the earlier link no longer works."
            return f"{origin}/invite/{token}"

        return await self._act(change)

    @rx.event
    async def create_temporary(self, form_data: dict[str, Any]):
        """Create an account with a temporary password (shown once; changed at first sign-in)."""
        email, name = _text(form_data, "email"), _text(form_data, "name")
        role = _text(form_data, "role") or "member"

        async def change(who: Principal) -> str:
            _, password = await auth.create_with_temporary_password(
                engine=get_runtime().engines.async_, email=email, display_name=name, role=Role.parse(role), by=who
            )
            self.message = f"Account {email} ({role}) created: give them this temporary password."
            return password

        return await self._act(change)

    @rx.event
    async def set_role(self, account_id: int, role: str):
        """Give an account another role (the last active admin cannot be demoted)."""

        async def change(who: Principal) -> None:
            engine = get_runtime().engines.async_
            await auth.set_role(engine=engine, account_id=_id(account_id), role=Role.parse(str(role)), by=who)
            await _inboxes_reread()
            self.message = f"Role changed to {role}."

        return await self._act(change)

    @rx.event
    async def set_disabled(self, account_id: int, disabled: bool):
        """Disable (its sessions end at once) or enable an account."""

        async def change(who: Principal) -> None:
            engine = get_runtime().engines.async_
            if disabled is True:
                await auth.disable(engine=engine, account_id=_id(account_id), by=who)
                await _inboxes_reread()
                self.message = "Account disabled: its open tabs are signed out now."
            else:
                await auth.enable(engine=engine, account_id=_id(account_id), by=who)
                self.message = "Account enabled."

        return await self._act(change)


async def _inboxes_reread() -> None:
    """Every open inbox re-reads (the review signal without an audience): a watcher judges new
    reviews by the person of its last read, whose role or access just changed."""
    await get_runtime().service.bus.reviews.announce()


def _id(value: Any) -> int:
    """An account id from the browser (an int, not a bool), else ``AuthError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AuthError("No such account")
    return value
