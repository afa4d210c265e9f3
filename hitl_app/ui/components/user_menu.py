"""The user menu in the header: who is signed in (name, email, role), Admin, Webhooks, API tokens, and the sign-out forms.

Names and emails are rendered as text nodes (React escapes them), never as markup. Sign-out is a
plain form post to ``/auth/sign-out`` (the HttpOnly cookie is cleared by the server's answer).
"""

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.components.plain_form import plain_form
from hitl_app.ui.state.session import SessionState

_ELLIPSIS = {"overflow": "hidden", "textOverflow": "ellipsis", "whiteSpace": "nowrap", "minWidth": "0"}


def _sign_out_form(label: str, testid: str, everywhere: bool) -> rx.Component:
    """A form button posting to /auth/sign-out (``everywhere``: every session of the account)."""
    return plain_form(
        *([rx.el.input(type="hidden", name="everywhere", value="1")] if everywhere else []),
        rx.button(
            rx.icon("log-out", size=14), label, type="submit", variant="soft" if not everywhere else "ghost",
            color_scheme="gray", size="2", width="100%", justify="start", data_testid=testid,
        ),
        action="/auth/sign-out", method="post", width="100%",
    )


def user_menu() -> rx.Component:
    """Header control (test id ``user-menu``): the account's name; opens its details and sign-out."""
    return rx.popover.root(
        rx.popover.trigger(
            rx.button(
                rx.icon("circle-user", size=16),
                rx.text(SessionState.user_name, display=["none", "none", "inline"], max_width="160px", style=_ELLIPSIS,
                        title=SessionState.user_name),
                variant="ghost", size="2", aria_label="Account", data_testid="user-menu",
            ),
        ),
        rx.popover.content(
            rx.vstack(
                rx.text(SessionState.user_name, weight="bold", size="2", width="100%", style=theme.WRAP,
                        data_testid="user-menu-name"),
                rx.text(SessionState.user_email, size="1", color=theme.MUTED, width="100%", style=_ELLIPSIS),
                rx.badge(SessionState.user_role, color_scheme="gray", data_testid="user-menu-role"),
                rx.separator(size="4"),
                rx.cond(
                    SessionState.user_role == "admin",
                    rx.link(rx.hstack(rx.icon("users", size=14), rx.text("Accounts", size="2"), align="center", spacing="2"),
                            href="/admin", data_testid="admin-link", underline="none"),
                ),
                rx.cond(
                    SessionState.user_role == "admin",
                    rx.link(rx.hstack(rx.icon("webhook", size=14), rx.text("Webhooks", size="2"), align="center", spacing="2"),
                            href="/admin/webhooks", data_testid="webhooks-menu-link", underline="none"),
                ),
                rx.link(rx.hstack(rx.icon("key-round", size=14), rx.text("API tokens", size="2"), align="center", spacing="2"),
                        href="/account", data_testid="tokens-link", underline="none"),
                _sign_out_form("Sign out", "sign-out", everywhere=False),
                _sign_out_form("Sign out everywhere", "sign-out-everywhere", everywhere=True),
                spacing="2",
                width="100%",
            ),
            width="240px",
            align="end",
            aria_label="Your account",
        ),
    )
