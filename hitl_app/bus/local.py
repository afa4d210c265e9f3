"""``LocalRunBus``: the run bus of a single worker process (everything in memory).

Per-thread entries live only while they are needed: a thread's channel and lease from ``open``
to ``ended``, its waiters while someone waits, its generation until the run ends with nobody
waiting. A dropped generation is remembered only as a process-wide floor (see ``generation``), so
a server that has run a million threads holds no entry for any of them once they are idle.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from hitl_app.bus.review_signal import LocalReviewSignal
from hitl_app.bus.run_bus import RunEvent


@dataclass
class _Channel:
    """The live run of one thread: its id, the text of the current model message, its subscribers."""

    run_id: str
    text: str = ""
    subscribers: set[asyncio.Queue[RunEvent]] = field(default_factory=set)


@dataclass
class _Waiters:
    """Tasks in ``wait_for_run`` for one thread; ``started`` is set when its next run opens."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    count: int = 0


class LocalRunBus:
    """Fan-out of run events per thread id, with catch-up for late subscribers (one process).

    The run lease is a dict entry: ``ThreadService``'s per-thread lock already serialises starts,
    and the lease makes a second ``acquire_lease`` for a live thread fail instead of racing.
    ``request_stop`` returns False: no other process can own a run here.
    """

    def __init__(self) -> None:
        self._channels: dict[str, _Channel] = {}
        self._leases: dict[str, str] = {}  # thread id -> run id holding the lease
        self._generation: dict[str, int] = {}
        self._waiters: dict[str, _Waiters] = {}
        self._starts = 0  # runs opened by this process (every generation is a value of it)
        self._floor = 0  # generation reported for a thread whose entry was dropped
        self.on_stop: Callable[[str], None] | None = None
        self.reviews = LocalReviewSignal()

    async def start(self) -> None:
        """Nothing to start in-process."""

    async def aclose(self) -> None:
        """Nothing to close in-process."""

    async def acquire_lease(self, thread_id: str, run_id: str, run_kind: str) -> bool:
        """Take the thread's run lease for ``run_id``; False while another run holds it."""
        if thread_id in self._leases:
            return False
        self._leases[thread_id] = run_id
        return True

    async def request_stop(self, thread_id: str) -> bool:
        """No other process can own a run here: False."""
        return False

    async def open(self, thread_id: str, run_id: str, run_kind: str) -> None:
        """Start a channel for a new run of ``thread_id``, bump its generation, send ``started``."""
        old = self._channels.get(thread_id)
        self._channels[thread_id] = _Channel(run_id=run_id, subscribers=old.subscribers if old else set())
        self._leases.setdefault(thread_id, run_id)
        self._starts += 1
        self._generation[thread_id] = self._starts
        waiters = self._waiters.pop(thread_id, None)
        if waiters is not None:
            waiters.started.set()
        self.publish(thread_id, RunEvent(kind="started", run_id=run_id, run_kind=run_kind))

    async def generation(self, thread_id: str) -> int:
        """The process-wide start count at the thread's latest run (see ``RunBus.generation``).

        For a thread with no entry (never run, or dropped after its run ended) this is the floor:
        the highest generation ever dropped. It is never below a value returned earlier for the
        thread, and any later run gets a higher one, so ``wait_for_run`` never misses a run (it
        may return True early when another thread's entry was dropped meanwhile).
        """
        return self._generation.get(thread_id, self._floor)

    async def wait_for_run(self, thread_id: str, after: int, timeout: float) -> bool:
        """Wait until a run of ``thread_id`` newer than generation ``after`` starts.

        Returns True when one started (at once if it already has), False after ``timeout`` seconds.
        """
        if await self.generation(thread_id) > after:
            return True
        waiters = self._waiters.setdefault(thread_id, _Waiters())
        waiters.count += 1
        try:
            await asyncio.wait_for(waiters.started.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            waiters.count -= 1
            if waiters.count == 0 and self._waiters.get(thread_id) is waiters:
                del self._waiters[thread_id]
                self._drop_if_idle(thread_id)

    def publish(self, thread_id: str, event: RunEvent) -> None:
        """Deliver ``event`` to every subscriber of ``thread_id`` (never blocks).

        ``ended`` closes the channel, frees the run lease and drops the thread's entries.
        """
        channel = self._channels.get(thread_id)
        if channel is None:
            return
        if event.kind == "text":
            channel.text += event.delta
        elif event.kind == "boundary":
            channel.text = ""
        for queue in list(channel.subscribers):
            queue.put_nowait(event)
        if event.kind == "ended":
            del self._channels[thread_id]
            if self._leases.get(thread_id) == event.run_id:
                del self._leases[thread_id]
            self._drop_if_idle(thread_id)

    def _drop_if_idle(self, thread_id: str) -> None:
        """Forget ``thread_id``'s generation when no run is live and nobody waits for one."""
        if thread_id in self._channels or thread_id in self._waiters:
            return
        dropped = self._generation.pop(thread_id, None)
        if dropped is not None:
            self._floor = max(self._floor, dropped)

    async def is_live(self, thread_id: str) -> bool:
        """True while a run of ``thread_id`` holds the lease in this process."""
        return thread_id in self._leases or thread_id in self._channels

    async def current_text(self, thread_id: str) -> str:
        """Text streamed so far in the current model message of ``thread_id`` ("" if none)."""
        channel = self._channels.get(thread_id)
        return channel.text if channel else ""

    async def subscribe(self, thread_id: str) -> AsyncIterator[RunEvent]:
        """Yield the live run's events until it ends; nothing if no run is live.

        The first event is a ``text`` snapshot with ``reset=True`` (the text so far).
        """
        channel = self._channels.get(thread_id)
        if channel is None:
            return
        queue: asyncio.Queue[RunEvent] = asyncio.Queue()
        channel.subscribers.add(queue)
        try:
            yield RunEvent(kind="text", run_id=channel.run_id, delta=channel.text, reset=True)
            while True:
                event = await queue.get()
                yield event
                if event.kind == "ended":
                    return
        finally:
            channel.subscribers.discard(queue)
