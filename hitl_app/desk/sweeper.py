"""The sweeper: a task in every app process that acts on due deadlines and ended undo windows.

Every ``interval`` seconds ``sweep`` looks for

- undecided reviews whose deadline passed (``review_deadline`` over the review's tools, from the
  time it was raised). The worker that claims the expiry in the database (``claim_expiry``: one
  insert wins, across workers and restarts) acts on it: with ``on_timeout = "reject"`` every card
  not decided yet is rejected with the message the model sees, the claim (audit rows with
  ``via = "deadline"`` and "expired after 15 min, rejected by policy") is written like a
  reviewer's, and the run resumes; with ``"escalate"`` the review stays open and the policy's
  role may decide it from then on (it shows in their inboxes: the review signal is announced).
  A review decided meanwhile, or waiting out an undo window, is left alone (the claim is dropped,
  so the deadline is looked at again if an Undo reopens it).
- undo windows that ended (``take_due_resumes``: one conditional update wins): the run resumes
  with the decisions rebuilt at that moment, also when the tab that submitted is gone; when an
  approval of the submission no longer counts (its reviewer disabled or demoted, a grant revoked),
  nothing runs: the claim is released and the review is answerable again, its card saying why.

- a review that became complete again with no claim on it (an approval that stopped counting
  counts again: its reviewer enabled or promoted again, the policy widened): ``resume_if_complete``,
  called by whoever notices it (``ThreadService.load``), resumes it once through the same door.

All build the final decisions through the one door (``hitl_app.desk.final.final_decisions``), from
the drafts and the rights as they are when the run resumes; so does a restart (a new worker takes
the windows and deadlines a dead one left).

Runs in the app process, started with the runtime (``hitl_app.runtime.open_runtime``).
"""

# Tested by: tests/integration/desk/test_review_desk.py, tests/integration/desk/test_final_decisions.py

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from hitl_app.desk.claims import ReviewClaims
from hitl_app.desk.final import Expiry, final_decisions
from hitl_app.desk.review_desk import ReviewDesk
from hitl_app.errors import ThreadError
from hitl_app.review.desk_policy import Deadline, expiry_note, review_deadline
from hitl_app.review.types import AnyDecision, PendingReview
from hitl_app.runs.run_trace import abandoned_review_span
from hitl_app.runs.tool_work import TOOL_WORK
from hitl_app.store import desk as desk_store
from hitl_app.store import drafts as drafts_store
from hitl_app.store import reviews
from hitl_app.store.desk_tables import ReviewEvent, ScheduledResume
from hitl_app.store.reviews import is_claimed
from hitl_app.store.tables import ReviewRequestRecord, utcnow

log = logging.getLogger("hitl_app.sweeper")

SWEEP_INTERVAL_S = 1.0
"""Seconds between two sweeps (a deadline or undo window acts at most this late)."""

STALE_EXPIRY_S = 60.0
"""A deadline claim still ``acting`` after this many seconds belonged to a worker that died."""


