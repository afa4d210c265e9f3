"""State of the account page (/account): the signed-in person's personal API tokens.

A person makes a token (name, scopes, lifetime), sees it once, lists theirs and revokes them. The
token goes to the browser in a one-shot event (``admin.show_secret``), never in a state var, so it
is not saved with the tab. Every handler re-checks the session first (``_require_principal``); the
rules (scopes, lifetime, how many) are in ``hitl_app.auth.api_tokens``, which refuses with a
sentence shown on the page.
"""

# Tested by: tests/e2e/test_api_tokens.py

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.auth.api_tokens import SCOPES, ApiTokenRefused, TokenView, create_api_token, list_api_tokens, revoke_api_token
from hitl_app.runtime import get_runtime
from hitl_app.ui.state.admin import show_secret
from hitl_app.ui.state.session import SessionState, sign_in_redirect

TOKEN_BOX_ID = "token-secret"
"""The DOM id of the box the new token is written into (once)."""
LIFETIMES = ["30", "90", "365"]
"""The lifetimes offered, in days."""


@dataclass
class TokenRow:
    """One token as the page lists it (plain text; never the token itself)."""

    token_id: int
    name: str
    prefix: str
    scopes: str
    created: str
    expires: str
    last_used: str
    state: str


def _when(value: datetime | None) -> str:
    return f"{value.astimezone(UTC):%b %-d %Y, %H:%M} UTC" if value else "never"


def _row(t: TokenView) -> TokenRow:
    return TokenRow(t.token_id, t.name, t.prefix + "…", " + ".join(t.scopes), _when(t.created_at), _when(t.expires_at),
                    _when(t.last_used_at), t.state)


def _text(form: dict[str, Any], key: str) -> str:
    value = form.get(key)
    return value.strip() if isinstance(value, str) else ""


class AccountState(SessionState):
    """The person's tokens and the outcome of the last action (a new token shown once)."""

    tokens: list[TokenRow] = []
    message: str = ""
    error: str = ""
    secret_shown: bool = False
    """A token was just made: its box shows, filled by the browser from the one-shot event."""

    async def _reload(self, who: Principal) -> None:
        self.tokens = [_row(t) for t in await list_api_tokens(engine=get_runtime().engines.async_, owner=who)]

    @rx.event
    async def load(self):
        """on_load of /account: the signed-in person's tokens."""
        if (who := await self._require_principal()) is None:
            return sign_in_redirect()
        self.message = self.error = ""
        self.secret_shown = False
        await self._reload(who)
        return None

    @rx.event
    async def create_token(self, form_data: dict[str, Any]):
        """Make a token from the form (``name``, a checkbox per scope, ``days``); shown once."""
        if (who := await self._require_principal()) is None:
            return sign_in_redirect()
        self.message = self.error = ""
        self.secret_shown = False
        form = form_data if isinstance(form_data, dict) else {}
        name, days_text = _text(form, "name"), _text(form, "days")
        scopes = [s for s in SCOPES if form.get(s) in ("on", "true", True)]
        try:
            token, view = await create_api_token(
                engine=get_runtime().engines.async_, owner=who, name=name, scopes=scopes,
                days=int(days_text) if days_text.isdigit() else 0,
                max_days=get_runtime().settings.api_token_max_days,
            )
        except ApiTokenRefused as exc:
            self.error = str(exc)
            return None
        await self._reload(who)
        self.message = f"Token “{view.name}” made. Copy it now: it is shown only this once."
        self.secret_shown = True
        return show_secret(token, TOKEN_BOX_ID)

    @rx.event
    async def revoke_token(self, token_id: int):
        """Revoke one of the person's tokens: the API refuses it from the next request."""
        if (who := await self._require_principal()) is None:
            return sign_in_redirect()
        self.message = self.error = ""
        self.secret_shown = False
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            self.error = "No such token."
            return None
        if await revoke_api_token(engine=get_runtime().engines.async_, owner=who, token_id=token_id):
            self.message = "Token revoked: the API refuses it from now on."
        else:
            self.error = "That token is not one of your live tokens."
        await self._reload(who)
        return None
