"""``RedisRunBus``: the run bus shared by several worker processes through Redis.

Selected by ``REFLEX_REDIS_URL`` / ``HITL_REDIS_URL``. Besides the events it gives what several
workers need: the per-thread run lease ("one run per thread" across workers) and Stop requests
(the worker that owns the run cancels it).

Redis keys (``hitl:`` prefix, ``<t>`` = thread id); every per-thread key has a TTL:

- ``hitl:run:<t>:live``  JSON ``{"run_id", "run_kind", "pid"}`` while a run streams: the run lease,
  renewed by the owning worker's heartbeat, so a crashed worker's lease expires after ``lease_s``;
- ``hitl:run:<t>:text``  the text streamed so far in the current model message (TTL ``lease_s``);
- ``hitl:run:<t>:seq``   sequence number of the last event (dedupes the catch-up snapshot);
- ``hitl:run:<t>:gen``   the thread's generation (TTL ``GEN_TTL_S``), a value of the one
  counter ``hitl:generation``, so a key that expired and comes back is still higher than before;
- channel ``hitl:run:<t>`` events as ``<seq>|<json RunEvent>``; channel ``hitl:stop`` thread ids;
- ``hitl:reviews:version`` and channel ``hitl:reviews``: the review signal (``bus.reviews``).

Nothing here blocks the event loop: every call uses the asyncio client, with socket timeouts and
a bounded connection pool. ``publish`` queues the event and one drainer task per process writes
events in order, each with one Lua script (state update + PUBLISH, atomic). All local subscribers
and waiters share one pub/sub connection (``PubSubFanout``), so idle tabs cost no connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable

import redis.asyncio as aredis

from hitl_app.bus.redis_fanout import RESYNC, PubSubFanout
from hitl_app.bus.redis_wire import OPEN_SCRIPT, PUBLISH_SCRIPT, RELEASE_SCRIPT, decode, encode, newer_than, take_queued
from hitl_app.bus.review_signal import RedisReviewSignal
from hitl_app.bus.run_bus import RunEvent

log = logging.getLogger("hitl_app.threads")

LEASE_S = 30
"""Seconds a run's lease lives without a heartbeat (a crashed worker's run ends after this)."""
HEARTBEAT_S = 5
"""How often the owning worker renews its runs' leases."""
GEN_TTL_S = 86_400
"""Seconds a thread's generation key outlives its last run (longer than any ``wait_for_run``)."""
MAX_CONNECTIONS = 8
"""Redis connections per worker process, at most (one of them is the shared pub/sub connection)."""
SOCKET_TIMEOUT_S = 5.0
"""Longest wait for one Redis reply, for a connection, or for a free pooled connection."""
SILENT_RUN_CHECK_S = 2.0
"""A subscriber that hears nothing for this long checks that the run's lease still exists."""