def worker_name() -> str:
    """This process's name in claims: ``host:pid:random``."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Sweeper:
    """Acts on due deadlines and undo windows for one thread service (see the module).

    Args:
        claims: the review claims (session, thread locks, the pending review, resuming a run).
        desk: the review desk (the policy's desk settings and the rights in force).
        owner_of: the thread's owner as recorded (``ThreadService.owner_of``).
        interval: seconds between sweeps.
        worker: the name written into claims (default: ``worker_name()``).
    """

    def __init__(
        self, claims: ReviewClaims, desk: ReviewDesk, owner_of: Callable[[str], Awaitable[str]],
        interval: float = SWEEP_INTERVAL_S, worker: str | None = None,
    ) -> None:
        self.claims = claims
        self.desk = desk
        self._owner_of = owner_of
        self._session = claims.session
        self.interval = interval
        self.worker = worker or worker_name()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the periodic task (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name="hitl-sweeper")

    async def aclose(self) -> None:
        """Stop the periodic task and wait for it."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing
                pass
            self._task = None

    async def _loop(self) -> None:
        while True:
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a sweep that failed is retried next time
                log.exception("sweep failed")
            await asyncio.sleep(self.interval)

    async def sweep(self, now: datetime | None = None) -> int:
        """One pass: expire due deadlines, resume ended undo windows. Returns how many it acted on."""
        now = now or utcnow()
        acted = 0
        async with self._session() as session:
            taken = await desk_store.take_due_resumes(session=session, now=now)
        for row in taken:
            acted += await self._resume_scheduled(row)
        shortest = min((d.deadline_s for d in self.desk.desks.values() if d.deadline_s), default=None)
        if shortest is None:
            return acted
        async with self._session() as session:
            due = await desk_store.open_reviews(session=session, requested_before=now - timedelta(seconds=shortest))
        for request in due:
            deadline = review_deadline(request.requested_at, request.tool_names.split(","), self.desk.desks)
            if deadline is not None and deadline.due_at <= now:
                acted += await self._expire(request, deadline, now)
        return acted

    # ---------------------------------------------------------------- undo windows
    async def _resume_scheduled(self, row: ScheduledResume) -> int:
        """Resume the run of an ended undo window with its decisions as they count now (or not at all)."""
        claims = self.claims
        status, note = "done", "undo window ended; the agent went on"
        try:
            async with claims.lock_for(row.thread_id):
                review = await claims.pending(row.thread_id)
                if review is None or review.interrupt_id != row.interrupt_id:
                    status, note = "done", "the review was no longer pending"
                    await abandoned_review_span(session=self._session, interrupt_id=row.interrupt_id, note=note)
                elif (why := await self._reopen_unless_counted(review, row.owner_id)) is not None:
                    status, note = "failed", f"the agent did not go on: {why}"[:500]
        except Exception as exc:  # noqa: BLE001 - resume released the claim: the review is answerable again
            log.warning("scheduled resume failed thread=%s: %s", row.thread_id, exc)
            status, note = "failed", f"the agent could not be started: {exc}"[:500]
        async with self._session() as session:
            await desk_store.finish_resume(session=session, interrupt_id=row.interrupt_id, status=status)
            await desk_store.add_event(session=session, event=ReviewEvent(
                thread_id=row.thread_id, interrupt_id=row.interrupt_id, kind="resumed" if status == "done" else "failed",
                account_id=row.by_id, display_name=row.by_name, note=note,
            ))
        return 1

    async def _reopen_unless_counted(self, review: PendingReview, owner_id: str) -> str | None:
        """Resume ``review`` (claimed, its undo window ended) with its decisions rebuilt now; None.
        When a card is no longer complete (an approval no longer counts), the claim is released
        (the drafts stay, so the card says why) and the reason is returned; nothing runs."""
        async with self._session() as session:
            drafts = await drafts_store.read_drafts(session=session, interrupt_id=review.interrupt_id)
        final = await final_decisions(
            session=self._session, review=review, owner_id=owner_id, rights=await self.desk.rights_for(review),
            drafts=drafts, now=utcnow(),
        )
        if final.decisions is not None:
            await self.claims.resume(review, final.decisions, owner_id)
            return None
        async with self._session() as session:
            await reviews.release_claim(session=session, interrupt_id=review.interrupt_id, keep_decisions=True)
        await self.claims.bus.reviews.announce()
        why = "; ".join(r for reasons in final.dropped.values() for r in reasons) or "a card is no longer decided"
        log.warning("undo window ended without a run thread=%s: %s", review.thread_id, why)
        return why

    # ---------------------------------------------------------------- deadlines
    async def _expire(self, request: ReviewRequestRecord, deadline: Deadline, now: datetime) -> int:
        desk = deadline.desk
        async with self._session() as session:
            won = await desk_store.claim_expiry(
                session=session, interrupt_id=request.interrupt_id, thread_id=request.thread_id, due_at=deadline.due_at,
                outcome=desk.on_timeout, escalate_to=desk.escalate_to if desk.on_timeout == "escalate" else None,
                worker=self.worker, stale_before=now - timedelta(seconds=STALE_EXPIRY_S),
            )
        if not won:
            return 0
        try:
            status = await self._act_on_expiry(request, deadline, now)
        except Exception:
            async with self._session() as session:
                await desk_store.drop_expiry(session=session, interrupt_id=request.interrupt_id)
            raise
        async with self._session() as session:
            if status == "again":
                await desk_store.drop_expiry(session=session, interrupt_id=request.interrupt_id)
                return 0
            await desk_store.finish_expiry(session=session, interrupt_id=request.interrupt_id, status=status)
        if status in ("escalated", "expired"):
            # escalated: the escalation role's inboxes (and the open thread's cards) change; expired: the
            # review is answered, it waits in no inbox now (a Submit announces alike; the resumed run's end
            # announces only a new review)
            await self.claims.bus.reviews.announce()
        async with self._session() as session:
            if status == "skipped":  # the interrupt is gone: stop looking at it
                row = await session.get(ReviewRequestRecord, request.interrupt_id)
                if row is not None:
                    row.decided = True
                    session.add(row)
                    await session.commit()
        if status == "skipped":  # never resumed through the app: its span ends here
            await abandoned_review_span(session=self._session, interrupt_id=request.interrupt_id,
                                        note="its deadline passed and the thread no longer waits on it")
        return 1 if status in ("expired", "escalated") else 0

    async def _act_on_expiry(self, request: ReviewRequestRecord, deadline: Deadline, now: datetime) -> str:
        """``expired`` / ``escalated`` / ``skipped`` (no such review now) / ``again`` (look later)."""
        claims = self.claims
        async with claims.lock_for(request.thread_id):
            if await claims.is_running(request.thread_id):
                return "again"
            review = await claims.pending(request.thread_id)
            if review is None or review.interrupt_id != request.interrupt_id:
                return "skipped"
            async with self._session() as session:
                if await is_claimed(session=session, interrupt_id=review.interrupt_id):
                    return "again"  # decided (an undo window, or a run starting): not expired
            note = expiry_note(deadline.desk.deadline_s or 0, deadline.desk.on_timeout, deadline.desk.escalate_to)
            if deadline.desk.on_timeout == "escalate":
                async with self._session() as session:
                    await desk_store.add_event(session=session, event=_policy_event(review, "escalated", note))
                log.info(
                    "review escalated thread=%s interrupt=%s to=%s",
                    review.thread_id, review.interrupt_id, deadline.desk.escalate_to,
                )
                return "escalated"
            owner_id = await self._owner_of(review.thread_id)
            decisions = await self._expiry_claim(review, owner_id, deadline, now)
            if decisions is None:
                return "again"
            await claims.resume(review, decisions, owner_id)
            async with self._session() as session:
                await desk_store.add_event(session=session, event=_policy_event(review, "expired", note))
            log.info("review expired thread=%s interrupt=%s: %s", review.thread_id, review.interrupt_id, note)
            return "expired"

    async def _expiry_claim(
        self, review: PendingReview, owner_id: str, deadline: Deadline, now: datetime
    ) -> list[AnyDecision] | None:
        """Write the expiry's drafts and claim (every open card rejected by the policy, a card whose
        approval no longer counts included, ``final_decisions``); None when the review was decided
        meanwhile."""
        async with self._session() as session:
            drafts = await drafts_store.read_drafts(session=session, interrupt_id=review.interrupt_id)
            requested = await session.get(ReviewRequestRecord, review.interrupt_id)
        final = await final_decisions(
            session=self._session, review=review, owner_id=owner_id, rights=await self.desk.rights_for(review),
            drafts=drafts, now=now,
            expiry=Expiry(deadline.tool, deadline.desk.deadline_s or 0, lambda tool: self.desk.desk(tool).timeout_message),
            requested=requested.requested_at if requested else now,
        )
        try:
            async with self._session() as session:
                await drafts_store.write_drafts(
                    session=session, thread_id=review.thread_id, interrupt_id=review.interrupt_id,
                    base_seq=drafts_store.next_seq(drafts), drafts=final.added, claim=final.claim, now=now,
                )
        except (drafts_store.DraftConflict, drafts_store.AlreadyDecided):
            return None
        return final.decisions


async def resume_if_complete(claims: ReviewClaims, desk: ReviewDesk, review: PendingReview, owner_id: str) -> bool:
    """Resume ``review`` when every card is complete by the drafts and rights as they are now and
    nothing holds it (no claim, no live run): True when its run started.

    This is how a review whose decisions count again goes on (the undo window ended, or a Submit
    came, while an approval on it did not count; then its reviewer was enabled or promoted again).
    The decisions are rebuilt by ``final_decisions`` under the thread lock and the claim is written
    with ``write_drafts`` (one writer wins across workers), so the run resumes exactly once and never
    with an approval that no longer counts. Returns False, running nothing, while a card is open,
    the review is claimed or gone, a run is live, a stopped run's tool call still works in this
    process (``TOOL_WORK``), or the owner is at their run limit (a later load tries again). Raises
    what ``ReviewClaims.resume`` raises when the run cannot start (the claim is then released and
    the review stays answerable)."""
    thread_id = review.thread_id
    async with claims.session() as session:
        if await is_claimed(session=session, interrupt_id=review.interrupt_id):
            return False  # an undo window, or a run starting: the claim's holder resumes it
    async with claims.lock_for(thread_id):
        current = await claims.pending(thread_id)
        if await claims.is_running(thread_id) or current is None or current.interrupt_id != review.interrupt_id:
            return False
        if TOOL_WORK.busy(thread_id):  # a stopped run's call still works in a worker thread: never a second copy
            return False
        async with claims.session() as session:
            drafts = await drafts_store.read_drafts(session=session, interrupt_id=current.interrupt_id)
        now = utcnow()
        final = await final_decisions(
            session=claims.session, review=current, owner_id=owner_id, rights=await desk.rights_for(current),
            drafts=drafts, now=now,
        )
        if final.decisions is None:
            return False
        try:
            claims.runs.counter.check_start(owner_id)
            async with claims.session() as session:
                await drafts_store.write_drafts(
                    session=session, thread_id=thread_id, interrupt_id=current.interrupt_id,
                    base_seq=drafts_store.next_seq(drafts), drafts=[], claim=final.claim, now=now,
                )
        except (ThreadError, drafts_store.DraftConflict, drafts_store.AlreadyDecided):
            return False
        await claims.resume(current, final.decisions, owner_id)
        claims.index_resumed(thread_id, owner_id)
    log.info("a complete review went on thread=%s interrupt=%s", thread_id, current.interrupt_id)
    return True


def _policy_event(review: PendingReview, kind: str, note: str) -> ReviewEvent:
    return ReviewEvent(
        thread_id=review.thread_id, interrupt_id=review.interrupt_id, kind=kind, display_name="policy", role="policy",
        note=note[:500],
    )
