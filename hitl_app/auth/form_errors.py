"""The sign-in forms' refusals: the ``?error=`` codes a form redirect carries, the sentence each one
shows on the page, and the code and HTTP status of a refused request (``hitl_app.auth.http``)."""

from __future__ import annotations

from hitl_app.auth import accounts
from hitl_app.auth.oidc import OidcError
from hitl_app.auth.text import NAME_TOO_LONG
from hitl_app.auth.types import AccountDisabled, AuthError, TooManyAttempts, WrongCredentials

ERROR_MESSAGES = {
    "wrong": "Wrong email or password",
    "locked": "Too many attempts; try again in {minutes} minutes",
    "disabled": "This account is disabled",
    "was_disabled": "Your account was disabled, so you were signed out. Ask an admin to enable it again.",
    "sso": "Single sign-on did not complete; try again",
    "password": "Use at least 8 characters for the password",
    "email": "Enter an email address like name@example.com",
    "name": "Enter a name",
    "long_name": NAME_TOO_LONG,
    "taken": accounts.EMAIL_TAKEN,
    "invite": accounts.INVITE_INVALID,
    "setup": accounts.SETUP_DONE,
    "current": "The current password is wrong",
    "same": "Choose a new password that differs from the current one",
    "invalid": "That did not work; check the form and try again",
}
"""``?error=`` codes of the form redirects and the sentence to show (``locked`` takes ``minutes``)."""


def error_message(code: str, minutes: str = "") -> str:
    """The sentence for an ``?error=`` code ("" for an unknown code)."""
    text = ERROR_MESSAGES.get(code, "")
    return text.format(minutes=minutes if minutes.isdigit() else "a few") if text else ""


def error_code(exc: AuthError) -> tuple[str, int]:
    """The ``?error=`` code and HTTP status for a refused sign-in form (``"invalid"``, 400 for a sentence
    not in ``ERROR_MESSAGES``)."""
    if isinstance(exc, TooManyAttempts):
        return "locked", 429
    if isinstance(exc, WrongCredentials):
        return "wrong", 401
    if isinstance(exc, AccountDisabled):
        return "disabled", 403
    if isinstance(exc, OidcError):
        return "sso", 400
    known = {text: code for code, text in ERROR_MESSAGES.items()}
    if str(exc).startswith("Choose a new password"):
        return "same", 400
    if str(exc).startswith(NAME_TOO_LONG):
        return "long_name", 400
    return known.get(str(exc), "invalid"), 400
