"""The review-desk part of the policy: deadlines, what happens at a deadline, grants and undo.

In the policy file (TOML) a tool's table may carry, beside its review config and rights keys::

    [tools.send_email]
    deadline = "15m"          # how long a card may wait: "<n>s", "<n>m", "<n>h" or "<n>d"
    on_timeout = "reject"     # or "escalate" (then escalate_to names the role that decides next)
    timeout_message = "Nobody approved the email in time; do not send it."  # the model sees it
    escalate_to = "admin"     # with on_timeout = "escalate"
    grantable = true          # false: no "always allow" grant may cover this tool
    undo_seconds = 10         # after Submit, the run waits this long and may be undone

Unset keys: no deadline, grants allowed, no undo window. ``parse_tool_desk`` reads them from
one tool's table (already decoded) and refuses anything it does not understand with one line
starting with the key. Pure: no I/O, nothing of the app imported but ``rights_policy`` roles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from hitl_app.review.rights_policy import ROLES

DESK_KEYS: frozenset[str] = frozenset(
    {"deadline", "on_timeout", "timeout_message", "escalate_to", "grantable", "undo_seconds"}
)
"""The keys of a tool's table read by ``parse_tool_desk``."""

MAX_UNDO_SECONDS = 300
"""The longest undo window accepted, in seconds."""

MAX_DEADLINE_S = 30 * 24 * 3600
"""The longest deadline accepted (30 days), in seconds."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}

OnTimeout = Literal["reject", "escalate"]


class DeskPolicyError(ValueError):
    """A desk key that cannot be used; ``str()`` is one line starting with the key."""


@dataclass(frozen=True)
class ToolDesk:
    """One tool's deadline, grant and undo settings.

    Attributes:
        deadline_s: seconds a card may wait before ``on_timeout`` applies; None = no deadline.
        on_timeout: ``"reject"`` (the run resumes with a rejection the model reads) or
            ``"escalate"`` (``escalate_to`` may decide from then on).
        timeout_message: the rejection message the model sees ("" = a default sentence).
        escalate_to: the role an escalated card goes to (``"admin"`` by default).
        grantable: False = no grant may cover the tool (the server refuses one, even forged).
        undo_seconds: the undo window after Submit, in seconds (0 = the run resumes at once).
    """

    deadline_s: float | None = None
    on_timeout: OnTimeout = "reject"
    timeout_message: str = ""
    escalate_to: str = "admin"
    grantable: bool = True
    undo_seconds: int = 0

    def describe(self) -> dict[str, Any]:
        """Plain data for display/logging."""
        return {
            "deadline_s": self.deadline_s, "on_timeout": self.on_timeout, "escalate_to": self.escalate_to,
            "grantable": self.grantable, "undo_seconds": self.undo_seconds,
        }


DEFAULT_DESK = ToolDesk()
"""A tool the policy says nothing about: no deadline, grantable, no undo window."""


def parse_duration(value: Any, key: str = "deadline") -> float:
    """Seconds in ``"15m"``-style text (``s``, ``m``, ``h``, ``d``; a bare number is seconds).

    Raises:
        DeskPolicyError: not such text, zero, or longer than 30 days.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION.match(value) if isinstance(value, str) else None
        if match is None:
            raise DeskPolicyError(f'{key}: {value!r} is not a duration; write e.g. "90s", "15m", "2h" or "1d"')
        seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if not 0 < seconds <= MAX_DEADLINE_S:
        raise DeskPolicyError(f"{key}: must be more than 0 and at most 30 days")
    return seconds


