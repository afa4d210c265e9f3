"""The risk part of the policy: how risky a tool's calls are, in one level and one line.

In the policy file (TOML) a tool's table may carry, beside its review config and rights keys::

    [tools.transfer_funds]
    risk = "high"                                        # "low", "medium" or "high"
    risk_note = "Moves money out of the company account" # one line shown on the card

The approval card shows the level as a badge with the note beside it. A high-risk card is never
filled by "Approve all" / "Approve the rest" (``hitl_app.review.draft``): each one is decided on
its own. Unset keys mean no badge.

``on_reject = "stop"`` makes the card's reject "reject and stop" by default (the run ends and the
model is told not to retry); ``"tell"`` (the default) sends the reason back and the run goes on.
The reviewer can switch it on each card. Pure: no I/O, nothing of the app imported.
"""

# Tested by: tests/unit/review/test_risk_policy.py

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

RISK_LEVELS: tuple[str, ...] = ("low", "medium", "high")
"""The levels, lowest first."""

RISK_KEYS: frozenset[str] = frozenset({"risk", "risk_note", "on_reject"})
"""The keys of a tool's table read by ``parse_tool_risk``."""

MAX_NOTE_CHARS = 200
"""The longest ``risk_note`` accepted (it is one line on a card)."""


class RiskPolicyError(ValueError):
    """A risk key that cannot be used; ``str()`` is one line starting with the key."""


@dataclass(frozen=True)
class ToolRisk:
    """How risky one tool's calls are.

    Attributes:
        level: ``""`` (not set), or one of ``RISK_LEVELS``.
        note: one line saying why (``""`` when none).
        reject_stops: the card's reject stops the run by default (``on_reject = "stop"``).
    """

    level: str = ""
    note: str = ""
    reject_stops: bool = False

    @property
    def high(self) -> bool:
        """True for ``level == "high"`` (no bulk approval)."""
        return self.level == "high"


NO_RISK = ToolRisk()
"""A tool the policy gives no risk level."""


def parse_tool_risk(table: Mapping[str, Any]) -> ToolRisk:
    """Read ``risk`` and ``risk_note`` from a tool's table (other keys are ignored).

    Raises:
        RiskPolicyError: ``risk`` not one of ``RISK_LEVELS``; ``risk_note`` not a one-line string
            of at most ``MAX_NOTE_CHARS`` characters, or given without ``risk``.
    """
    level = table.get("risk", "")
    if level != "" and (not isinstance(level, str) or level.strip().lower() not in RISK_LEVELS):
        raise RiskPolicyError(f"risk: must be one of {', '.join(repr(r) for r in RISK_LEVELS)} (got {level!r})")
    note = table.get("risk_note", "")
    if not isinstance(note, str) or "\n" in note or len(note) > MAX_NOTE_CHARS:
        raise RiskPolicyError(f"risk_note: must be one line of text, at most {MAX_NOTE_CHARS} characters")
    if note.strip() and not level:
        raise RiskPolicyError('risk_note: set risk too, e.g. risk = "high"')
    on_reject = table.get("on_reject", "tell")
    if on_reject not in ("tell", "stop"):
        raise RiskPolicyError(f'on_reject: must be "tell" or "stop" (got {on_reject!r})')
    return ToolRisk(level=level.strip().lower(), note=note.strip(), reject_stops=on_reject == "stop")


class _HasRisk(Protocol):
    @property
    def tool(self) -> str: ...
    @property
    def risk(self) -> ToolRisk: ...


def risks_by_tool(rules: Iterable[_HasRisk]) -> dict[str, ToolRisk]:
    """``{tool: ToolRisk}`` for the rules that set a level or ``on_reject`` (a tool not listed has ``NO_RISK``)."""
    return {r.tool: r.risk for r in rules if r.risk.level or r.risk.reject_stops}
