"""Sliding-window arithmetic for the sign-in rate limits (pure; the attempts live in the database)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta


def retry_after(failures: Sequence[datetime], *, now: datetime, limit: int, window: timedelta) -> timedelta | None:
    """How long until one more try is allowed, or None when a try is allowed now.

    Args:
        failures: times of failed tries, oldest first (older ones than ``now - window`` are ignored).
        now: the current time (aware UTC).
        limit: at most this many failures within any ``window``; a try is refused once there are
            ``limit`` failures in the last ``window``.
        window: the length of the sliding window.

    Returns:
        None, or the positive time until enough failures have left the window: with ``n >= limit``
        recent failures, the ``(n - limit + 1)``-th oldest must expire, i.e. ``t[n - limit] + window``.
    """
    recent = [t for t in failures if t > now - window]
    if len(recent) < limit:
        return None
    frees_at = recent[len(recent) - limit] + window
    return max(frees_at - now, timedelta(seconds=1))
