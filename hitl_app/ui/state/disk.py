"""Reflex's disk state manager (the embedded default), with its purge of expired states paced.

``reflex.istate.manager.disk.StateManagerDisk`` (Reflex 0.10.1, ``_process_write_queue``) calls
``_purge_expired_states`` after every pass of its write queue. That method lists the states folder
and ``stat``s every ``.pkl`` file in it (one per tab and substate, ~10 a tab, kept for the token
expiration, an hour by default). The queue's loop wakes whenever the oldest queued write is due
(2 s after it was queued), so with tabs streaming it wakes many times a second, and every wake-up
costs O(files) system calls: py-spy on one worker streaming 50 sessions put 7.7% of the worker's
CPU in this scan (bench/README.md, round 9), and one scan of 10,000 files took 76 ms of CPU here.
The same cost is reported upstream (reflex-dev/reflex pull request #7060, "Skip idle disk-state
scans until expiration", open at the time of writing: 32.6 ms per idle tick at 10,000 files).
Purging once a minute removes the same files (they expire after an hour), at most a minute late,
at a small, flat cost.

Only the purge of files on disk is paced; the in-memory purge, the writes and their debounce are
Reflex's own, unchanged. The Redis and memory state managers are left as they are.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

PURGE_EVERY_S = 60.0
"""The least time between two scans of the states folder for expired files, in seconds."""


class _PacedPurge:
    """``scan()`` at most once per ``every_s`` seconds of ``clock``; the calls between do nothing."""

    def __init__(self, scan: Callable[[], None], every_s: float, clock: Callable[[], float]) -> None:
        self.scan, self.every_s, self.clock = scan, every_s, clock
        self.last = float("-inf")

    def __call__(self) -> None:
        now = self.clock()
        if now - self.last < self.every_s:
            return
        self.last = now
        self.scan()


def pace_disk_purge(state_manager: Any, every_s: float = PURGE_EVERY_S, clock: Callable[[], float] = time.monotonic) -> bool:
    """Make ``state_manager``'s purge of expired state files run at most once per ``every_s`` seconds.

    Args:
        state_manager: the app's state manager (``app.state_manager``); anything but a Reflex
            ``StateManagerDisk`` is left alone.
        every_s: the least time between two scans, in seconds (the first call always scans).
        clock: a monotonic clock in seconds (a fake one in tests).

    Returns:
        True if the purge is now paced (a disk state manager), else False. Idempotent: a second
        call keeps the first pacing.
    """
    from reflex.istate.manager.disk import StateManagerDisk

    if not isinstance(state_manager, StateManagerDisk):
        return False
    if isinstance(state_manager._purge_expired_states, _PacedPurge):
        return True
    state_manager._purge_expired_states = _PacedPurge(state_manager._purge_expired_states, every_s, clock)  # type: ignore[method-assign]
    log.debug("disk state purge paced to once per %.0f s", every_s)
    return True
