"""The review signal: "the pending reviews changed", to every tab of every worker.

A run that ends at a new review, a decision drafted on a card, a review decided or answerable
again: each announces once (``announce``). Tabs showing the inbox count wait for the next announcement
(``wait``, or ``wait_for``) and then re-read their own inbox from the database; nothing about a
review reaches a tab from the signal itself.

A new review's announcement names whom it may concern (``hitl_app.review.audience.Audience``:
the thread's owner, the roles and emails its tools' rights list), between server processes only.
``wait_for`` skips the announcements whose audience its caller's person is not in, so an inbox
that cannot be concerned does not re-read; an announcement without an audience (decided, undo,
released, escalated), or one it cannot read or cannot tell (missed, another policy), wakes it.

Each run bus carries one as ``bus.reviews``: ``LocalReviewSignal`` in one process,
``RedisReviewSignal`` across workers (a counter key, a short history and a channel on the bus's Redis, listened to
on the worker's one shared pub/sub connection, ``PubSubFanout``). Both keep the ``ReviewSignal``
contract (``tests/integration/bus/test_bus_contract.py``).
"""

# Tested by: tests/integration/bus/test_bus_contract.py, tests/integration/reviewers/test_review_inbox.py

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import Protocol

import redis.asyncio as aredis
from redis.exceptions import RedisError

from hitl_app.bus.redis_fanout import RESYNC, PubSubFanout
from hitl_app.review.audience import Audience

log = logging.getLogger("hitl_app.threads")

Concerns = Callable[[Audience], bool]
"""Whether an announcement's audience may concern the waiting tab's person."""
HISTORY = 64
"""Announcements remembered with their audience (a waiter further behind than this reads)."""


class ReviewSignal(Protocol):
    """A process-wide (or, with Redis, deployment-wide) change counter for pending reviews."""

    async def announce(self, audience: Audience | None = None) -> None:
        """Say that pending reviews changed; ``audience``: whom a new review may concern (None:
        anyone). Never raises (a failure is logged: tabs still re-read on their periodic refresh)."""
        ...

    async def version(self) -> int:
        """A number that grows with every announcement (only comparisons matter)."""
        ...

    async def wait(self, after: int, timeout: float) -> bool:
        """Wait until the version is above ``after``: True at once if it already is, True when an
        announcement arrives (an early True is allowed: callers re-read), False after ``timeout``
        seconds. Raises nothing for a lost connection (it returns True so callers re-read)."""
        ...

    async def wait_for(self, after: int, timeout: float, concerns: Concerns) -> tuple[bool, int]:
        """Like ``wait``, but announcements after ``after`` whose audience ``concerns`` rejects
        are skipped. Returns ``(True, version)`` for the first one that may concern the caller
        (no audience, ``concerns`` accepts it, or it cannot be told: missed, unreadable, a lost
        connection), at once when one is already past ``after``; ``(False, version)`` after
        ``timeout`` seconds, ``version`` the last one skipped (or ``after``). Raises nothing."""
        ...


def encode(version: int, audience: Audience | None) -> str:
    """An announcement as sent and kept: ``"<version>|<audience JSON>"`` (``"<version>|"``
    without an audience)."""
    return f"{version}|{json.dumps(audience.to_json(), separators=(',', ':')) if audience else ''}"


def decode(message: str) -> tuple[int, Audience | None] | None:
    """``encode``'s text back; a bare ``"<version>"`` (an older worker's) has no audience; None
    when the version cannot be read."""
    number, _, data = message.partition("|")
    if not number.strip().isdigit():
        return None
    try:
        audience = Audience.from_json(json.loads(data)) if data else None
    except ValueError:  # json.JSONDecodeError is one: read as no audience
        audience = None
    return int(number), audience


def scan(history: Mapping[int, Audience | None], after: int, upto: int, concerns: Concerns) -> tuple[bool, int]:
    """The announcements ``after + 1 .. upto`` in ``history`` (version -> audience): ``(True, v)``
    at the first that may concern the caller, or is missing; ``(False, upto)`` when none does."""
    for version in range(after + 1, upto + 1):
        if version not in history:
            return True, version
        audience = history[version]
        if audience is None or concerns(audience):
            return True, version
    return False, max(after, upto)


