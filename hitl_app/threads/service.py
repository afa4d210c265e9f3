"""The thread service: what a thread can do. Load it, start a turn, submit a review, continue, stop.

No reflex here. Runs are server tasks (``RunDriver``) that tabs follow on a ``RunBus``. The server
is the authority on what is pending: every submission is checked against the interrupt read from
the checkpoint, under a per-thread lock, and claimed in the database (unique audit rows) before
the graph is resumed. The claim is released on any failure before the run starts, and by the run
when its resume never reached the checkpoint; ``load`` releases a claim left behind by a worker
that died in between (see ``STALE_CLAIM_S``).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review import MAX_MESSAGE_CHARS, PendingReview, ReviewError
from hitl_app.review.desk_policy import ToolDesk
from hitl_app.review.rights import Card, Person, ToolRights
from hitl_app.review.risk_policy import ToolRisk
from hitl_app.review.validate import ArgsValidator, validate_partial
from hitl_app.store import desk as desk_store
from hitl_app.store import drafts, reviews, threads
from hitl_app.store.db import Engines
from hitl_app.store.desk_tables import ReviewExpiry
from hitl_app.store.tables import ReviewRequestRecord
from hitl_app.threads.bus import RunBus, RunEvent
from hitl_app.threads.bus_local import LocalRunBus
from hitl_app.threads.claims import _STALE, STALE_CLAIM_S, ReviewClaims
from hitl_app.threads.decide import BrowserPerson, FirstRead, card_statuses, cards_for, log_refusal, may_view, record_decisions
from hitl_app.threads.desk import ReviewDesk
from hitl_app.threads.limits import RunLimits
from hitl_app.threads.pairing import EndReason, answer_open_calls, open_tool_calls, was_stopped
from hitl_app.threads.refusals import is_uuid4, refused_when_unavailable
from hitl_app.threads.requalify import requalify
from hitl_app.threads.run_driver import RunDriver, thread_config
from hitl_app.threads.text_batcher import FLUSH_INTERVAL_S
from hitl_app.threads.tool_work import TOOL_WORK
from hitl_app.threads.types import AuditEntry, ThreadError, ThreadSummary
from hitl_app.threads.views import ThreadView, thread_view_from_snapshot

__all__ = ["FLUSH_INTERVAL_S", "STALE_CLAIM_S", "AuditEntry", "ThreadError", "ThreadService", "ThreadSummary"]

log = logging.getLogger("hitl_app.threads")

TOOL_SETTLE_S = 2.0
"""Seconds a new message or Continue waits for a stopped run's tool to finish before refusing."""


