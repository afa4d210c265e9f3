"""Run events across worker processes through Redis (selected by ``REFLEX_REDIS_URL`` / ``HITL_REDIS_URL``).

Same interface as ``RunBus`` (``open``/``publish``/``subscribe``/``is_live``/``current_text``/
``generation``/``wait_for_run``) plus what several workers need: a per-thread run lease
(``claim``/``release``: "one run per thread" across workers) and Stop requests (``request_stop``:
the worker that owns the run cancels it).

Redis keys (``hitl:`` prefix, ``<t>`` = thread id), all with a TTL refreshed while the run lives,
so a crashed worker's run disappears after ``LEASE_S`` seconds:

- ``hitl:run:<t>:live``  JSON ``{"run_id", "run_kind", "pid"}`` while a run streams (the lease);
- ``hitl:run:<t>:text``  the text streamed so far in the current model message;
- ``hitl:run:<t>:seq``   sequence number of the last event (dedupes the catch-up snapshot);
- ``hitl:run:<t>:gen``   how many runs of the thread have started (no TTL);
- channel ``hitl:run:<t>`` events as ``<seq>|<json RunEvent>``; channel ``hitl:stop`` thread ids.

Publishing never blocks the run: ``publish`` queues the event and one drainer task per process
writes events in order, each with one Lua script (state update + PUBLISH, atomic). The sync
readers (``is_live``, ``current_text``, ``generation``) use a sync Redis client (one loopback
round trip) because the UI calls them from sync code.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import AsyncIterator, Callable

import redis
import redis.asyncio as aredis

from hitl_app.threads.bus import RunEvent

log = logging.getLogger("hitl_app.threads")

LEASE_S = 30
"""Seconds a run's keys live without a heartbeat (a crashed worker's run ends after this)."""
HEARTBEAT_S = 5
"""How often the owning worker refreshes its runs' TTLs."""

_PUBLISH = """
local kind = ARGV[2]
local seq = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[4])
if kind == 'text' then
  redis.call('APPEND', KEYS[1], ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
elseif kind == 'boundary' or kind == 'started' then
  redis.call('SET', KEYS[1], '', 'EX', ARGV[4])
elseif kind == 'ended' then
  redis.call('DEL', KEYS[1])
  if redis.call('GET', KEYS[3]) == ARGV[6] then redis.call('DEL', KEYS[3]) end
end
redis.call('PUBLISH', ARGV[1], seq .. '|' .. ARGV[5])
return seq
"""