class LocalReviewSignal:
    """The review signal inside one process."""

    def __init__(self) -> None:
        self._version = 0
        self._changed = asyncio.Event()
        self._history: deque[tuple[int, Audience | None]] = deque(maxlen=HISTORY)

    async def announce(self, audience: Audience | None = None) -> None:
        """Bump the version, remember its audience and wake every waiter."""
        self._version += 1
        self._history.append((self._version, audience))
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

    async def wait_for(self, after: int, timeout: float, concerns: Concerns) -> tuple[bool, int]:
        """See ``ReviewSignal.wait_for``."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while True:
                    hit, after = scan(dict(self._history), after, self._version, concerns)
                    if hit:
                        return True, after
                    await self._changed.wait()
        return False, after


_ANNOUNCE = """
local v = redis.call('INCR', KEYS[1])
local message = v .. '|' .. ARGV[2]
redis.call('LPUSH', KEYS[2], message)
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
redis.call('PUBLISH', ARGV[1], message)
return v
"""


class RedisReviewSignal:
    """The review signal shared by every worker: key ``<prefix>reviews:version`` (a counter),
    list ``<prefix>reviews:history`` (the last ``HISTORY`` announcements, ``encode``'s text) and
    channel ``<prefix>reviews`` (each announcement's text).

    Args:
        client: the run bus's Redis client; ``fanout``: its shared pub/sub connection.
    """

    def __init__(self, client: aredis.Redis, fanout: PubSubFanout, prefix: str) -> None:
        self._r, self._fanout = client, fanout
        self._key, self._channel = f"{prefix}reviews:version", f"{prefix}reviews"
        self._history = f"{prefix}reviews:history"
        self._announce = client.register_script(_ANNOUNCE)

    async def announce(self, audience: Audience | None = None) -> None:
        """INCR the counter, keep and PUBLISH the announcement, atomically (one Lua script)."""
        data = encode(0, audience).partition("|")[2]
        try:
            await self._announce(keys=[self._key, self._history], args=[self._channel, data, HISTORY])
        except Exception as exc:  # noqa: BLE001 - a lost notice only delays the inbox refresh
            log.warning("review signal not sent: %s: %s", type(exc).__name__, exc)

    async def version(self) -> int:
        """The counter's value (0 before the first announcement)."""
        return int(await self._r.get(self._key) or 0)

    async def _recent(self) -> tuple[int, dict[int, Audience | None]]:
        """The counter and the kept announcements (version -> audience), read together."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.get(self._key)
            pipe.lrange(self._history, 0, -1)
            current, kept = await pipe.execute()
        history: dict[int, Audience | None] = {}
        for raw in kept:
            got = decode(raw.decode() if isinstance(raw, bytes) else str(raw))
            if got is not None:
                history[got[0]] = got[1]
        return int(current or 0), history

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

    async def wait_for(self, after: int, timeout: float, concerns: Concerns) -> tuple[bool, int]:
        """See ``ReviewSignal.wait_for``; listens on the worker's shared pub/sub connection,
        subscribed before it reads the counter, so no announcement falls between the two."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                try:
                    async with self._fanout.listen(self._channel) as queue:
                        current, history = await self._recent()
                        hit, after = scan(history, after, current, concerns)
                        while not hit:
                            hit, after = self._next(await queue.get(), after, concerns)
                        return True, after
                except (OSError, RedisError) as exc:
                    log.warning("review signal wait failed: %s: %s", type(exc).__name__, exc)
                    await asyncio.sleep(min(timeout, 1.0))
                    return True, after
        return False, after

    @staticmethod
    def _next(message: str, after: int, concerns: Concerns) -> tuple[bool, int]:
        """One message of the channel for ``wait_for``: ``(True, v)`` when it may concern the
        caller (or cannot be told: RESYNC, unreadable, a version skipped), else ``(False, after)``
        moved past it."""
        got = None if message == RESYNC else decode(message)
        if got is None:
            return True, after
        version, audience = got
        if version <= after:  # already counted when the history was read
            return False, after
        return scan({version: audience}, after, version, concerns)
