"""The shapes the review rights speak in: the acting person, a recorded decision, the answers.

Pure data, no rules: ``hitl_app.review.rights`` decides with them (and is where callers import
them from, beside the rules).
"""

# Tested by: tests/unit/review/test_rights.py

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


class Person(Protocol):
    """The acting account as the rules need it (``hitl_app.auth.Principal`` fits).

    ``account_id`` is compared as text with ``Card.owner_id``; ``role`` is one of ``ROLES`` (a
    ``str`` enum works); ``email`` is compared case-insensitively with named reviewers.
    """

    @property
    def account_id(self) -> int | str:
        """The account's id."""

    @property
    def display_name(self) -> str:
        """The name shown for the reviewer."""

    @property
    def email(self) -> str:
        """The account's email address."""

    @property
    def role(self) -> str:
        """One of ``ROLES``."""


@dataclass(frozen=True)
class RecordedDecision:
    """A decision already accepted for a card.

    Attributes:
        account_id: who decided, as text.
        display_name: their name at the time (plain text).
        type: one of ``DECISION_TYPES``.
        role: the role they decided with (for the audit record), may be ``""``.
    """

    account_id: str
    display_name: str
    type: str
    role: str = ""

    @classmethod
    def of(cls, person: Person, decision_type: str) -> RecordedDecision:
        """The record of ``person`` deciding ``decision_type``."""
        return cls(str(person.account_id), person.display_name, decision_type, str(person.role))


class RightsRefused(Exception):
    """A decision the acting person may not make; ``str()`` is the plain sentence to show."""


@dataclass(frozen=True)
class DecisionRights:
    """What one person may decide on one card.

    Attributes:
        allowed: decision types they may send now, in the card's order; empty = none.
        note: why some or all types are missing (the refusal to show), ``""`` when nothing is.
        reasons: decision type -> the refusal for that type (only for types the tool allows).
    """

    allowed: tuple[str, ...]
    note: str = ""
    reasons: Mapping[str, str] = field(default_factory=dict)

    @property
    def may_decide(self) -> bool:
        """True when at least one decision type is open to them."""
        return bool(self.allowed)


@dataclass(frozen=True)
class Verdict:
    """The answer to one proposed decision.

    Attributes:
        allowed: True = accept it.
        counts: True = it counts toward the card's approvals (an accepted approve/edit).
        message: the refusal to show when not allowed, else ``""``.
    """

    allowed: bool
    counts: bool = False
    message: str = ""


@dataclass(frozen=True)
class Progress:
    """Where a card stands.

    Attributes:
        needed: approvals the rule needs.
        approvers: display names of the distinct approvals that count, in order.
        complete: True when the card is decided (approvals reached, or a final decision).
        final: the recorded decision that decided it (for approvals, the one that completed the
            count), None while open.
        text: one line for the card, e.g. ``"1 of 2 approvals: Dana"`` or ``"Rejected by Lee"``.
    """

    needed: int
    approvers: tuple[str, ...]
    complete: bool
    final: RecordedDecision | None
    text: str

    @property
    def remaining(self) -> int:
        """Approvals still needed (0 when complete)."""
        return 0 if self.complete else max(0, self.needed - len(self.approvers))