def human_duration(seconds: float) -> str:
    """``"15 min"``, ``"2 h"``, ``"1 h 30 min"``, ``"45 s"``, ``"1 day"`` for a duration in seconds."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds % 86400 == 0:
        days = seconds // 86400
        return f"{days} day{'s' if days != 1 else ''}"
    hours, rest = divmod(seconds, 3600)
    minutes = rest // 60
    if hours and minutes:
        return f"{hours} h {minutes} min"
    return f"{hours} h" if hours else f"{minutes} min"


def parse_tool_desk(table: Mapping[str, Any]) -> ToolDesk:
    """Read the ``DESK_KEYS`` of one tool's table (other keys are ignored: the caller checks them).

    Raises:
        DeskPolicyError: a bad duration, an unknown ``on_timeout``, a role that does not exist,
            ``escalate_to`` without ``on_timeout = "escalate"``, ``on_timeout`` without a
            deadline, a non-boolean ``grantable``, ``undo_seconds`` outside 0..300.
    """
    deadline = parse_duration(table["deadline"]) if "deadline" in table else None
    on_timeout = table.get("on_timeout", "reject")
    if on_timeout not in ("reject", "escalate"):
        raise DeskPolicyError(f'on_timeout: {on_timeout!r} is not "reject" or "escalate"')
    if "on_timeout" in table and deadline is None:
        raise DeskPolicyError('on_timeout: set a deadline too, e.g. deadline = "15m"')
    message = table.get("timeout_message", "")
    if not isinstance(message, str) or len(message) > 1000:
        raise DeskPolicyError("timeout_message: must be text of at most 1000 characters")
    escalate_to = table.get("escalate_to", "admin")
    if escalate_to not in ROLES:
        raise DeskPolicyError(f"escalate_to: {escalate_to!r} is not a role ({', '.join(ROLES)})")
    if "escalate_to" in table and on_timeout != "escalate":
        raise DeskPolicyError('escalate_to: only used with on_timeout = "escalate"')
    grantable = table.get("grantable", True)
    if not isinstance(grantable, bool):
        raise DeskPolicyError("grantable: must be true or false (without quotes)")
    undo = table.get("undo_seconds", 0)
    if isinstance(undo, bool) or not isinstance(undo, int) or not 0 <= undo <= MAX_UNDO_SECONDS:
        raise DeskPolicyError(f"undo_seconds: must be a whole number from 0 to {MAX_UNDO_SECONDS}")
    return ToolDesk(deadline, on_timeout, message.strip(), escalate_to, grantable, undo)


@dataclass(frozen=True)
class Deadline:
    """When a review's first card runs out of time, and what then happens.

    Attributes:
        due_at: aware UTC time.
        tool: the tool whose deadline it is (the earliest of the review's cards).
        desk: that tool's settings (``on_timeout``, messages).
    """

    due_at: datetime
    tool: str
    desk: ToolDesk

    def seconds_left(self, now: datetime) -> float:
        """Seconds until ``due_at`` (negative once passed)."""
        return (self.due_at - now).total_seconds()


def review_deadline(requested_at: datetime, tools: Iterable[str], desks: Mapping[str, ToolDesk]) -> Deadline | None:
    """The deadline of a review raised at ``requested_at`` whose cards call ``tools``: the earliest
    of the tools' deadlines (ties: the first card), or None when no tool has one."""
    best: Deadline | None = None
    for tool in tools:
        desk = desks.get(tool, DEFAULT_DESK)
        if desk.deadline_s is None:
            continue
        due = requested_at + timedelta(seconds=desk.deadline_s)
        if best is None or due < best.due_at:
            best = Deadline(due, tool, desk)
    return best


def undo_window(tools: Iterable[str], desks: Mapping[str, ToolDesk]) -> int:
    """The undo window of a review, in seconds: the longest of its tools' (0 = none)."""
    return max((desks.get(t, DEFAULT_DESK).undo_seconds for t in tools), default=0)


def expiry_note(deadline_s: float, outcome: OnTimeout, role: str = "") -> str:
    """The audit text of an expiry: ``"expired after 15 min, rejected by policy"``."""
    if outcome == "escalate":
        return f"expired after {human_duration(deadline_s)}, escalated to {role or 'admin'} by policy"
    return f"expired after {human_duration(deadline_s)}, rejected by policy"


POLICY_REJECTED = "Rejected by the policy"
"""How every card a deadline rejected begins its message (the tool row, the summary, the audit)."""


def deadline_passed(deadline_s: float, deadline_card: int) -> str:
    """``"the deadline of card 3 passed (1 min without a decision)"``; ``deadline_card`` 0-based."""
    return f"the deadline of card {deadline_card + 1} passed ({human_duration(deadline_s)} without a decision)"


def policy_rejection(*, tool: str, card: int, deadline_card: int, deadline_s: float, custom: str = "") -> str:
    """What the model reads, and the tool row keeps, for card ``card`` (0-based) that the deadline of
    card ``deadline_card`` rejected: the card's own deadline, or a sibling's (the whole review is
    answered at once, so a card without a deadline is rejected with it; issue 23: never "no reviewer
    decided within 0 s"). ``custom``: the policy's ``timeout_message`` for the card's own deadline.

    E.g. ``"Rejected by the policy: the deadline of card 3 passed (1 min without a decision). That
    answered the whole review, so the send_email call did not run. Do not retry it unless the user
    asks again."``"""
    head = f"{POLICY_REJECTED}: {deadline_passed(deadline_s, deadline_card)}."
    if card == deadline_card:
        body = custom or f"The {tool} call did not run. Do not retry it unless the user asks again."
    else:
        body = f"That answered the whole review, so the {tool} call did not run. Do not retry it unless the user asks again."
    return f"{head} {body}"


def policy_rejection_note(*, card: int, deadline_card: int, deadline_s: float) -> str:
    """The audit text (and the tool row's line) of such a card: ``"rejected by the policy: the
    deadline of card 3 passed (1 min without a decision)"``, plus ``", which answered the whole
    review"`` on a sibling card."""
    note = f"{POLICY_REJECTED.lower()}: {deadline_passed(deadline_s, deadline_card)}"
    return note if card == deadline_card else note + ", which answered the whole review"


def desks_by_tool(rules: Iterable[Any]) -> dict[str, ToolDesk]:
    """``{tool: ToolDesk}`` from policy rules (objects with ``tool`` and ``desk``); a tool
    without a rule has ``DEFAULT_DESK``."""
    return {r.tool: r.desk for r in rules}
