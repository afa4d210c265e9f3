"""Who is using this tab: the signed-in account (the thread owner), and the browser's old random id.

``SessionState._require_principal`` is the one door: every handler that reads or changes a thread
calls it first. It re-reads the session row on every call, so a signed-out, expired or disabled
session loses access at its next event. The browser id (a random id in localStorage, the thread
owner before accounts existed) is kept only so that browser's old threads can be claimed by the
account that signs in there.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import reflex as rx
from reflex.event import EventSpec

from hitl_app.auth import Principal, resolve_session_hash
from hitl_app.reviewers.metrics import may_open_metrics
from hitl_app.runtime import get_runtime
from hitl_app.store.legacy import claim_browser_threads, is_browser_id
from hitl_app.ui.state.auth import current_principal

SIGN_IN_PAGE = "/sign-in"


def owner_of(principal: Principal) -> str:
    """The thread owner string of an account: ``str(account_id)`` (see notes/contracts)."""
    return str(principal.account_id)


async def session_principal(key: str) -> Principal | None:
    """The account signed in with the session whose SHA-256 is ``key`` (``auth.cookie.session_key``,
    re-read now), or None (signed out, expired, disabled, or a temporary password not changed yet)."""
    who = await resolve_session_hash(engine=get_runtime().engines.async_, token_hash=key)
    return None if who is None or who.must_change_password else who


def sign_in_redirect() -> EventSpec:
    """The event to return (or yield) when ``_require_principal`` gave None: go to the sign-in page."""
    return rx.redirect(SIGN_IN_PAGE)


def ensure_browser_id(value: Any) -> str:
    """``value`` when it is a UUID string, else a new random one (a first visit, or junk)."""
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return str(uuid.uuid4())
    return value


REVIEWER_MAX_CHARS = 40
"""Longest reviewer name a browser may set, in characters."""

_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def reviewer_name(value: Any) -> str:
    """``value`` as a reviewer name: a string of 1-40 characters, stripped, on one line, without
    control or bidirectional characters; ``""`` (anonymous) for anything else.

    The name comes from the browser (localStorage, sent at hydration), so it is checked every time
    it is used, not only when it was typed into the header form.
    """
    if not isinstance(value, str):
        return ""
    name = value.strip()
    if not name or len(name) > REVIEWER_MAX_CHARS or _INVISIBLE.search(name):
        return ""
    return name


IDENTITY_JS = (
    "({browser_id: localStorage.getItem('hitl_browser_id') || '', "
    "reviewer: localStorage.getItem('hitl_reviewer') || ''%s})"
)
"""Reads the browser's stored identity (for ``rx.call_script``); ``%s`` takes extra fields."""


def ask_identity(callback: Any, extra: str = "") -> EventSpec:
    """Ask the browser for its stored id and reviewer name; ``callback`` gets
    ``{"browser_id", "reviewer", ...extra}``. ``extra`` is ``", key: <JSON>"`` text or empty."""
    return rx.call_script(IDENTITY_JS % extra, callback=callback)


class SessionState(rx.State):
    """The signed-in account of this tab (shown in the user menu), and the browser's old id.

    Parent of the states that act for the person (thread list, chat, review, audit); they call
    ``_require_principal`` first in every handler.
    """

    browser_id: str = rx.LocalStorage("", name="hitl_browser_id", sync=True)
    reviewer: str = rx.LocalStorage("", name="hitl_reviewer", sync=True)
    user_name: str = ""
    user_role: str = ""
    user_email: str = ""
    _claimed_for: int = 0

    def __setattr__(self, name: str, value: Any) -> None:
        """The browser's stored identity is checked as it is set, on every path (hydration too,
        where Reflex sets the page's storage values directly, from any socket): a browser id that
        is not a UUID becomes a fresh one (``ensure_browser_id``), a reviewer name is read as
        ``reviewer_name`` reads it. So no page parks megabytes in the tab's state (review F10)."""
        if name == "browser_id" and value:
            value = ensure_browser_id(value)
        elif name == "reviewer" and value:
            value = reviewer_name(value)
        super().__setattr__(name, value)

    @rx.var
    def may_open_metrics(self) -> bool:
        """Whether the Metrics page would let this account in (its link shows only then)."""
        return may_open_metrics(self.user_role)

    async def _require_principal(self) -> Principal | None:
        """The signed-in account for this event, or None: no session cookie, an unknown, expired or
        signed-out session, a disabled account, or a temporary password not changed yet.

        Re-reads the session row on every call (nothing is cached in the tab's state). On None the
        caller returns ``sign_in_redirect()`` and acts on nothing; the user menu is emptied.
        Private (not an event): the browser cannot call it. Other states' modules use ``signed_in``.
        """
        who = await current_principal(self)
        if who is None or who.must_change_password:
            self._forget_identity()
            return None
        self._show_identity(who)
        if self._claimed_for != who.account_id and is_browser_id(self.browser_id):
            self._claimed_for = who.account_id
            await self._claim_legacy(who)
        return who

    def _show_identity(self, who: Principal) -> None:
        """The user menu and the role-dependent links (Metrics) follow ``who``, read just now (a
        role changed by an admin shows without a reload wherever a watcher re-read the session)."""
        if (self.user_name, self.user_role, self.user_email) != (who.display_name, who.role.value, who.email):
            self.user_name, self.user_role, self.user_email = who.display_name, who.role.value, who.email

    def _forget_identity(self) -> None:
        """Signed out: the user menu is emptied."""
        if self.user_name or self.user_role:
            self.user_name = self.user_role = self.user_email = ""

    async def _claim_legacy(self, who: Principal) -> None:
        """Threads this browser made before accounts (owned by its localStorage id) become
        ``who``'s: the first account signed in from this browser claims them (see store/legacy)."""
        settings = get_runtime().settings
        await claim_browser_threads(
            engine=get_runtime().engines.async_, browser_id=self.browser_id, owner=owner_of(who),
            files_root=settings.files_dir, demo_db_path=settings.demo_db_path,
        )

    def _ensure_identity(self) -> None:
        """Give this browser a random id on first visit. Private: not callable from the browser."""
        browser_id = ensure_browser_id(self.browser_id)
        if browser_id != self.browser_id:
            self.browser_id = browser_id

    def _adopt_identity(self, stored: Any) -> None:
        """Take the id and reviewer name the browser sent (``ask_identity``) when this state has
        none: its server copy was rebuilt without the page's storage (expired, or deleted).
        A malformed id gives a new one. Private: not callable from the browser."""
        if self.browser_id:
            return
        stored = stored if isinstance(stored, dict) else {}
        self.browser_id = ensure_browser_id(stored.get("browser_id"))
        if reviewer := reviewer_name(stored.get("reviewer")):
            self.reviewer = reviewer

    @rx.event
    def save_reviewer(self, form_data: dict[str, Any]) -> None:
        """Set the reviewer name recorded with each decision (1-40 characters)."""
        if name := reviewer_name(form_data.get("reviewer") if isinstance(form_data, dict) else None):
            self.reviewer = name



async def signed_in(state: SessionState) -> Principal | None:
    """The door for a state outside this tree (``rx.State``'s other children) to read the tab's
    session: ``state._require_principal()`` of the tab's ``SessionState`` (None: signed out)."""
    return await state._require_principal()