class RedisRunBus:
    """Run events, run leases and Stop requests shared by every worker through Redis.

    Args:
        url: ``redis://[:password@]host:port[/db]`` (query options such as ``client_name`` apply).
        prefix: key prefix (``hitl:``); tests use a unique one.
        lease_s, heartbeat_s: run lease lifetime and renewal period, in seconds.
        max_connections: pooled connections, at most (``MAX_CONNECTIONS``).
        socket_timeout_s: see ``SOCKET_TIMEOUT_S``; a call that waits longer raises
            ``redis.exceptions.TimeoutError`` (or ``ConnectionError``) instead of hanging.

    Call ``await start()`` once in the server's loop and ``await aclose()`` at shutdown.
    """

    def __init__(
        self,
        url: str,
        prefix: str = "hitl:",
        *,
        lease_s: float = LEASE_S,
        heartbeat_s: float = HEARTBEAT_S,
        max_connections: int = MAX_CONNECTIONS,
        socket_timeout_s: float = SOCKET_TIMEOUT_S,
    ) -> None:
        self.prefix = prefix
        self.lease_s, self.heartbeat_s = lease_s, heartbeat_s
        pool = aredis.BlockingConnectionPool.from_url(
            url,
            decode_responses=True,
            max_connections=max_connections,
            timeout=socket_timeout_s,
            socket_timeout=socket_timeout_s,
            socket_connect_timeout=socket_timeout_s,
        )
        self._r = aredis.Redis.from_pool(pool)
        self._fanout = PubSubFanout(self._r, {f"{prefix}stop": self._on_stop_message})
        self._queue: asyncio.Queue[tuple[str, RunEvent]] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._local: dict[str, str] = {}  # thread id -> run id of runs this process owns
        self._lease_values: dict[str, str] = {}  # thread id -> our lease value (until "ended" is written)
        self._publish = self._r.register_script(PUBLISH_SCRIPT)
        self._open = self._r.register_script(OPEN_SCRIPT)
        self._release = self._r.register_script(RELEASE_SCRIPT)
        self.on_stop: Callable[[str], None] | None = None
        self.reviews = RedisReviewSignal(self._r, self._fanout, prefix)

    # ------------------------------------------------------------------ keys
    def _k(self, thread_id: str, what: str) -> str:
        return f"{self.prefix}run:{thread_id}:{what}"

    def _channel(self, thread_id: str) -> str:
        return f"{self.prefix}run:{thread_id}"

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Check the connection, subscribe to Stop requests, start the drainer and heartbeat.

        Raises:
            redis.exceptions.ConnectionError / TimeoutError: Redis is unreachable.
        """
        await self._r.ping()  # type: ignore[misc]  # redis-py types ping() for its sync and async clients at once
        await self._fanout.start()
        self._ensure_tasks()

    def _ensure_tasks(self) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._tasks = [
                asyncio.create_task(self._drain(), name="redis-bus-drain"),
                asyncio.create_task(self._heartbeat(), name="redis-bus-heartbeat"),
            ]

    async def aclose(self) -> None:
        """Write queued events (up to 5 s), stop the tasks and close every connection."""
        if self._queue is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), 5)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._fanout.aclose()
        await self._r.aclose()

    async def _drain(self) -> None:
        assert self._queue is not None
        while True:
            thread_id, event = await self._queue.get()
            try:
                lease = self._lease_values.pop(thread_id, "") if event.kind == "ended" else ""
                await self._publish(
                    keys=[self._k(thread_id, "text"), self._k(thread_id, "seq"), self._k(thread_id, "live")],
                    args=[self._channel(thread_id), event.kind, event.delta, max(1, round(self.lease_s)), encode(event), lease],
                )
            except Exception:  # noqa: BLE001 - a lost event must not kill the drainer
                log.exception("redis publish failed thread=%s kind=%s", thread_id, event.kind)
            finally:
                self._queue.task_done()

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            for thread_id in list(self._local):
                try:
                    pipe = self._r.pipeline()
                    for what in ("live", "text", "seq"):
                        pipe.pexpire(self._k(thread_id, what), int(self.lease_s * 1000))
                    pipe.expire(self._k(thread_id, "gen"), GEN_TTL_S)
                    await pipe.execute()
                except Exception:  # noqa: BLE001
                    log.warning("redis heartbeat failed thread=%s", thread_id)

    def _on_stop_message(self, thread_id: str) -> None:
        if thread_id in self._local and self.on_stop is not None:
            self.on_stop(thread_id)

    # ------------------------------------------------------------------ the run lease
    async def acquire_lease(self, thread_id: str, run_id: str, run_kind: str) -> bool:
        """Take the thread's run lease for ``run_id`` (SET NX with a TTL); False if another run holds it."""
        self._ensure_tasks()
        assert self._queue is not None
        await self._queue.join()  # our own "ended" events first: they free this thread's lease
        value = json.dumps({"run_id": run_id, "run_kind": run_kind, "pid": os.getpid()})
        ok = bool(await self._r.set(self._k(thread_id, "live"), value, nx=True, px=int(self.lease_s * 1000)))
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

    # ------------------------------------------------------------------ runs
    async def open(self, thread_id: str, run_id: str, run_kind: str) -> None:
        """Announce a new run of ``thread_id`` (after ``acquire_lease``): new generation, ``started``.

        If Redis fails here the lease is given back (best effort) and the error is raised.
        """
        self._ensure_tasks()
        self._local[thread_id] = run_id
        try:
            await self._open(keys=[f"{self.prefix}generation", self._k(thread_id, "gen")], args=[GEN_TTL_S])
        except BaseException:
            self._local.pop(thread_id, None)
            value = self._lease_values.pop(thread_id, "")
            with contextlib.suppress(Exception):
                await self._release(keys=[self._k(thread_id, "live")], args=[value])
            raise
        self.publish(thread_id, RunEvent(kind="started", run_id=run_id, run_kind=run_kind))

    def publish(self, thread_id: str, event: RunEvent) -> None:
        """Queue ``event`` for every subscriber on every worker (never blocks)."""
        self._ensure_tasks()
        assert self._queue is not None
        if event.kind == "ended":
            self._local.pop(thread_id, None)
        self._queue.put_nowait((thread_id, event))

    async def is_live(self, thread_id: str) -> bool:
        """True while a run of ``thread_id`` holds the lease in any worker."""
        return thread_id in self._local or bool(await self._r.exists(self._k(thread_id, "live")))

    async def current_text(self, thread_id: str) -> str:
        """Text streamed so far in the current model message of ``thread_id`` (any worker)."""
        return await self._r.get(self._k(thread_id, "text")) or ""

    async def generation(self, thread_id: str) -> int:
        """The thread's generation across workers (0 if no run started in ``GEN_TTL_S``)."""
        return int(await self._r.get(self._k(thread_id, "gen")) or 0)

    async def wait_for_run(self, thread_id: str, after: int, timeout: float) -> bool:
        """Wait until a run of ``thread_id`` newer than generation ``after`` starts (any worker).

        Returns True when one started, False after ``timeout`` seconds. Waiting holds no
        connection of its own: it listens on the worker's shared pub/sub connection.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                async with self._fanout.listen(self._channel(thread_id)) as queue:
                    if await self.generation(thread_id) > after:
                        return True
                    while True:
                        message = await queue.get()
                        if message == RESYNC or decode(message)[1].kind == "started":
                            return True
        return False

    async def subscribe(self, thread_id: str) -> AsyncIterator[RunEvent]:
        """Yield the live run's events until it ends; nothing if no run is live.

        The first event is a ``text`` snapshot with ``reset=True`` (the text so far); events
        already contained in it are skipped by sequence number. If the owning worker dies, an
        ``ended``/``failed`` event is yielded once its lease expires. If messages may have been
        lost (pub/sub reconnect), a ``boundary`` (reload the thread) and a fresh snapshot follow.
        """
        async with self._fanout.listen(self._channel(thread_id)) as queue:
            snapshot = await self._snapshot(thread_id)
            if snapshot is None:
                return
            run_id, seen, text = snapshot
            yield RunEvent(kind="text", run_id=run_id, delta=text, reset=True)
            while True:
                message = await self._next_message(queue, thread_id)
                if message is None:
                    yield RunEvent(
                        kind="ended", run_id=run_id, outcome="failed", error="The worker running this reply stopped. Press Retry."
                    )
                    return
                if message == RESYNC:
                    yield RunEvent(kind="boundary", run_id=run_id)  # reload what was committed meanwhile
                    snapshot = await self._snapshot(thread_id)
                    if snapshot is None:  # the run ended meanwhile; its "ended" may have come after
                        for event in newer_than(seen, take_queued(queue)):
                            yield event
                        return  # no "ended" seen: the caller reads the result from the checkpoint
                    run_id, seen, text = snapshot
                    yield RunEvent(kind="text", run_id=run_id, delta=text, reset=True)
                    continue
                number, event = decode(message)
                if number <= seen:
                    continue
                seen = number
                yield event
                if event.kind == "ended":
                    return

    async def _snapshot(self, thread_id: str) -> tuple[str, int, str] | None:
        """(run id, seq, text so far) of the live run, or None if none is live."""
        pipe = self._r.pipeline(transaction=True)
        pipe.get(self._k(thread_id, "live"))
        pipe.get(self._k(thread_id, "seq"))
        pipe.get(self._k(thread_id, "text"))
        live, seq, text = await pipe.execute()
        if live is None:
            return None
        return json.loads(live)["run_id"], int(seq or 0), text or ""

    async def _next_message(self, queue: asyncio.Queue[str], thread_id: str) -> str | None:
        """The next message of the run's channel; None once the run's lease is gone without an end."""
        while True:
            try:
                return await asyncio.wait_for(queue.get(), SILENT_RUN_CHECK_S)
            except TimeoutError:
                pass
            if await self._r.exists(self._k(thread_id, "live")):
                continue
            try:  # the lease is gone: the run's last events may still be on their way
                return await asyncio.wait_for(queue.get(), 1.0)
            except TimeoutError:
                return None
