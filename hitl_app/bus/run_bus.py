"""The run bus: how a run's live events reach every tab watching its thread.

A run executes in a server task owned by ``ThreadService``, not by any browser tab; tabs subscribe
to its events. A subscriber first receives the text streamed so far in the current model message,
so a reloaded tab or a second tab catches up without gaps.

``RunBus`` is the interface ``ThreadService`` depends on. Two implementations keep it:

- ``LocalRunBus`` (``bus/local.py``): one worker process, everything in memory;
- ``RedisRunBus`` (``bus/redis_bus.py``): several worker processes sharing one Redis.

Both run through one contract test suite (``tests/integration/bus/test_bus_contract.py``).

The *run lease* (``acquire_lease``) is what makes "one run per thread" hold across workers. It is
unrelated to the *review claim* (``ThreadService``'s audit rows that decide a review exactly once).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from hitl_app.bus.review_signal import ReviewSignal

EventKind = Literal["started", "text", "boundary", "ended"]
RunOutcome = Literal["finished", "interrupted", "failed", "stopped"]


@dataclass(frozen=True)
class RunEvent:
    """One event of a run.

    kind ``started``: a run began (``run_kind`` is ``turn``, ``resume`` or ``continue``).
    kind ``text``: ``delta`` is new assistant text (``reset`` is True on a snapshot that replaces
    the text so far, sent first to a late subscriber). kind ``boundary``: a model message or tool
    batch finished; reload the committed messages from the checkpoint. kind ``ended``: ``outcome`` is
    ``finished``, ``interrupted``, ``failed`` or ``stopped``; ``error`` says why for ``failed``;
    ``view`` is the thread as checkpointed after the run (a ``ThreadView``, or None if it could not
    be read or the run ran in another worker), so subscribers need not read the checkpoint again.
    """

    kind: EventKind
    run_id: str
    delta: str = ""
    reset: bool = False
    run_kind: str = ""
    outcome: RunOutcome | Literal[""] = ""
    error: str | None = None
    view: Any = None


class RunBus(Protocol):
    """Live run events, the per-thread run lease and Stop requests, keyed by thread id.

    Life cycle: ``await start()`` once in the server's event loop, ``await aclose()`` at shutdown.
    A run goes ``acquire_lease`` -> ``open`` -> ``publish``... -> ``publish(ended)``; the ``ended``
    event frees the lease. None of the methods blocks the event loop.
    """

    on_stop: Callable[[str], None] | None
    """Called with a thread id when a Stop request for a run this process owns arrives."""

    @property
    def reviews(self) -> ReviewSignal:
        """The review signal on the same backend ("pending reviews changed", see ``review_signal``)."""
        ...

    async def start(self) -> None:
        """Connect and start background tasks. Raises the backend's connection error if unreachable."""
        ...

    async def aclose(self) -> None:
        """Deliver queued events (bounded wait), stop background tasks, close connections."""
        ...

    async def acquire_lease(self, thread_id: str, run_id: str, run_kind: str) -> bool:
        """Take the thread's run lease for ``run_id``; False if another run holds it.

        The lease lasts until that run's ``ended`` event, or until its holder stops renewing it
        (a crashed worker): then it expires after the implementation's lease time.
        """
        ...

    async def request_stop(self, thread_id: str) -> bool:
        """Ask the process running ``thread_id``'s run to stop it (its ``on_stop`` is called).

        Returns True if a run was live in another process and was asked, False otherwise (a run
        of this process is stopped by ``ThreadService`` directly).
        """
        ...

    async def open(self, thread_id: str, run_id: str, run_kind: str) -> None:
        """Announce a new run (after ``acquire_lease``): bump the generation, send ``started``."""
        ...

    def publish(self, thread_id: str, event: RunEvent) -> None:
        """Deliver ``event`` to every subscriber, in order; never blocks (queues if needed)."""
        ...

    def subscribe(self, thread_id: str) -> AsyncIterator[RunEvent]:
        """Yield the live run's events until it ends; nothing if no run is live.

        The first event is a ``text`` snapshot with ``reset=True`` (the text so far in the current
        model message), then every later event, ending with ``ended``.
        """
        ...

    async def is_live(self, thread_id: str) -> bool:
        """True while a run of ``thread_id`` holds the lease (in any process sharing the bus)."""
        ...

    async def current_text(self, thread_id: str) -> str:
        """Text streamed so far in the current model message of ``thread_id`` ("" if none)."""
        ...

    async def generation(self, thread_id: str) -> int:
        """A number that grows each time a run of ``thread_id`` starts (0 if none is known).

        Only comparisons matter: pass it to ``wait_for_run`` as ``after``.
        """
        ...

    async def wait_for_run(self, thread_id: str, after: int, timeout: float) -> bool:
        """Wait until a run of ``thread_id`` newer than generation ``after`` starts.

        Returns True when one started (at once if it already has; an early True is allowed, so
        callers re-read the state), False after ``timeout`` seconds. Idle waiters cost no
        connection or polling of their own.
        """
        ...
