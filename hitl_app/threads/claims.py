"""The review claim's upkeep for ``ThreadService``: the "requested" row, releasing a claim.

A mixin: ``ThreadService`` gives it ``_session``, ``_lock``, ``_read``, ``is_running``, ``desk`` and ``runs``;
it also starts the run that resumes a claimed review (``_resume``).
"""

# Tested by: tests/integration/threads/test_thread_service.py - a claim left by a crashed run is released on load

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

from langgraph.types import Command

from hitl_app.review import AnyDecision, PendingReview, ReviewError, resume_value
from hitl_app.store import reviews, threads
from hitl_app.store.tables import utcnow
from hitl_app.threads.types import ThreadError

log = logging.getLogger("hitl_app.threads")

_STALE = "This review was already decided (the agent went on with those decisions)."

STALE_CLAIM_S = 30.0
"""Age in seconds after which a review claim with no live run is taken as abandoned.

A claim is written before the run lease is taken, so a fresh claim may belong to a run that is
still starting in another worker; after this long (the Redis run lease's lifetime) it cannot.
``load`` then releases it, and the reviewer decides again: a resume nobody saw run is not replayed
later on its own (the thread may have been opened hours after)."""


_WRITING: set[asyncio.Task[None]] = set()
"""The index writes ``_index_resumed`` left running (held here so that they are not collected)."""


class ReviewClaims:
    """Releasing review claims (see ``STALE_CLAIM_S``); mixed into ``ThreadService``."""

    _session: Any
    _lock: Any
    _read: Any
    is_running: Any
    desk: Any
    bus: Any
    runs: Any

    async def _release_claim(self, interrupt_id: str) -> bool:
        """Release the claim on ``interrupt_id``; False when the database did not answer."""
        try:
            async with self._session() as session:
                await reviews.release_claim(session=session, interrupt_id=interrupt_id)
        except Exception:  # noqa: BLE001 - ``load`` releases it once it is stale
            log.exception("review claim not released interrupt=%s", interrupt_id)
            return False
        await self.bus.reviews.announce()
        return True

    async def _note_review(self, review: PendingReview) -> datetime:
        """Write the review's "requested" row; release an abandoned claim on it (no live run, older
        than ``STALE_CLAIM_S``), re-checked under the thread lock against the checkpoint. Returns
        when the review was first shown (the row's ``requested_at``)."""
        thread_id = review.thread_id
        async with self._session() as session:
            requested = await reviews.record_review_requested(session=session, review=review)
            if await self.is_running(thread_id) or not await reviews.is_claimed(
                session=session, interrupt_id=review.interrupt_id
            ):
                return requested
        if await self.desk.holds(review.interrupt_id):  # an undo window: the claim is not abandoned
            return requested
        async with self._lock(thread_id):
            current = (await self._read(thread_id)).pending
            if await self.is_running(thread_id) or current is None or current.interrupt_id != review.interrupt_id:
                return requested
            cutoff = utcnow() - timedelta(seconds=STALE_CLAIM_S)
            async with self._session() as session:
                released = await reviews.release_claim(session=session, interrupt_id=review.interrupt_id, claimed_before=cutoff)
        if released:
            await self.bus.reviews.announce()
            log.warning("released an abandoned review claim thread=%s interrupt=%s", thread_id, review.interrupt_id)
        return requested

    def _index_resumed(self, thread_id: str, owner: str) -> None:
        """The thread's index row no longer waits on a review, once the run resuming it started:
        written by a task when the caller (holding the thread lock) lets go of it, so after the first
        resumed token rather than before it. The lock is fair: the task writes before the run's own
        index rows, and writes nothing if the run ended first (its rows are then the right ones).
        ``list_threads`` waits for it (``RunDriver.settling``); a database error is logged."""
        done = asyncio.get_running_loop().create_future()
        self.runs.settling[thread_id] = done

        async def write() -> None:
            try:
                async with self._lock(thread_id):
                    if thread_id in self.runs.tasks:
                        async with self._session() as session:
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

    async def _resume(self, review: PendingReview, decisions: list[AnyDecision], owner: str) -> str:
        """Start the run that resumes ``review`` with ``decisions``; on ANY failure the claim is released.

        Raises ReviewError("stale") when another worker's run holds the thread, ThreadError
        ("not_started") for any other failure, and re-raises a cancellation after releasing.
        """
        command: Command[Any] = Command(resume={review.interrupt_id: resume_value(decisions)})
        try:
            return await self.runs.launch(review.thread_id, command, "resume", owner=owner, claimed=review.interrupt_id)
        except BaseException as exc:
            released = await self._release_claim(review.interrupt_id)
            if isinstance(exc, ThreadError) and exc.code == "limited":
                raise
            if isinstance(exc, ThreadError):  # another worker's run holds the thread
                raise ReviewError(_STALE, code="stale") from None
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
