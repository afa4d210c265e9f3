"""Run limits: how long and how far one run may go, and how many runs and messages one owner gets.

All counts are per worker process (with several workers, each applies them on its own) and hold
entries only while they matter: an owner's run count while it has runs, its message times for one
minute. A refusal is a ``ThreadError(code="limited")`` whose message says what to do.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from hitl_app.errors import ThreadError


@dataclass(frozen=True)
class RunLimits:
    """The limits a ``ThreadService`` applies (defaults are the settings' defaults).

    Attributes:
        run_timeout_s: wall-clock seconds one run may take before it is stopped.
        max_steps: graph steps one run may take (LangGraph ``recursion_limit``). Every
            middleware hook is a step of its own: with the built-in agent a run takes one step
            to start, then six per model call (the model, four after_model hooks, the tools).
        runs_per_owner: runs one owner may have live at once.
        messages_per_minute: new messages one owner may send per minute.
        max_runs: runs live at once in this worker, all owners together.
    """

    run_timeout_s: float = 600.0
    max_steps: int = 50
    runs_per_owner: int = 3
    messages_per_minute: int = 30
    max_runs: int = 32

    def time_limit_text(self) -> str:
        """What the thread says when a run reached ``run_timeout_s``."""
        took = duration_text(self.run_timeout_s)
        return f"The run took longer than {took}; it was stopped. Send a new message or press Retry."

    def unconfirmed_resume_text(self) -> str:
        """What the thread says when a deployed agent had not taken a resume when ``run_timeout_s`` was reached
        (the request may still reach it, so its decisions stay recorded; see ``RunDriver._stream``)."""
        took = duration_text(self.run_timeout_s)
        return (
            f"The agent deployment did not confirm your decisions within {took}. They may still reach it and be "
            "carried out, so they stay recorded: reload the thread in a minute to see what happened (if they "
            "never arrived, the review can be decided again then)."
        )

    def step_limit_text(self) -> str:
        """What the thread says when a run reached ``max_steps``."""
        return f"The agent took more than {self.max_steps} steps; it was stopped. Send a new message to go on."


class RunCounter:
    """Live runs per owner and in total, and recent messages per owner (refuses over the limits)."""

    def __init__(self, limits: RunLimits, clock=time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self.live = 0
        self.by_owner: dict[str, int] = {}
        self.messages: dict[str, deque[float]] = {}

    def note_message(self, owner: str) -> None:
        """Count one new message of ``owner``. Raises ThreadError("limited") over the per-minute limit."""
        now = self._clock()
        self._forget_old(now)
        times = self.messages.setdefault(owner, deque())
        if len(times) >= self.limits.messages_per_minute:
            wait = max(1, int(60 - (now - times[0]) + 0.999))
            raise ThreadError(
                f"You sent {self.limits.messages_per_minute} messages in the last minute, the limit. "
                f"Wait {wait} s and send again.",
                code="limited",
            )
        times.append(now)

    def check_start(self, owner: str) -> None:
        """Raise ThreadError("limited") when a new run of ``owner`` would exceed a run limit."""
        if self.by_owner.get(owner, 0) >= self.limits.runs_per_owner:
            raise ThreadError(
                f"You already have {self.limits.runs_per_owner} runs going, the limit. Wait for one to "
                "finish or press Stop on one.",
                code="limited",
            )
        if self.live >= self.limits.max_runs:
            raise ThreadError("The server is busy with other runs right now. Try again in a moment.", code="limited")

    def started(self, owner: str) -> None:
        """Count a run of ``owner`` as live (call ``check_start`` first, with no await between)."""
        self.live += 1
        self.by_owner[owner] = self.by_owner.get(owner, 0) + 1

    def ended(self, owner: str) -> None:
        """Count a run of ``owner`` as ended; drops the owner's entry at zero."""
        self.live = max(0, self.live - 1)
        left = self.by_owner.get(owner, 0) - 1
        if left > 0:
            self.by_owner[owner] = left
        else:
            self.by_owner.pop(owner, None)

    def _forget_old(self, now: float) -> None:
        for owner in list(self.messages):
            times = self.messages[owner]
            while times and now - times[0] >= 60:
                times.popleft()
            if not times:
                del self.messages[owner]


def duration_text(seconds: float) -> str:
    """A run limit in words: ``600`` -> ``"10 minutes"``, ``90`` -> ``"90 seconds"``, ``1`` -> ``"1 second"``."""
    if seconds >= 120 and seconds % 60 == 0:
        return f"{int(seconds // 60)} minutes"
    return f"{seconds:g} second{'' if seconds == 1 else 's'}"
