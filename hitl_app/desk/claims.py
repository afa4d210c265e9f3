"""The review claim's upkeep: the "requested" row, releasing a claim, waiting out the run that raised a
review (``after_pausing_run``), and the run that resumes a claimed review (``ReviewClaims.resume``, the one
place a review's decisions become ``Command(resume=...)``).

``ReviewClaims`` is composed by ``ThreadService`` (``service.claims``) from what it needs: a session
factory, the thread locks, a reader of the pending review, the run driver and the run bus.
"""

# Tested by: tests/integration/threads/test_thread_service.py - a claim left by a crashed run is released on load

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.bus.run_bus import RunBus
from hitl_app.errors import ThreadError
from hitl_app.review import AnyDecision, PendingReview, ReviewError
from hitl_app.runs.agent_runtime import resume_command
from hitl_app.runs.run_driver import RunDriver
from hitl_app.store import review_requests, reviews, threads
from hitl_app.store.tables import utcnow

log = logging.getLogger("hitl_app.threads")

ALREADY_DECIDED = "This review was already decided (the agent went on with those decisions)."
"""The refusal (code ``stale``) of a decision on a review whose run already went on."""

STALE_CLAIM_S = 30.0
"""Age in seconds after which a review claim with no live run is taken as abandoned.

A claim is written before the run lease is taken, so a fresh claim may belong to a run that is
still starting in another worker; after this long (the Redis run lease's lifetime) it cannot.
``load`` then releases it, and the reviewer decides again: a resume nobody saw run is not replayed
later on its own (the thread may have been opened hours after)."""

PAUSING_RUN_WAIT_S = 15.0
"""The longest a decision waits (seconds) for the run that raised its review to end (``after_pausing_run``)."""

_WRITING: set[asyncio.Task[None]] = set()
"""The index writes ``index_resumed`` left running (held here so that they are not collected)."""


