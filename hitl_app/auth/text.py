"""Rules for what people type: emails, display names and new passwords (pure functions)."""

from __future__ import annotations

import re
import unicodedata

from hitl_app.auth.types import AuthError

MAX_EMAIL = 320
MAX_NAME = 100
MIN_PASSWORD = 8
MAX_PASSWORD = 1024
NAME_TOO_LONG = f"Use at most {MAX_NAME} characters for the name"

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_INVISIBLE = {"Cc", "Cf", "Zl", "Zp"}  # control, format (zero-width, bidi overrides), line/para separators


def normalize_email(email: str) -> tuple[str, str]:
    """Return ``(email as shown, email key)`` for a typed address.

    The shown form is trimmed and NFC-normalised; the key is its lower-case form, which is what
    accounts are looked up and kept unique by (so ``Dana@Example.com`` and ``dana@example.com`` are
    the same account).

    Raises:
        AuthError: "Enter an email address like name@example.com" for anything without exactly one
            ``@`` with text on both sides, with spaces, or longer than 320 characters.
    """
    shown = unicodedata.normalize("NFC", (email or "").strip())
    if len(shown) > MAX_EMAIL or not _EMAIL.match(shown):
        raise AuthError("Enter an email address like name@example.com")
    return shown, shown.casefold()


def email_key(email: str) -> str:
    """The lookup key of a typed email; "" when it is not an address (so it matches no account)."""
    try:
        return normalize_email(email)[1]
    except AuthError:
        return ""


def clean_display_name(name: str, *, cut: bool = False) -> str:
    """A display name as stored: plain text, one line, at most 100 characters.

    Control, zero-width and bidi-override characters are removed and runs of whitespace become
    one space. Markup is NOT interpreted or escaped here: ``<b>Dana</b>`` stays those 11 characters,
    and the UI renders names as text. ``cut``: a longer name is cut to 100 characters (a name
    from a single sign-on provider, which the person cannot fix here) instead of refused.

    Raises:
        AuthError: "Enter a name" when nothing printable is left; "Use at most 100 characters for
            the name (this one has 3,000)" for a longer one (unless ``cut``).
    """
    text = unicodedata.normalize("NFC", name or "")
    text = "".join(" " if ch.isspace() else "" if unicodedata.category(ch) in _INVISIBLE else ch for ch in text)
    text = " ".join(text.split())
    if len(text) > MAX_NAME and not cut:
        raise AuthError(f"{NAME_TOO_LONG} (this one has {len(text):,})")
    text = text[:MAX_NAME].strip()
    if not text:
        raise AuthError("Enter a name")
    return text


def check_new_password(password: str) -> None:
    """Refuse a new password that is too short or absurdly long.

    Raises:
        AuthError: "Use at least 8 characters for the password" or "... at most 1024 ...".
    """
    if len(password or "") < MIN_PASSWORD:
        raise AuthError(f"Use at least {MIN_PASSWORD} characters for the password")
    if len(password) > MAX_PASSWORD:
        raise AuthError(f"Use at most {MAX_PASSWORD} characters for the password")