_RELEASE = """
local v = redis.call('GET', KEYS[1])
if v and cjson.decode(v)['run_id'] == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _encode(event: RunEvent) -> str:
    """JSON for pub/sub. ``view`` (the process-local ThreadView of an ended run) is left out: a
    subscriber on another worker reloads the thread from the shared checkpoint instead."""
    return json.dumps(dataclasses.asdict(dataclasses.replace(event, view=None)))


def _decode(data: str) -> RunEvent:
    return RunEvent(**json.loads(data))


class RedisRunBus:
    """Run events, run leases and Stop requests shared by every worker through Redis.

    Args:
        url: ``redis://host:port[/db]``.
        prefix: key prefix (``hitl:``); tests may use a unique one.

    Call ``await start()`` once in the server's loop (listens for Stop requests) and
    ``await aclose()`` at shutdown.
    """

    def __init__(self, url: str, prefix: str = "hitl:") -> None:
        self.url = url
        self.prefix = prefix
        self._r = aredis.from_url(url, decode_responses=True)
        self._sync = redis.Redis.from_url(url, decode_responses=True)
        self._queue: asyncio.Queue[tuple[str, RunEvent]] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._local: dict[str, str] = {}  # thread id -> run id of runs this process owns
        self._lease_values: dict[str, str] = {}  # thread id -> our lease value (deleted on "ended")
        self._publish = self._r.register_script(_PUBLISH)
        self._release = self._r.register_script(_RELEASE)
        self.on_stop: Callable[[str], None] | None = None

    # ------------------------------------------------------------------ keys
    def _k(self, thread_id: str, what: str) -> str:
        return f"{self.prefix}run:{thread_id}:{what}"

    def _channel(self, thread_id: str) -> str:
        return f"{self.prefix}run:{thread_id}"

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Check the connection and start the drainer, heartbeat and Stop listener tasks.

        Raises:
            redis.exceptions.ConnectionError: Redis is unreachable.
        """
        await self._r.ping()
        self._ensure_tasks()

    def _ensure_tasks(self) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._tasks = [
                asyncio.create_task(self._drain(), name="redis-bus-drain"),
                asyncio.create_task(self._heartbeat(), name="redis-bus-heartbeat"),
                asyncio.create_task(self._listen_stop(), name="redis-bus-stop"),
            ]

    async def aclose(self) -> None:
        """Flush queued events, stop the tasks and close the connections."""
        if self._queue is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), 5)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._r.aclose()
        self._sync.close()

    async def _drain(self) -> None:
        assert self._queue is not None
        while True:
            thread_id, event = await self._queue.get()
            try:
                await self._publish(
                    keys=[self._k(thread_id, "text"), self._k(thread_id, "seq"), self._k(thread_id, "live")],
                    args=[self._channel(thread_id), event.kind, event.delta, LEASE_S, _encode(event), self._live_value_of(thread_id, event)],
                )
            except Exception:  # noqa: BLE001 - a lost event must not kill the drainer
                log.exception("redis publish failed thread=%s kind=%s", thread_id, event.kind)
            finally:
                self._queue.task_done()

    def _live_value_of(self, thread_id: str, event: RunEvent) -> str:
        return self._lease_values.pop(thread_id, "") if event.kind == "ended" else ""

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            for thread_id in list(self._local):
                try:
                    pipe = self._r.pipeline()
                    for what in ("live", "text", "seq"):
                        pipe.expire(self._k(thread_id, what), LEASE_S)
                    await pipe.execute()
                except Exception:  # noqa: BLE001
                    log.warning("redis heartbeat failed thread=%s", thread_id)

    async def _listen_stop(self) -> None:
        pubsub = self._r.pubsub()
        await pubsub.subscribe(f"{self.prefix}stop")
        try:
            async for message in pubsub.listen():
                if message.get("type") == "message" and message["data"] in self._local and self.on_stop:
                    self.on_stop(message["data"])
        finally:
            await pubsub.aclose()

    # ------------------------------------------------------------------ leases
    async def claim(self, thread_id: str, run_id: str, run_kind: str) -> bool:
        """Take the thread's run lease for ``run_id`` (SET NX with a TTL); False if another run holds it."""
        self._ensure_tasks()
        assert self._queue is not None
        await self._queue.join()  # our own "ended" events first: they free this thread's lease
        value = json.dumps({"run_id": run_id, "run_kind": run_kind, "pid": os.getpid()})
        ok = bool(await self._r.set(self._k(thread_id, "live"), value, nx=True, ex=LEASE_S))
        if ok:
            self._local[thread_id] = run_id
            self._lease_values[thread_id] = value
        return ok

    async def request_stop(self, thread_id: str) -> bool:
        """Ask the worker that owns the thread's run to stop it; True if a run was live."""
        if not await self._r.exists(self._k(thread_id, "live")):
            return False
        await self._r.publish(f"{self.prefix}stop", thread_id)
        return True

    # ------------------------------------------------------------------ RunBus interface
    def open(self, thread_id: str, run_id: str, run_kind: str) -> None:
        """Announce a new run of ``thread_id`` (after ``claim``): bumps the generation, sends ``started``."""
        self._ensure_tasks()
        self._local[thread_id] = run_id
        self._sync.incr(self._k(thread_id, "gen"))
        self.publish(thread_id, RunEvent(kind="started", run_id=run_id, run_kind=run_kind))

    def publish(self, thread_id: str, event: RunEvent) -> None:
        """Queue ``event`` for every subscriber on every worker (never blocks)."""
        self._ensure_tasks()
        assert self._queue is not None
        if event.kind == "ended":
            self._local.pop(thread_id, None)
        self._queue.put_nowait((thread_id, event))

    def is_live(self, thread_id: str) -> bool:
        """True while a run of ``thread_id`` streams in any worker."""
        return thread_id in self._local or bool(self._sync.exists(self._k(thread_id, "live")))

    def current_text(self, thread_id: str) -> str:
        """Text streamed so far in the current model message of ``thread_id`` (any worker)."""
        return self._sync.get(self._k(thread_id, "text")) or ""

    def generation(self, thread_id: str) -> int:
        """How many runs of ``thread_id`` have started, across workers."""
        return int(self._sync.get(self._k(thread_id, "gen")) or 0)

    async def wait_for_run(self, thread_id: str, after: int, timeout: float) -> bool:
        """Wait until a run of ``thread_id`` newer than generation ``after`` starts (any worker).

        Returns True when one started, False after ``timeout`` seconds.
        """
        pubsub = self._r.pubsub()
        await pubsub.subscribe(self._channel(thread_id))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while True:
                if int(await self._r.get(self._k(thread_id, "gen")) or 0) > after:
                    return True
                left = deadline - loop.time()
                if left <= 0:
                    return False
                await pubsub.get_message(ignore_subscribe_messages=True, timeout=min(left, 1.0))
        finally:
            await pubsub.aclose()

    async def subscribe(self, thread_id: str) -> AsyncIterator[RunEvent]:
        """Yield the live run's events until it ends; nothing if no run is live.

        The first event is a ``text`` snapshot with ``reset=True`` (the text so far); events
        already contained in it are skipped by sequence number. If the owning worker dies, an
        ``ended``/``failed`` event is yielded once its lease expires.
        """
        pubsub = self._r.pubsub()
        await pubsub.subscribe(self._channel(thread_id))
        try:
            pipe = self._r.pipeline(transaction=True)
            pipe.get(self._k(thread_id, "live"))
            pipe.get(self._k(thread_id, "text"))
            pipe.get(self._k(thread_id, "seq"))
            live, text, seq = await pipe.execute()
            if live is None:
                return
            run_id = json.loads(live)["run_id"]
            seen = int(seq or 0)
            yield RunEvent(kind="text", run_id=run_id, delta=text or "", reset=True)
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=2.0)
                if message is None:
                    if not await self._r.exists(self._k(thread_id, "live")):
                        yield RunEvent(kind="ended", run_id=run_id, outcome="failed", error="The worker running this reply stopped. Press Retry.")
                        return
                    continue
                number, _, data = message["data"].partition("|")
                if int(number) <= seen:
                    continue
                seen = int(number)
                event = _decode(data)
                yield event
                if event.kind == "ended":
                    return
        finally:
            await pubsub.aclose()
