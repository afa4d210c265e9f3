"""Who is signed in, read on the server on every event; the state of the sign-in pages.

The session token sits in an HttpOnly cookie that the browser's scripts cannot read. Reflex 0.10
copies the websocket handshake's headers into ``self.router.headers`` for every event (the
``cookie`` field is dropped from what is sent to the browser, and a header forged in an event's
``router_data`` is overwritten by the handshake's). The websocket gate (``hitl_app.ui.state.socket_gate``)
replaces that cookie by its SHA-256 before any state sees it, so a saved tab state holds no session
token; ``current_principal`` resolves the session from that hash (``auth.cookie.session_key``).
A sign-in or sign-out is an HTTP form post followed by a page
load, which opens a new websocket carrying the new cookie.
"""

# Tested by: tests/unit/auth/test_auth_pages.py - through the pages that use it

from __future__ import annotations

import reflex as rx

from hitl_app.auth import Principal, check_invite, first_run_needed, resolve_session_hash
from hitl_app.auth.cookie import session_key
from hitl_app.auth.form_errors import error_message
from hitl_app.auth.oidc import OidcSettings
from hitl_app.runtime import get_runtime


async def current_principal(state: rx.State) -> Principal | None:
    """The signed-in account for this event, or None (no, expired or revoked session; disabled)."""
    key = session_key(state.router.headers.cookie)
    return await resolve_session_hash(engine=get_runtime().engines.async_, token_hash=key) if key else None


class AuthState(rx.State):
    """What the sign-in, change-password and invite pages show."""

    display_name: str = ""
    first_run: bool = False
    must_change: bool = False
    sso_enabled: bool = False
    error: str = ""
    invite_token: str = ""
    invite_refusal: str = ""
    email_typed: str = ""
    invite_email: str = ""
    invite_checked: bool = False

    @rx.event
    async def load_sign_in(self):
        """On load of /sign-in: the first-run form, the sign-in form, or (signed in with a temporary
        password) the change-password form; and the error of a failed post."""
        who = await current_principal(self)
        if who is not None and not who.must_change_password:
            return rx.redirect("/")
        self.must_change = who is not None
        self.display_name = who.display_name if who is not None else ""
        q = self.router.url.query_parameters
        self.error = error_message(str(q.get("error", "")), str(q.get("minutes", "")))
        self.email_typed = str(q.get("email", ""))[:254] if self.error else ""  # kept after a refusal (QA M7)
        self.first_run = await first_run_needed(engine=get_runtime().engines.async_)
        self.sso_enabled = OidcSettings.from_settings() is not None
        return None

    @rx.event
    async def load_invite(self):
        """On load of /invite/<token>: keep the token for the form's hidden field, and say at once
        when the link cannot be used (``invite_refusal``); ``invite_email``: whom it is for."""
        q = self.router.url.query_parameters
        self.error = error_message(str(q.get("error", "")), str(q.get("minutes", "")))
        self.invite_token = str(self.router.url.path).rstrip("/").rsplit("/", 1)[-1][:200]
        # a used, expired, revoked or unknown link says so up front: no form that only refuses on submit
        engine = get_runtime().engines.async_
        self.invite_refusal, self.invite_email = await check_invite(engine=engine, token=self.invite_token)
        self.invite_checked = True
