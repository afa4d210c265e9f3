"""One Redis pub/sub connection per worker process, fanned out to every local listener.

Every tab following a thread (``RedisRunBus.subscribe``) or waiting for its next run
(``RedisRunBus.wait_for_run``) needs that thread's channel. Giving each its own pub/sub
connection made idle tabs cost two Redis connections each; here all of them share one connection,
the channel is subscribed while at least one local listener wants it, and a reader task copies each
message into the listeners' queues.

If the connection drops, redis-py reconnects and subscribes the channels again; messages sent in
between are lost, so the listeners of a re-subscribed channel receive ``RESYNC`` and re-read the
state they need from Redis.
"""

# Tested by: tests/integration/bus/test_redis_bus.py - through RedisRunBus, on a real Redis

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import redis.asyncio as aredis

log = logging.getLogger("hitl_app.threads")

RESYNC: Final = "\x00resync"
"""Put into a listener's queue when messages of its channel may have been lost (reconnect)."""

_READ_TIMEOUT_S = 1.0
_CONFIRM_TIMEOUT_S = 5.0


@dataclass
class _Listeners:
    """Local listeners of one channel; ``ready`` resolves once Redis confirmed the subscription."""

    ready: asyncio.Future[None]
    queues: set[asyncio.Queue[str]] = field(default_factory=set)


class PubSubFanout:
    """Shares one pub/sub connection of ``client`` among any number of local listeners.

    Args:
        client: the bus's Redis client (its pool gives the one pub/sub connection).
        handlers: channel -> callback(data) for channels listened to for the whole life of the
            fan-out (e.g. Stop requests); subscribed by ``start``.
    """

    def __init__(self, client: aredis.Redis, handlers: dict[str, Callable[[str], None]]) -> None:
        self._pubsub = client.pubsub()
        self._handlers = handlers
        self._wanted: dict[str, _Listeners] = {}
        self._subscribed: set[str] = set()  # channels we sent SUBSCRIBE for (and no UNSUBSCRIBE since)
        self._unconfirmed: dict[str, int] = {}  # SUBSCRIBE commands Redis has not confirmed yet
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self._syncs: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Subscribe the fixed channels and start the reader task. Raises redis errors."""
        for channel in self._handlers:
            self._unconfirmed[channel] = self._unconfirmed.get(channel, 0) + 1
        await self._pubsub.subscribe(*self._handlers)
        self._reader = asyncio.create_task(self._read(), name="redis-bus-pubsub")

    async def aclose(self) -> None:
        """Stop the reader and close the pub/sub connection."""
        for task in [self._reader, *self._syncs]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._pubsub.aclose()

    @contextlib.asynccontextmanager
    async def listen(self, channel: str) -> AsyncIterator[asyncio.Queue[str]]:
        """Receive ``channel``'s messages (``data`` strings, or ``RESYNC``) while inside the block.

        Entering returns once Redis confirmed the subscription, so every message published after
        that is in the queue. Raises redis errors if the subscription cannot be sent, and
        RuntimeError before ``start``.
        """
        if self._reader is None:
            raise RuntimeError("PubSubFanout.start() was not awaited (RedisRunBus.start() does it)")
        listeners = self._wanted.get(channel)
        if listeners is None:
            listeners = self._wanted[channel] = _Listeners(asyncio.get_running_loop().create_future())
        queue: asyncio.Queue[str] = asyncio.Queue()
        listeners.queues.add(queue)
        try:
            await self._sync(channel)
            if not self._is_ready(channel) and self._wanted.get(channel) is listeners:
                try:
                    await asyncio.wait_for(asyncio.shield(listeners.ready), _CONFIRM_TIMEOUT_S)
                except TimeoutError:  # go on: a subscriber notices a silent run by its own checks
                    log.warning("redis did not confirm SUBSCRIBE %s within %ss", channel, _CONFIRM_TIMEOUT_S)
            yield queue
        finally:
            listeners.queues.discard(queue)
            if not listeners.queues and self._wanted.get(channel) is listeners:
                del self._wanted[channel]
                task = asyncio.create_task(self._sync(channel))
                self._syncs.add(task)
                task.add_done_callback(self._syncs.discard)

    def _is_ready(self, channel: str) -> bool:
        return channel in self._subscribed and not self._unconfirmed.get(channel)

    async def _sync(self, channel: str) -> None:
        """Make Redis's subscription of ``channel`` match whether a local listener wants it.

        Idempotent and order-free: whichever call runs last leaves the right state.
        """
        async with self._lock:
            wanted, subscribed = channel in self._wanted, channel in self._subscribed
            if wanted and not subscribed:
                self._subscribed.add(channel)
                self._unconfirmed[channel] = self._unconfirmed.get(channel, 0) + 1
                try:
                    await self._pubsub.subscribe(channel)
                except BaseException:
                    self._subscribed.discard(channel)
                    self._unconfirmed[channel] -= 1
                    raise
            elif subscribed and not wanted:
                self._subscribed.discard(channel)
                await self._pubsub.unsubscribe(channel)

    async def _read(self) -> None:
        pause = 0.05
        while True:
            try:
                message = await self._pubsub.get_message(timeout=_READ_TIMEOUT_S)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep reading; redis-py reconnects on the next call
                log.warning("redis pub/sub read failed (%s: %s); retrying in %.2fs", type(exc).__name__, exc, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)
                continue
            pause = 0.05
            if message is not None:
                self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind, channel = message["type"], message["channel"]  # redis-py's pub/sub messages always carry both
        if kind == "message":
            handler = self._handlers.get(channel)
            if handler is not None:
                handler(message["data"])
            elif (listeners := self._wanted.get(channel)) is not None:
                for queue in list(listeners.queues):
                    queue.put_nowait(message["data"])
        elif kind == "subscribe":
            left = self._unconfirmed.get(channel, 0)
            if left > 1:
                self._unconfirmed[channel] = left - 1
                return
            self._unconfirmed.pop(channel, None)
            listeners = self._wanted.get(channel)
            if listeners is None:
                return
            if left == 0:  # a re-subscription after a reconnect: messages may have been lost
                for queue in list(listeners.queues):
                    queue.put_nowait(RESYNC)
            if not listeners.ready.done():
                listeners.ready.set_result(None)
