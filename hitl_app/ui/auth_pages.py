"""Sign-in, first-run and invite pages, and the sign-out button (not registered in the app yet).

The forms are plain HTML posts to the routes of ``hitl_app.auth.http``, which set or clear the
HttpOnly session cookie and redirect; no token ever reaches the page's scripts.
"""

from __future__ import annotations

import reflex as rx

from hitl_app.ui.auth_state import AuthState


def _field(label: str, name: str, kind: str, testid: str, autocomplete: str) -> rx.Component:
    return rx.el.label(
        rx.text(label, size="2"),
        rx.el.input(name=name, type=kind, required=True, auto_complete=autocomplete, data_testid=testid,
                    style={"width": "100%", "padding": "6px"}),
        style={"display": "block", "margin_bottom": "12px"},
    )


def _form(action: str, title: str, button: str, *fields: rx.Component) -> rx.Component:
    return rx.el.form(
        rx.heading(title, size="5", margin_bottom="12px"),
        *fields,
        rx.cond(AuthState.error != "", rx.text(AuthState.error, color="red", size="2", data_testid="auth-error")),
        rx.button(button, type="submit", data_testid="auth-submit"),
        action=action, method="post", style={"max_width": "360px", "margin": "48px auto"},
    )


def sign_in_page() -> rx.Component:
    """/sign-in: "Create the admin account" on a fresh install, else the sign-in form (+ SSO link)."""
    return rx.cond(
        AuthState.first_run,
        _form(
            "/auth/first-run", "Create the admin account", "Create account",
            _field("Email", "email", "email", "auth-email", "email"),
            _field("Name", "name", "text", "auth-name", "name"),
            _field("Password", "password", "password", "auth-password", "new-password"),
        ),
        rx.box(
            _form(
                "/auth/sign-in", "Sign in", "Sign in",
                _field("Email", "email", "email", "auth-email", "username"),
                _field("Password", "password", "password", "auth-password", "current-password"),
            ),
            rx.cond(AuthState.sso_enabled, rx.link("Sign in with single sign-on", href="/auth/oidc/login")),
        ),
    )


def invite_page() -> rx.Component:
    """/invite/<token> (on_load ``AuthState.load_invite``): choose a name and password."""
    return _form(
        "/auth/invite", "Join hitl_app", "Create account",
        rx.el.input(type="hidden", name="token", value=AuthState.invite_token),
        _field("Name", "name", "text", "auth-name", "name"),
        _field("Password", "password", "password", "auth-password", "new-password"),
    )


def sign_out_button() -> rx.Component:
    """A form button that ends this browser's session."""
    return rx.el.form(
        rx.button("Sign out", type="submit", variant="ghost", data_testid="sign-out"),
        action="/auth/sign-out", method="post",
    )
