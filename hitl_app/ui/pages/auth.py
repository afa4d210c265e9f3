"""Sign-in, first-run, change-password and invite pages.

The forms are plain HTML posts to the routes of ``hitl_app.auth.http``, which set or clear the
HttpOnly session cookie and redirect; no token ever reaches the page's scripts. A failed post comes
back with ``?error=<code>`` and the sentence is shown in ``auth-error``.
"""

from __future__ import annotations

from typing import Any

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.components.plain_form import plain_form
from hitl_app.ui.state.auth import AuthState

_INPUT = {
    "width": "100%", "boxSizing": "border-box", "padding": "8px 10px", "fontSize": "15px",
    "border": "1px solid var(--gray-7)", "borderRadius": "6px", "background": "var(--color-background)",
    "color": "var(--gray-12)",
}


def _field(label: str, name: str, kind: str, testid: str, autocomplete: str, hint: str = "", value: Any = None) -> rx.Component:
    """A labelled input of a plain form (``name`` is the posted field; ``value`` its initial text)."""
    extra: dict[str, Any] = {"min_length": 8} if autocomplete == "new-password" else {}
    if value is not None:  # the key remounts the input when the value arrives after the page's load
        extra["default_value"], extra["key"] = value, "field-" + name + "-" + value
    return rx.el.label(
        rx.text(label, size="2", weight="medium"),
        rx.el.input(name=name, type=kind, required=True, auto_complete=autocomplete, data_testid=testid, style=_INPUT, **extra),
        *([rx.text(hint, size="1", color=theme.MUTED)] if hint else []),
        style={"display": "flex", "flexDirection": "column", "gap": "4px", "width": "100%"},
    )


def _form(action: str, title: str, intro: rx.Component | str, button: str, *fields: rx.Component) -> rx.Component:
    """One card with a heading, a short explanation, the fields, the error and the submit button."""
    return plain_form(
        rx.vstack(
            rx.heading(title, size="5"),
            rx.text(intro, size="2", color=theme.MUTED) if isinstance(intro, str) else intro,
            *fields,
            rx.cond(
                AuthState.error != "",
                rx.callout(AuthState.error, color_scheme="red", icon="triangle-alert", size="1", width="100%",
                           data_testid="auth-error"),
            ),
            rx.button(button, type="submit", size="3", width="100%", data_testid="auth-submit"),
            spacing="4",
            width="100%",
        ),
        action=action, method="post", style={"width": "100%"},
    )


def _frame(*children: rx.Component) -> rx.Component:
    """The centred card every sign-in page sits in, with the app's name above it."""
    return rx.center(
        rx.vstack(
            rx.hstack(rx.icon("shield-check", size=22), rx.text("hitl_app", weight="bold", size="4"),
                      align="center", spacing="2"),
            rx.card(rx.vstack(*children, spacing="4", width="100%"), size="3", width="100%"),
            align="center",
            spacing="4",
            width="100%",
            max_width="400px",
        ),
        min_height="100dvh",
        padding="24px 16px",
        background="var(--gray-2)",
    )


def _first_run_form() -> rx.Component:
    return _form(
        "/auth/first-run", "Create the admin account",
        "This is a new install. The first account is the admin: it invites the others and sets their roles.",
        "Create account and sign in",
        _field("Your name", "name", "text", "auth-name", "name"),
        _field("Email", "email", "email", "auth-email", "email"),
        _field("Password", "password", "password", "auth-password", "new-password", "At least 8 characters."),
    )


def _sign_in_form() -> rx.Component:
    return rx.vstack(
        _form(
            "/auth/sign-in", "Sign in", "Sign in to chat with the agent and decide its reviews.", "Sign in",
            _field("Email", "email", "email", "auth-email", "username", value=AuthState.email_typed),
            _field("Password", "password", "password", "auth-password", "current-password"),
        ),
        rx.cond(
            AuthState.sso_enabled,
            rx.vstack(
                rx.hstack(rx.separator(size="4"), rx.text("or", size="1", color=theme.MUTED), rx.separator(size="4"),
                          align="center", width="100%"),
                # a full page load to the route (reload_document), not a navigation inside the page
                rx.button(
                    rx.link(rx.icon("key-round", size=16), "Sign in with single sign-on", href="/auth/oidc/login",
                            reload_document=True, data_testid="sso-link"),
                    as_child=True, variant="outline", size="3", width="100%",
                ),
                width="100%",
                spacing="3",
            ),
        ),
        width="100%",
        spacing="4",
    )


def _change_password_form() -> rx.Component:
    return rx.vstack(
        _form(
            "/auth/change-password", "Choose your password",
            rx.text("Signed in as ", rx.text.strong(AuthState.display_name),
                    " with a temporary password. Choose your own to continue.", size="2", color=theme.MUTED, style=theme.WRAP),
            "Save and continue",
            _field("Temporary password", "current", "password", "auth-current-password", "current-password"),
            _field("New password", "password", "password", "auth-password", "new-password", "At least 8 characters."),
        ),
        plain_form(rx.button("Sign out", type="submit", variant="ghost", size="2"), action="/auth/sign-out", method="post"),
        width="100%",
        spacing="2",
        align="center",
    )


def sign_in_page() -> rx.Component:
    """/sign-in: "Create the admin account" on a fresh install; the change-password form for a
    temporary password; else the sign-in form (and single sign-on when configured)."""
    return _frame(
        rx.cond(
            AuthState.first_run,
            _first_run_form(),
            rx.cond(AuthState.must_change, _change_password_form(), _sign_in_form()),
        )
    )


def _invite_refused() -> rx.Component:
    """A used, expired, revoked or unknown invite link: why, and the way to sign in."""
    return rx.vstack(
        rx.heading("This invite link cannot be used", size="5"),
        rx.callout(AuthState.invite_refusal, color_scheme="amber", icon="link-2-off", width="100%",
                   data_testid="invite-refused"),
        rx.link("Go to sign-in", href="/sign-in", size="2"),
        spacing="4", width="100%",
    )


def invite_page() -> rx.Component:
    """/invite/<token> (on_load ``AuthState.load_invite``): choose a name and password; a link that
    cannot be used any more says why instead (no form)."""
    return _frame(
        rx.cond(
            ~AuthState.invite_checked,
            rx.hstack(rx.spinner(size="2"), rx.text("Checking the invite…", size="2", color=theme.MUTED), align="center"),
            rx.cond(
                AuthState.invite_refusal != "",
                _invite_refused(),
                rx.vstack(
                    _form(
                        "/auth/invite", "Join hitl_app",
                        rx.text("You were invited as ", rx.text.strong(AuthState.invite_email, data_testid="invite-email"),
                                ". Choose the name others will see and a password.", size="2", color=theme.MUTED,
                                style=theme.WRAP),
                        "Create account and sign in",
                        rx.el.input(type="hidden", name="token", value=AuthState.invite_token),
                        _field("Your name", "name", "text", "auth-name", "name"),
                        _field("Password", "password", "password", "auth-password", "new-password",
                               "At least 8 characters."),
                    ),
                    rx.link("I already have an account", href="/sign-in", size="2"),
                    spacing="4", width="100%", align="center",
                ),
            ),
        ),
    )
