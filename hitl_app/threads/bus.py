"""Live run events for every tab watching a thread (in-process fan-out).

A run executes in a server task owned by ``ThreadService``, not by any browser tab; tabs subscribe
to its events. A subscriber first receives the text streamed so far in the current model message,
so a reloaded tab or a second tab catches up without gaps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal["started", "text", "boundary", "ended"]


@dataclass(frozen=True)
class RunEvent:
    """One event of a run.

    kind ``started``: a run began (``run_kind`` is ``turn``, ``resume`` or ``continue``).
    kind ``text``: ``delta`` is new assistant text (``reset`` is True on a snapshot that replaces
    the text so far, sent first to a late subscriber). kind ``boundary``: a model message or tool
    batch finished; reload the committed messages from the checkpoint. kind ``ended``: ``outcome`` is
    ``finished``, ``interrupted``, ``failed`` or ``stopped``; ``error`` says why for ``failed``;
    ``view`` is the thread as checkpointed after the run (a ``ThreadView``, or None if it could not
    be read), so subscribers need not read the checkpoint again.
    """

    kind: EventKind
    run_id: str
    delta: str = ""
    reset: bool = False
    run_kind: str = ""
    outcome: str = ""
    error: str | None = None
    view: Any = None


@dataclass
class _Channel:
    run_id: str
    run_kind: str
    text: str = ""
    subscribers: set[asyncio.Queue[RunEvent]] = field(default_factory=set)


class RunBus:
    """Fan-out of run events per thread id, with catch-up for late subscribers."""

    def __init__(self) -> None:
        self._channels: dict[str, _Channel] = {}
        self._generation: dict[str, int] = {}
        self._started: dict[str, asyncio.Event] = {}
        self.on_stop: Callable[[str], None] | None = None

    async def start(self) -> None:
        """Nothing to start in-process (``RedisRunBus`` connects here)."""

    async def aclose(self) -> None:
        """Nothing to close in-process."""

    async def claim(self, thread_id: str, run_id: str, run_kind: str) -> bool:
        """The run lease: in one process ``ThreadService``'s per-thread lock already gives it."""
        return True

    async def request_stop(self, thread_id: str) -> bool:
        """No other process can own a run here: False."""
        return False

    def open(self, thread_id: str, run_id: str, run_kind: str) -> None:
        """Start a channel for a new run of ``thread_id`` (replacing any ended one)."""
        old = self._channels.get(thread_id)
        self._channels[thread_id] = _Channel(run_id=run_id, run_kind=run_kind, subscribers=old.subscribers if old else set())
        self._generation[thread_id] = self._generation.get(thread_id, 0) + 1
        event = self._started.pop(thread_id, None)
        if event is not None:
            event.set()
        self.publish(thread_id, RunEvent(kind="started", run_id=run_id, run_kind=run_kind))

    def generation(self, thread_id: str) -> int:
        """How many runs of ``thread_id`` this process has started (for ``wait_for_run``)."""
        return self._generation.get(thread_id, 0)

    async def wait_for_run(self, thread_id: str, after: int, timeout: float) -> bool:
        """Wait until a run of ``thread_id`` newer than generation ``after`` starts.

        Returns True when one started (at once if it already has), False after ``timeout`` seconds.
        """
        while self.generation(thread_id) <= after:
            event = self._started.setdefault(thread_id, asyncio.Event())
            try:
                await asyncio.wait_for(event.wait(), timeout)
            except TimeoutError:
                return False
        return True

    def publish(self, thread_id: str, event: RunEvent) -> None:
        """Deliver ``event`` to every subscriber of ``thread_id`` (never blocks)."""
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

    def is_live(self, thread_id: str) -> bool:
        """True while a run of ``thread_id`` is streaming in this process."""
        return thread_id in self._channels

    def current_text(self, thread_id: str) -> str:
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
