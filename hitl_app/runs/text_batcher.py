"""Batch streamed tokens into text deltas: at once when the line is quiet, coalesced when busy.

A model streams tokens; a browser tab should see each one as soon as possible, but a burst of
tokens (a fast model, or a backlog released at once) must not become a websocket message per
token to every tab. ``TextBatcher`` publishes a token at once when at least ``gap_s`` has passed
since the last publish (a quiet line, or a model slower than ``1 / gap_s`` tokens a second), and
otherwise holds it and publishes everything held exactly ``gap_s`` after the last publish (one
timer, no polling). So a token never waits longer than ``gap_s``, and a run publishes at most
``1 / gap_s`` deltas a second however fast its model is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

FLUSH_INTERVAL_S = 0.008
"""The least time between two published deltas of a run, in seconds (at most 125 a second).

A model at up to 125 tokens a second has each token published alone, as it comes; a faster
stream is coalesced into one delta per 8 ms. (Under a browser frame, 16.7 ms at 60 Hz: a delta
that arrives mid-frame is painted in that frame.)"""


class TimerHandle(Protocol):
    """What ``call_later`` returns: something that can be cancelled (``asyncio.TimerHandle``)."""

    def cancel(self) -> None:
        """Stop the callback from running."""


def _loop_call_later(delay_s: float, callback: Callable[[], None]) -> TimerHandle:
    return asyncio.get_running_loop().call_later(delay_s, callback)


class TextBatcher:
    """Collects streamed tokens and publishes them: at once after a quiet gap, else coalesced.

    Args:
        publish: called with the text collected since the last publish (never with ``""``).
        gap_s: the least time between two publishes, in seconds.
        clock: a monotonic clock in seconds (a fake one in tests).
        call_later: ``(delay_s, callback) -> handle with cancel()``; schedules the flush of held
            text (default: the running event loop's ``call_later``, so ``append`` must then be
            called from inside the loop).

    ``flush`` publishes what is held now (end of a message, end of the run) and cancels the timer;
    ``close`` cancels the timer without publishing.
    """

    def __init__(
        self,
        publish: Callable[[str], None],
        *,
        gap_s: float = FLUSH_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        call_later: Callable[[float, Callable[[], None]], TimerHandle] = _loop_call_later,
    ) -> None:
        self.gap_s = gap_s
        self._publish = publish
        self._clock = clock
        self._call_later = call_later
        self._pending = ""
        self._last = float("-inf")
        self._timer: TimerHandle | None = None

    @property
    def pending(self) -> str:
        """Text collected but not yet published."""
        return self._pending

    @property
    def scheduled(self) -> bool:
        """True while held text waits for the timer."""
        return self._timer is not None

    def append(self, token: str) -> None:
        """Add ``token``: published at once if ``gap_s`` has passed since the last publish, else
        held until ``gap_s`` after it (one timer for everything held)."""
        if not token:
            return
        self._pending += token
        wait = self._last + self.gap_s - self._clock()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            self._timer = self._call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Publish the held text (if any) now; the next gap starts here."""
        self.close()
        if self._pending:
            text, self._pending = self._pending, ""
            self._last = self._clock()
            self._publish(text)

    def close(self) -> None:
        """Cancel the timer (held text stays in ``pending``)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
