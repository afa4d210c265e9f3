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
  with the submitted decisions, also when the tab that submitted is gone.

Runs in the app process, started with the runtime (``hitl_app.runtime.open_runtime``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import TypeAdapter

from hitl_app.review.desk_policy import Deadline, expiry_note, review_deadline
from hitl_app.review.rights import progress
from hitl_app.review.types import AnyDecision, Decision, PendingReview, RejectDecision, decision_payload
from hitl_app.store import desk as desk_store
from hitl_app.store import drafts as drafts_store
from hitl_app.store import grants as grant_store
from hitl_app.store.desk_tables import ReviewEvent, ScheduledResume
from hitl_app.store.reviews import DecidedBy, audit_rows, is_claimed
from hitl_app.store.tables import ReviewRequestRecord, utcnow
from hitl_app.threads.decide import cards_for

if TYPE_CHECKING:
    from hitl_app.threads.service import ThreadService

log = logging.getLogger("hitl_app.sweeper")

SWEEP_INTERVAL_S = 1.0
"""Seconds between two sweeps (a deadline or undo window acts at most this late)."""

STALE_EXPIRY_S = 60.0
"""A deadline claim still ``acting`` after this many seconds belonged to a worker that died."""

_DECISIONS = TypeAdapter(list[Decision])


def worker_name() -> str:
    """This process's name in claims: ``host:pid:random``."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Sweeper:
    """Acts on due deadlines and undo windows for one thread service (see the module).

    Args:
        service: the thread service (its ``desk`` holds the policy's desk settings).
        interval: seconds between sweeps.
        worker: the name written into claims (default: ``worker_name()``).
    """

    def __init__(self, service: ThreadService, interval: float = SWEEP_INTERVAL_S, worker: str | None = None) -> None:
        self.service = service
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
        async with self.service._session() as session:
            taken = await desk_store.take_due_resumes(session=session, now=now)
        for row in taken:
            acted += await self._resume_scheduled(row)
        shortest = min((d.deadline_s for d in self.service.desk.desks.values() if d.deadline_s), default=None)
        if shortest is None:
            return acted
        async with self.service._session() as session:
            due = await desk_store.open_reviews(session=session, requested_before=now - timedelta(seconds=shortest))
        for request in due:
            deadline = review_deadline(request.requested_at, request.tool_names.split(","), self.service.desk.desks)
            if deadline is not None and deadline.due_at <= now:
                acted += await self._expire(request, deadline, now)
        return acted

    # ---------------------------------------------------------------- undo windows
    async def _resume_scheduled(self, row: ScheduledResume) -> int:
        service = self.service
        status, note = "done", "undo window ended; the agent went on"
        try:
            async with service._lock(row.thread_id):
                review = (await service._read(row.thread_id)).pending
                if review is None or review.interrupt_id != row.interrupt_id:
                    status, note = "done", "the review was no longer pending"
                else:
                    await service._resume(review, list(_DECISIONS.validate_python(row.decisions)), row.owner_id)
        except Exception as exc:  # noqa: BLE001 - _resume released the claim: the review is answerable again
            log.warning("scheduled resume failed thread=%s: %s", row.thread_id, exc)
            status, note = "failed", f"the agent could not be started: {exc}"[:500]
        async with service._session() as session:
            await desk_store.finish_resume(session=session, interrupt_id=row.interrupt_id, status=status)
            await desk_store.add_event(session=session, event=ReviewEvent(
                thread_id=row.thread_id, interrupt_id=row.interrupt_id, kind="resumed" if status == "done" else "failed",
                account_id=row.by_id, display_name=row.by_name, note=note,
            ))
        return 1

    # ---------------------------------------------------------------- deadlines
    async def _expire(self, request: ReviewRequestRecord, deadline: Deadline, now: datetime) -> int:
        service, desk = self.service, deadline.desk
        async with service._session() as session:
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
            async with service._session() as session:
                await desk_store.drop_expiry(session=session, interrupt_id=request.interrupt_id)
            raise
        async with service._session() as session:
            if status == "again":
                await desk_store.drop_expiry(session=session, interrupt_id=request.interrupt_id)
                return 0
            await desk_store.finish_expiry(session=session, interrupt_id=request.interrupt_id, status=status)
        if status == "escalated":  # the escalation role's inboxes (and the open thread's cards) change
            await service.bus.reviews.announce()
        async with service._session() as session:
            if status == "skipped":  # the interrupt is gone: stop looking at it
                row = await session.get(ReviewRequestRecord, request.interrupt_id)
                if row is not None:
                    row.decided = True
                    session.add(row)
                    await session.commit()
        return 1 if status in ("expired", "escalated") else 0

    async def _act_on_expiry(self, request: ReviewRequestRecord, deadline: Deadline, now: datetime) -> str:
        """``expired`` / ``escalated`` / ``skipped`` (no such review now) / ``again`` (look later)."""
        service = self.service
        async with service._lock(request.thread_id):
            if await service.is_running(request.thread_id):
                return "again"
            review = (await service._read(request.thread_id)).pending
            if review is None or review.interrupt_id != request.interrupt_id:
                return "skipped"
            async with service._session() as session:
                if await is_claimed(session=session, interrupt_id=review.interrupt_id):
                    return "again"  # decided (an undo window, or a run starting): not expired
            note = expiry_note(deadline.desk.deadline_s or 0, deadline.desk.on_timeout, deadline.desk.escalate_to)
            if deadline.desk.on_timeout == "escalate":
                async with service._session() as session:
                    await desk_store.add_event(session=session, event=_policy_event(review, "escalated", note))
                log.info(
                    "review escalated thread=%s interrupt=%s to=%s",
                    review.thread_id, review.interrupt_id, deadline.desk.escalate_to,
                )
                return "escalated"
            owner_id = await service._owner_of(review.thread_id)
            decisions = await self._expiry_claim(review, deadline, owner_id, note, now)
            if decisions is None:
                return "again"
            await service._resume(review, decisions, owner_id)
            async with service._session() as session:
                await desk_store.add_event(session=session, event=_policy_event(review, "expired", note))
            log.info("review expired thread=%s interrupt=%s: %s", review.thread_id, review.interrupt_id, note)
            return "expired"

    async def _expiry_claim(
        self, review: PendingReview, deadline: Deadline, owner_id: str, note: str, now: datetime
    ) -> list[AnyDecision] | None:
        """Write the expiry's drafts and claim (open cards rejected by the policy); None when the
        review was decided meanwhile."""
        service = self.service
        async with service._session() as session:
            drafts = await drafts_store.read_drafts(session=session, interrupt_id=review.interrupt_id)
            requested = await session.get(ReviewRequestRecord, review.interrupt_id)
        cards = cards_for(review, owner_id, await service.desk.rights_for(review), drafts)
        decisions: list[AnyDecision] = []
        who: list[DecidedBy] = []
        new: list[drafts_store.NewDraft] = []
        for index, card in enumerate(cards):
            state = progress(card)
            if state.complete and state.final is not None:
                mine = [d for d in drafts if d.action_index == index]
                at = next(i for i, r in enumerate(card.recorded) if r is state.final)
                decisions.append(_DECISIONS.validate_python([mine[at].decision])[0])
                who.append(DecidedBy(state.final.display_name, state.final.account_id, state.final.role))
                continue
            reject = RejectDecision(type="reject", message=service.desk.desk(card.tool).rejection_message(card.tool))
            decisions.append(reject)
            who.append(DecidedBy("policy", "", "policy"))
            new.append(drafts_store.NewDraft(index, "policy", "policy", "policy", decision_payload(reject)))
        claim = audit_rows(
            review=review, decisions=decisions, who=who, requested=requested.requested_at if requested else now, now=now,
        )
        expired = {d.action_index for d in new}
        for row in claim:
            if row.action_index in expired:
                row.via, row.message = "deadline", note
        try:
            async with service._session() as session:
                await grant_store.name_granted(session=session, rows=claim)  # cards a grant approved
                await drafts_store.write_drafts(
                    session=session, thread_id=review.thread_id, interrupt_id=review.interrupt_id,
                    base_seq=drafts_store.next_seq(drafts), drafts=new, claim=claim, now=now,
                )
        except (drafts_store.DraftConflict, drafts_store.AlreadyDecided):
            return None
        return decisions


def _policy_event(review: PendingReview, kind: str, note: str) -> ReviewEvent:
    return ReviewEvent(
        thread_id=review.thread_id, interrupt_id=review.interrupt_id, kind=kind, display_name="policy", role="policy",
        note=note[:500],
    )