class ReviewClaims:
    """Releasing review claims (see ``STALE_CLAIM_S``) and resuming claimed reviews.

    Args:
        session: opens an ``AsyncSession`` on the app database.
        lock_for: the thread's lock (shared with the service and the run driver).
        pending: the thread's pending review as checkpointed (None: none), never running the graph.
        is_running: True while a run of the thread is live (in any worker).
        holds: True while the review waits out an undo window (``ReviewDesk.holds``).
        runs: the run driver that resumes the graph.
        bus: the run bus (its review signal is announced when a claim is released).
    """

    def __init__(
        self, *, session: Callable[[], AsyncSession], lock_for: Callable[[str], asyncio.Lock],
        pending: Callable[[str], Awaitable[PendingReview | None]], is_running: Callable[[str], Awaitable[bool]],
        holds: Callable[[str], Awaitable[bool]], runs: RunDriver, bus: RunBus,
    ) -> None:
        self.session = session
        self.lock_for = lock_for
        self.pending = pending
        self.is_running = is_running
        self._holds = holds
        self.runs = runs
        self.bus = bus

    async def release(self, interrupt_id: str) -> bool:
        """Release the claim on ``interrupt_id``; False when the database did not answer."""
        try:
            async with self.session() as session:
                await reviews.release_claim(session=session, interrupt_id=interrupt_id)
        except Exception:  # noqa: BLE001 - ``load`` releases it once it is stale
            log.exception("review claim not released interrupt=%s", interrupt_id)
            return False
        await self.bus.reviews.announce()
        return True

    async def after_pausing_run(self, thread_id: str, interrupt_id: str) -> None:
        """Return once the run that raised the review ``interrupt_id`` has ended (at most ``PAUSING_RUN_WAIT_S``).

        The review is in the checkpoint a moment before that run ends: the run still asks the grants,
        reads the thread back and writes its end under the thread lock (``RunDriver._settle``). A tab that
        reads the thread then, or an API client, may already decide it, and "a run is live" must not
        refuse that as already decided while nothing ran. A live run on an unclaimed review is that
        pausing run (a run that resumes a review holds its claim), so this waits for it: this process's
        run task, or another worker's lease looked at every 50 ms. Returns at once when no run is live or
        the review is claimed. Call it without the thread lock (the run's end takes it); the caller's
        own checks under the lock follow, and refuse as before if the run is still live.
        """
        if not await self.is_running(thread_id):
            return
        async with self.session() as session:
            if await reviews.is_claimed(session=session, interrupt_id=interrupt_id):
                return
        task = self.runs.tasks.get(thread_id)
        if task is not None:
            await asyncio.wait({task}, timeout=PAUSING_RUN_WAIT_S)
            return
        deadline = time.monotonic() + PAUSING_RUN_WAIT_S
        while time.monotonic() < deadline and await self.is_running(thread_id):
            await asyncio.sleep(0.05)

    async def note_review(self, review: PendingReview) -> datetime:
        """Write the review's "requested" row; release an abandoned claim on it (no live run, older
        than ``STALE_CLAIM_S``), re-checked under the thread lock against the checkpoint. Returns
        when the review was first shown (the row's ``requested_at``)."""
        thread_id = review.thread_id
        async with self.session() as session:
            requested = await review_requests.record_review_requested(session=session, review=review)
            if await self.is_running(thread_id) or not await reviews.is_claimed(
                session=session, interrupt_id=review.interrupt_id
            ):
                return requested
        if await self._holds(review.interrupt_id):  # an undo window: the claim is not abandoned
            return requested
        async with self.lock_for(thread_id):
            current = await self.pending(thread_id)
            if await self.is_running(thread_id) or current is None or current.interrupt_id != review.interrupt_id:
                return requested
            cutoff = utcnow() - timedelta(seconds=STALE_CLAIM_S)
            async with self.session() as session:
                released = await reviews.release_claim(session=session, interrupt_id=review.interrupt_id, claimed_before=cutoff)
        if released:
            await self.bus.reviews.announce()
            log.warning("released an abandoned review claim thread=%s interrupt=%s", thread_id, review.interrupt_id)
        return requested

    def index_resumed(self, thread_id: str, owner: str) -> None:
        """The thread's index row no longer waits on a review, once the run resuming it started:
        written by a task when the caller (holding the thread lock) lets go of it, so after the first
        resumed token rather than before it. The lock is fair: the task writes before the run's own
        index rows, and writes nothing if the run ended first (its rows are then the right ones).
        ``list_threads`` waits for it (``RunDriver.settling``); a database error is logged."""
        done = asyncio.get_running_loop().create_future()
        self.runs.settling[thread_id] = done

        async def write() -> None:
            try:
                async with self.lock_for(thread_id):
                    if thread_id in self.runs.tasks:
                        async with self.session() as session:
                            await threads.touch_thread(session=session, thread_id=thread_id, owner=owner, pending_review=False)
            except Exception as exc:  # noqa: BLE001 - the claim is made and the run started: a lagging index must not fail it
                log.warning("thread index not updated for %s: %s", thread_id, type(exc).__name__)
            finally:
                if self.runs.settling.get(thread_id) is done:
                    del self.runs.settling[thread_id]
                done.set_result(None)

        task = asyncio.create_task(write(), name=f"index:{thread_id}")
        _WRITING.add(task)
        task.add_done_callback(_WRITING.discard)

    async def resume(self, review: PendingReview, decisions: list[AnyDecision], owner: str) -> str:
        """Start the run that resumes ``review`` with ``decisions``; on ANY failure the claim is released.

        Raises ReviewError("stale") when another worker's run holds the thread, ThreadError
        ("not_started") for any other failure, and re-raises a cancellation after releasing.
        """
        command = resume_command(review.interrupt_id, decisions)
        try:
            return await self.runs.launch(review.thread_id, command, "resume", owner=owner, claimed=review.interrupt_id)
        except BaseException as exc:
            released = await self.release(review.interrupt_id)
            if isinstance(exc, ThreadError) and exc.code == "limited":
                raise
            if isinstance(exc, ThreadError):  # another worker's run holds the thread
                raise ReviewError(ALREADY_DECIDED, code="stale") from None
            if not isinstance(exc, Exception):
                raise
            log.warning("run not started thread=%s: %s: %s", review.thread_id, type(exc).__name__, exc)
            if released:
                message = "The agent could not be started, so your decisions were not applied. Submit them again."
            else:
                message = (
                    "The agent could not be started. The review will be answerable again in about "
                    f"{int(STALE_CLAIM_S)} seconds: reload the thread then and decide again."
                )
            raise ThreadError(message, code="not_started") from exc
