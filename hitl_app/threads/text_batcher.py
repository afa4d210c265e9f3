"""Batch streamed tokens into text deltas: one publish per interval, not one per token.

A model streams tokens much faster than a browser needs them; publishing each one would send a
websocket message per token to every tab. ``TextBatcher`` collects tokens and publishes the
collected text at most once per ``interval_s``; a ticker publishes what is left when tokens stop
arriving mid-interval, so text never waits longer than about one interval.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

FLUSH_INTERVAL_S = 0.05
"""Streamed text is published at most this often per run, in seconds (20 deltas a second)."""


class TextBatcher:
    """Collects streamed tokens and publishes them in batches.

    Args:
        publish: called with the text collected since the last publish (never with ``""``).
        interval_s: the least time between two publishes from ``append``, in seconds.
        clock: a monotonic clock in seconds (a fake one in tests).

    The first token is published at once; later tokens when ``interval_s`` has passed since the
    last publish. ``flush`` publishes what is pending now (end of a message, end of the run);
    ``tick`` is the background loop that flushes a batch left pending for an interval.
    """

    def __init__(
        self,
        publish: Callable[[str], None],
        *,
        interval_s: float = FLUSH_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self._publish = publish
        self._clock = clock
        self._pending = ""
        self._last = float("-inf")

    @property
    def pending(self) -> str:
        """Text collected but not yet published."""
        return self._pending

    def append(self, token: str) -> None:
        """Add ``token``; publish the batch if ``interval_s`` has passed since the last publish."""
        self._pending += token
        if self._clock() - self._last >= self.interval_s:
            self.flush()

    def flush(self) -> None:
        """Publish the pending text (if any) and restart the interval."""
        if self._pending:
            text, self._pending = self._pending, ""
            self._publish(text)
        self._last = self._clock()

    def due(self) -> bool:
        """True when text is pending and ``interval_s`` has passed since the last publish."""
        return bool(self._pending) and self._clock() - self._last >= self.interval_s

    async def tick(self, sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        """Every ``interval_s``, flush a batch that is due. Runs until cancelled."""
        while True:
            await sleep(self.interval_s)
            if self.due():
                self.flush()
