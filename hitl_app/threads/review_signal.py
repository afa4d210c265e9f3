"""The review signal: "the pending reviews changed", to every tab of every worker.

A run that ends at a new review, a decision drafted on a card, a review decided or answerable
again: each announces once (``announce``). Tabs showing the inbox count wait for the next announcement
(``wait``) and then re-read their own inbox from the database; the signal carries no data, so
nothing about a review reaches a tab that may not see it.

Each run bus carries one as ``bus.reviews``: ``LocalReviewSignal`` in one process,
``RedisReviewSignal`` across workers (a counter key and a channel on the bus's Redis, listened to
on the worker's one shared pub/sub connection, ``PubSubFanout``). Both keep the ``ReviewSignal``
contract (``tests/integration/threads/test_bus_contract.py``).
"""

# Tested by: tests/integration/threads/test_bus_contract.py, tests/integration/threads/test_review_inbox.py

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

import redis.asyncio as aredis
from redis.exceptions import RedisError

from hitl_app.threads.redis_fanout import PubSubFanout

log = logging.getLogger("hitl_app.threads")


class ReviewSignal(Protocol):
    """A process-wide (or, with Redis, deployment-wide) change counter for pending reviews."""

    async def announce(self) -> None:
        """Say that pending reviews changed. Never raises (a failure is logged: tabs still
        re-read on their periodic refresh)."""
        ...

    async def version(self) -> int:
        """A number that grows with every announcement (only comparisons matter)."""
        ...

    async def wait(self, after: int, timeout: float) -> bool:
        """Wait until the version is above ``after``: True at once if it already is, True when an
        announcement arrives (an early True is allowed: callers re-read), False after ``timeout``
        seconds. Raises nothing for a lost connection (it returns True so callers re-read)."""
        ...


class LocalReviewSignal:
    """The review signal inside one process."""

    def __init__(self) -> None:
        self._version = 0
        self._changed = asyncio.Event()

    async def announce(self) -> None:
        """Bump the version and wake every waiter."""
        self._version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def version(self) -> int:
        """The number of announcements so far."""
        return self._version

    async def wait(self, after: int, timeout: float) -> bool:
        """See ``ReviewSignal.wait``."""
        if self._version > after:
            return True
        changed = self._changed
        try:
            await asyncio.wait_for(changed.wait(), timeout)
        except TimeoutError:
            return False
        return True


_ANNOUNCE = """
local v = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[1], v)
return v
"""


class RedisReviewSignal:
    """The review signal shared by every worker: key ``<prefix>reviews:version`` (a counter) and
    channel ``<prefix>reviews`` (its new value on each announcement).

    Args:
        client: the run bus's Redis client; ``fanout``: its shared pub/sub connection.
    """

    def __init__(self, client: aredis.Redis, fanout: PubSubFanout, prefix: str) -> None:
        self._r, self._fanout = client, fanout
        self._key, self._channel = f"{prefix}reviews:version", f"{prefix}reviews"
        self._announce = client.register_script(_ANNOUNCE)

    async def announce(self) -> None:
        """INCR the counter and PUBLISH it, atomically (one Lua script)."""
        try:
            await self._announce(keys=[self._key], args=[self._channel])
        except Exception as exc:  # noqa: BLE001 - a lost notice only delays the inbox refresh
            log.warning("review signal not sent: %s: %s", type(exc).__name__, exc)

    async def version(self) -> int:
        """The counter's value (0 before the first announcement)."""
        return int(await self._r.get(self._key) or 0)

    async def wait(self, after: int, timeout: float) -> bool:
        """See ``ReviewSignal.wait``; listens on the worker's shared pub/sub connection."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                try:
                    async with self._fanout.listen(self._channel) as queue:
                        if await self.version() > after:
                            return True
                        await queue.get()  # an announcement, or RESYNC after a reconnect
                        return True
                except (OSError, RedisError) as exc:
                    log.warning("review signal wait failed: %s: %s", type(exc).__name__, exc)
                    await asyncio.sleep(min(timeout, 1.0))
                    return True
        return False
