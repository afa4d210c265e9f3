"""The types the rest of the app uses for people: ``Role``, ``Principal``, ``AuthConfig`` and errors.

Every error a person can act on is an ``AuthError`` whose ``str()`` is the plain sentence to show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from hitl_app.settings import Settings, get_settings


class Role(StrEnum):
    """What an account may do.

    ``member`` chats and decides reviews on their own threads; ``reviewer`` also decides reviews on
    other people's threads where the policy lets them; ``admin`` also manages accounts and sees
    every audit record.
    """

    MEMBER = "member"
    REVIEWER = "reviewer"
    ADMIN = "admin"

    @classmethod
    def parse(cls, value: str) -> Role:
        """The role named ``value`` (any case, surrounding spaces ignored).

        Raises:
            AuthError: "Unknown role ..." naming the three roles.
        """
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise AuthError(f"Unknown role {value!r}: use member, reviewer or admin.") from None


@dataclass(frozen=True)
class Principal:
    """The signed-in account as the app sees it on one event.

    ``account_id`` is the ``accounts.id`` (0 for ``SYSTEM``); ``display_name`` is plain text (render
    it as text, never as markup); ``must_change_password`` asks the UI to show the change-password
    form before anything else.
    """

    account_id: int
    display_name: str
    role: Role
    email: str = ""
    must_change_password: bool = False

    @property
    def is_admin(self) -> bool:
        """True for the admin role."""
        return self.role is Role.ADMIN


SYSTEM = Principal(account_id=0, display_name="command line", role=Role.ADMIN)
"""The acting principal for the command line and set-up scripts (trusted: it has shell access)."""


ANYWHERE_FACTOR = 10
"""An account's failures from all addresses together may reach this many times the per-address limit."""


@dataclass(frozen=True)
class AuthConfig:
    """Knobs of sign-in: session lifetime, rate limits and invite lifetime (see ``Settings``).

    ``session_ttl`` ends a session after that long without activity; ``session_max_age`` ends it
    that long after sign-in, however active. ``max_failures_per_account`` counts per (account,
    address) pair, ``max_failures_per_account_anywhere`` per account over all addresses (see
    ``hitl_app.auth.attempts``).
    """

    session_ttl: timedelta = timedelta(days=7)
    max_failures_per_account: int = 5
    max_failures_per_address: int = 20
    failure_window: timedelta = timedelta(minutes=15)
    invite_ttl: timedelta = timedelta(days=3)
    max_failures_per_account_anywhere: int = 50
    session_max_age: timedelta = timedelta(days=30)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> AuthConfig:
        """Build the config from ``settings`` (default: the process-wide settings)."""
        s = settings or get_settings()
        return cls(
            session_ttl=timedelta(hours=s.session_hours),
            max_failures_per_account=s.signin_max_failures,
            max_failures_per_address=s.signin_max_failures_per_address,
            failure_window=timedelta(minutes=s.signin_window_minutes),
            invite_ttl=timedelta(hours=s.invite_hours),
            max_failures_per_account_anywhere=s.signin_max_failures * ANYWHERE_FACTOR,
            session_max_age=timedelta(days=s.session_max_days),
        )


class AuthError(Exception):
    """A refusal a person can act on; ``str(error)`` is the sentence to show them."""


class WrongCredentials(AuthError):
    """Email or password did not match (never says which)."""

    def __init__(self) -> None:
        super().__init__("Wrong email or password")


class TooManyAttempts(AuthError):
    """Too many failed sign-ins in the window; ``minutes`` until the next try is allowed (>= 1)."""

    def __init__(self, wait: timedelta) -> None:
        self.minutes = max(1, math.ceil(wait.total_seconds() / 60))
        unit = "minute" if self.minutes == 1 else "minutes"
        super().__init__(f"Too many attempts; try again in {self.minutes} {unit}")


class AccountDisabled(AuthError):
    """The account exists but an admin disabled it."""

    def __init__(self) -> None:
        super().__init__("This account is disabled")


class NotAllowed(AuthError):
    """The acting principal lacks the rights for this change."""