class ThreadService(ReviewClaims):
    """Runs and reads threads of one compiled agent.

    Args:
        graph: a compiled LangGraph agent with a checkpointer (``create_agent`` + HITL middleware).
        engines: the app database engines (thread index, review requests, audit records).
        validators: tool name -> arguments validator used for edits (tools not listed are
            checked for JSON validity only).
        bus: the live event fan-out (a new in-process one by default).
        flush_interval: seconds between streamed text deltas.
        limits: run limits (``RunLimits``: time and steps per run, runs per owner and per
            worker, messages per minute per owner); the defaults when omitted.
        rights: tool name -> review rights from the policy (who decides, self-approval,
            approvals); a tool not named has the default (the thread's owner decides alone).
        desks: tool name -> deadline, grants and undo window (``ReviewDesk``; none by default).
        risks: tool name -> ``ToolRisk`` (a high-risk tool takes no grant).
    """

    def __init__(
        self,
        graph: Any,
        engines: Engines,
        validators: Mapping[str, ArgsValidator] | None = None,
        bus: RunBus | None = None,
        flush_interval: float = FLUSH_INTERVAL_S,
        limits: RunLimits | None = None,
        rights: Mapping[str, ToolRights] | None = None,
        desks: Mapping[str, ToolDesk] | None = None,
        risks: Mapping[str, ToolRisk] | None = None,
    ) -> None:
        self.graph = graph
        self.rights = dict(rights or {})
        self.desk = ReviewDesk(self, desks, risks)
        self.engines = engines
        self.validators = dict(validators or {})
        self.bus = bus or LocalRunBus()
        # a thread's lock lives while someone holds or waits for it, then the entry goes
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self.runs = RunDriver(
            graph=graph, bus=self.bus, session=self._session, lock_for=self._lock, flush_interval=flush_interval,
            limits=limits, on_interrupt=self.desk.interrupt_grants,  # a review grants cover resumes at once
            rights=self.rights,
        )
        self.bus.on_stop = self.runs.cancel

    # ------------------------------------------------------------------ reading
    @staticmethod
    def config(thread_id: str) -> dict[str, Any]:
        """The LangGraph config addressing ``thread_id`` (for reading its state)."""
        return thread_config(thread_id)

    async def check_access(self, thread_id: str, owner: str | None) -> str:
        """Refuse a malformed thread id, or a thread created by another browser.

        Returns the thread's owner (``owner`` for a thread not started yet; ``""`` when unknown).
        Raises ThreadError(code="not_found" | "forbidden").
        """
        recorded = await self._owner_of(thread_id)
        if recorded and owner != recorded:
            raise ThreadError("This thread belongs to someone else.", code="forbidden")
        return recorded or owner or ""

    async def _owner_of(self, thread_id: str) -> str:
        """The thread's owner as recorded (``""``: not started yet, or no owner). Raises ThreadError("not_found")."""
        if not is_uuid4(thread_id):
            raise ThreadError("That is not a thread address (expected /thread/<uuid4>).", code="not_found")
        async with self._session() as session:
            record = await threads.get_thread(session=session, thread_id=thread_id)
        return (record.owner or "") if record is not None else ""

    async def _cards_now(
        self, review: PendingReview, owner_id: str, rights: Mapping[str, ToolRights] | None = None
    ) -> tuple[list[Card], dict[int, list[str]]]:
        """The review's cards with the drafted decisions that still count (``requalify``), and why
        the others do not (card index -> sentences); ``rights`` (``ReviewDesk.rights_for``) read
        here, beside the drafts, unless given."""
        rights_now = self.desk.rights_for(review) if rights is None else asyncio.sleep(0, rights)
        drafted, rights = await asyncio.gather(self._drafts(review.interrupt_id), rights_now)
        counted = await requalify(session=self._session, review=review, owner_id=owner_id, rights=rights, drafts=drafted)
        return cards_for(review, owner_id, rights, counted.drafts), counted.dropped

    async def _drafts(self, interrupt_id: str) -> list[Any]:
        async with self._session() as session:
            return await drafts.read_drafts(session=session, interrupt_id=interrupt_id)

    async def load(
        self, thread_id: str, *, viewer: Person | None = None, owner: str | None = None, ended: ThreadView | None = None
    ) -> ThreadView:
        """The thread as checkpointed: messages, pending review with each card's status, run
        status. Never runs the graph.

        Args:
            thread_id: the thread to load.
            viewer: the signed-in person. The owner sees the thread; an admin, someone who may
                decide one of its pending cards, or who decided (or was asked to decide) one of its
                cards before, sees it read-only (``view.read_only``).
            owner: instead of ``viewer``, a browser id owning its threads (before accounts).
            ended: the view a run's ``ended`` event carries (read from the checkpoint as it ended):
                the checkpoint is then not read again, only the viewer's part is added.

        Records that the pending review was shown, and releases an abandoned claim on it (see
        ``STALE_CLAIM_S``). Raises ThreadError (``not_found``, ``forbidden``).
        """
        viewer = viewer if viewer is not None else BrowserPerson(owner or "")
        given = ended if ended is not None and ended.thread_id == thread_id else None
        read = self.graph.aget_state(self.config(thread_id)) if given is None else asyncio.sleep(0)
        thread_owner, snapshot = await asyncio.gather(self._owner_of(thread_id), read)
        is_owner = not thread_owner or str(viewer.account_id) == thread_owner
        if not is_owner and not await self._may_read(thread_id, viewer, thread_owner):
            raise ThreadError("This thread belongs to someone else.", code="forbidden")
        if given is None and was_stopped(snapshot) and open_tool_calls((snapshot.values or {}).get("messages", [])):
            async with self._lock(thread_id):
                if not await self.is_running(thread_id):
                    await answer_open_calls(self.graph, self.config(thread_id), "stopped")
            snapshot = await self.graph.aget_state(self.config(thread_id))
        view = given.model_copy(update={"cards": [], "desk": None}) if given else thread_view_from_snapshot(thread_id, snapshot)
        cards = []
        if (pending := view.pending) is not None:
            owner_id = thread_owner or str(viewer.account_id)
            requested, (raw_cards, dropped), rows = await asyncio.gather(
                self._note_review(pending), self._cards_now(pending, owner_id), self.desk.desk_rows(pending, owner_id)
            )
            view = self.desk.with_desk(view, raw_cards, viewer, owner_id, rows, requested)
            cards = card_statuses(raw_cards, viewer, dropped, owner_name=view.desk.owner_name if view.desk else "")
        return view.model_copy(
            update={"cards": cards, "read_only": not is_owner, "owner": thread_owner or str(viewer.account_id)}
        )

    async def _may_read(self, thread_id: str, viewer: Person, thread_owner: str) -> bool:
        """May ``viewer`` (not the owner) read the thread: an admin, someone who may decide a pending
        card, or who decided (or was asked to decide) one of its cards before (read-only)."""
        pending = (await self._read(thread_id)).pending
        if may_view((await self._cards_now(pending, thread_owner))[0] if pending else [], viewer, thread_owner):
            return True
        who = str(viewer.account_id)
        async with self._session() as session:
            return await drafts.has_decided(session=session, thread_id=thread_id, account_id=who) or (
                await reviews.was_asked(session=session, thread_id=thread_id, role=str(viewer.role), email=viewer.email)
            )

    async def list_threads(self, *, owner: str | None, limit: int = 50) -> list[ThreadSummary]:
        """Threads of ``owner``, most recently active first (after any run's index rows are written)."""
        if self.runs.settling:
            await asyncio.wait(list(self.runs.settling.values()), timeout=2)
        async with self._session() as session:
            return await threads.list_threads(session=session, owner=owner, limit=limit)

    async def audit_for_thread(self, thread_id: str) -> dict[str, AuditEntry]:
        """Decisions recorded for ``thread_id``, keyed by tool call id."""
        async with self._session() as session:
            return await reviews.audit_for_thread(session=session, thread_id=thread_id)

    async def is_running(self, thread_id: str) -> bool:
        """True while a run of ``thread_id`` is live (in this process, or in any worker with Redis)."""
        return thread_id in self.runs.tasks or await self.bus.is_live(thread_id)

    def subscribe(self, thread_id: str) -> AsyncIterator[RunEvent]:
        """Live events of the thread's current run (empty if none); see ``RunBus.subscribe``."""
        return self.bus.subscribe(thread_id)

    # ------------------------------------------------------------------ acting
    @refused_when_unavailable
    async def start_turn(self, thread_id: str, text: Any, *, owner: str | None = None) -> str:
        """Start a run for a new user message; returns the run id.

        Raises:
            ThreadError: ``empty`` / ``too_large`` message, ``busy`` (a run is streaming),
                ``review_pending`` (decide the open review first), ``db_unavailable``, access errors.
        """
        if not isinstance(text, str) or not text.strip():
            raise ThreadError("Type a message first.", code="empty")
        if len(text) > MAX_MESSAGE_CHARS:
            raise ThreadError(
                f"That message is too long ({len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}).",
                code="too_large",
            )
        thread_owner = await self.check_access(thread_id, owner)
        async with self._lock(thread_id):
            await self._refuse_if_busy(thread_id)
            snapshot = await self.graph.aget_state(self.config(thread_id))
            view = thread_view_from_snapshot(thread_id, snapshot)
            if view.pending is not None:
                n = len(view.pending.action_requests)
                raise ThreadError(
                    f"Decide the pending review first: the agent is waiting on {n} action{'s' if n != 1 else ''}.",
                    code="review_pending",
                )
            self.runs.counter.check_start(thread_owner)
            self.runs.counter.note_message(thread_owner)
            reason: EndReason = "failed" if view.status == "failed" else "stopped" if was_stopped(snapshot) else "abandoned"
            await answer_open_calls(self.graph, self.config(thread_id), reason, snapshot)
            async with self._session() as session:
                await threads.touch_thread(session=session, thread_id=thread_id, owner=owner, title=text)
            inp = {"messages": [{"role": "user", "content": text}]}
            return await self.runs.launch(thread_id, inp, "turn", owner=thread_owner)

    @refused_when_unavailable
    async def submit_review(
        self, thread_id: str, interrupt_id: Any, decisions: Any, *, person: Person | None, grants: Any = None
    ) -> str | None:
        """Check ``person``'s decisions against the pending interrupt and the review rights, draft
        them, and resume once every card is decided; returns the run id, or None while cards wait.

        ``decisions`` has one entry per card; ``None`` leaves a card to others. Each decision is
        checked on its card (``hitl_app.review.rights``: who may decide, self-approval, one approval
        per person, the decision types the tool allows) and kept server-side (``store.drafts``).
        Exactly one submission resumes the run: the one that decides the last open card writes the
        claim (unique audit rows) with its drafts; a loser gets ``ReviewError(code="stale")``.
        ``grants``: one entry per card, ``{"scope", "hours"}`` or None (``ReviewDesk.check_grants``),
        written with the decisions; with an undo window the run starts when it ends (None is returned).

        Raises:
            ReviewError: refused, nothing ran, the review stays answerable: ``forbidden`` (the
                rights; logged), ``already_decided`` (another submission decided it first, e.g. in
                its undo window; names who), ``stale``, ``count``, ``not_allowed`` and the other shape codes.
            ThreadError: ``forbidden`` (signed out, or not this person's thread and no card of it
                theirs to decide), ``not_found``, ``busy``, ``limited``, ``db_unavailable``, or
                ``not_started`` (the run could not start after the claim; the message says when
                the review can be answered again).
        """
        try:
            return await self._decide(thread_id, interrupt_id, decisions, person, grants)
        except (ReviewError, ThreadError) as exc:
            if isinstance(exc, ReviewError) or exc.code == "forbidden":
                log_refusal(thread_id, interrupt_id, person, exc)
            raise

    async def _decide(
        self, thread_id: str, interrupt_id: Any, decisions: Any, person: Person | None, grants: Any = None
    ) -> str | None:
        """``submit_review`` without the refusal log."""
        if person is None:
            raise ThreadError("Sign in to decide reviews.", code="forbidden")
        async with self._lock(thread_id):
            if await self.is_running(thread_id):
                raise ReviewError(_STALE, code="stale")
            # read together: the rows are keyed by the browser's interrupt id, used only once it is the pending one
            thread_owner, view, (expiry, first) = await asyncio.gather(
                self._owner_of(thread_id), self._read(thread_id), self._decide_reads(interrupt_id)
            )
            review = view.pending
            typed = validate_partial(review, interrupt_id, decisions, self.validators)
            assert review is not None  # validate_partial refuses a missing review
            await self.desk.refuse_if_decided(review.interrupt_id, person)  # e.g. in its undo window
            rights = self.desk.rights_with(review, expiry)
            if thread_owner and str(person.account_id) != thread_owner:
                if not may_view((await self._cards_now(review, thread_owner, rights))[0], person, thread_owner):
                    raise ThreadError("This thread belongs to someone else.", code="forbidden")
            owner_id = thread_owner or str(person.account_id)
            new_grants = await self.desk.checked_grants(review, typed, grants, person, owner_id, rights)
            recorded = await record_decisions(
                session=self._session, review=review, typed=typed, person=person, owner_id=owner_id,
                rights=rights, before_claim=lambda: self.runs.counter.check_start(owner_id),
                grants=new_grants, first=first,
            )
            await self.bus.reviews.announce()  # the inbox: a card's approvals, or the review, changed
            if recorded.decisions is None:
                return None
            if (run_id := await self.desk.resume_or_wait(review, recorded.decisions, owner_id, person)) is None:
                return None  # an undo window: the sweeper resumes the run when it ends
            self._index_resumed(thread_id, owner_id)  # written once this lock is let go
            return run_id

    async def _decide_reads(self, interrupt_id: Any) -> tuple[ReviewExpiry | None, FirstRead | None]:
        """The rows ``_decide`` needs of review ``interrupt_id`` (its expiry, its drafts and when it
        was first shown), in one session; ``(None, None)`` for an id that is not text."""
        if not isinstance(interrupt_id, str):
            return None, None
        async with self._session() as session:
            expiry = await desk_store.get_expiry(session=session, interrupt_id=interrupt_id)
            drafted = await drafts.read_drafts(session=session, interrupt_id=interrupt_id)
            request = await session.get(ReviewRequestRecord, interrupt_id)
        return expiry, FirstRead(drafted, request.requested_at if request is not None else None)

    @refused_when_unavailable
    async def continue_run(self, thread_id: str, *, owner: str | None = None) -> str:
        """Re-run an incomplete or failed thread from its last checkpoint (the Retry button).

        Raises ThreadError(``busy`` | ``nothing_to_continue`` | ``review_pending`` |
        ``db_unavailable``), or an access error.
        """
        thread_owner = await self.check_access(thread_id, owner)
        async with self._lock(thread_id):
            await self._refuse_if_busy(thread_id)
            view = await self._read(thread_id)
            if view.status == "review":
                raise ThreadError("Decide the pending review first.", code="review_pending")
            if view.status not in ("incomplete", "failed"):
                raise ThreadError("Nothing to continue: the last run finished.", code="nothing_to_continue")
            snapshot = await self.graph.aget_state(self.config(thread_id))
            if was_stopped(snapshot):  # Stop's own answer to the open calls was not written
                await answer_open_calls(self.graph, self.config(thread_id), "stopped", snapshot)
            return await self.runs.launch(thread_id, None, "continue", owner=thread_owner)

    async def stop(self, thread_id: str, *, owner: str | None = None) -> bool:
        """Stop the thread's live run (the partial reply is dropped); True if one was running.

        A run owned by another worker (Redis bus) is asked to stop through Redis; this waits up to
        5 s for it to end. Raises ThreadError for a thread of another browser (``check_access``).
        """
        await self.check_access(thread_id, owner)
        task = self.runs.tasks.get(thread_id)
        if task is None:
            if not await self.bus.request_stop(thread_id):
                return False
            for _ in range(50):
                if not await self.bus.is_live(thread_id):
                    break
                await asyncio.sleep(0.1)
            return True
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=5)
        except (asyncio.CancelledError, TimeoutError):
            pass
        return True

    async def wait(self, thread_id: str, timeout: float = 30) -> None:
        """Wait until this process's run of the thread ends, at most ``timeout`` seconds (tests, scripts)."""
        await self.runs.wait(thread_id, timeout)

    # ------------------------------------------------------------------ helpers
    def _session(self) -> AsyncSession:
        return AsyncSession(self.engines.async_, expire_on_commit=False)

    def _lock(self, thread_id: str) -> asyncio.Lock:
        return self._locks.setdefault(thread_id, asyncio.Lock())

    async def _refuse_if_busy(self, thread_id: str) -> None:
        """Refuse while a run is live, or while a stopped run's tool still runs in a worker thread
        (waits up to ``TOOL_SETTLE_S`` for it first): starting again could run it a second time."""
        if await self.is_running(thread_id):
            raise ThreadError("The agent is still answering; wait for it or press Stop.", code="busy")
        if not await TOOL_WORK.wait_idle(thread_id, TOOL_SETTLE_S):
            raise ThreadError(
                "A stopped tool call is still finishing in the background; try again in a few seconds "
                "(it will not be run a second time).",
                code="busy",
            )

    async def _read(self, thread_id: str) -> ThreadView:
        """The thread's view from its checkpoint (never runs the graph)."""
        return thread_view_from_snapshot(thread_id, await self.graph.aget_state(self.config(thread_id)))
