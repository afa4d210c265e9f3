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
import time
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.bus.local import LocalRunBus
from hitl_app.bus.run_bus import RunBus, RunEvent
from hitl_app.desk.cards import may_view
from hitl_app.desk.claims import ALREADY_DECIDED, STALE_CLAIM_S, ReviewClaims
from hitl_app.desk.decide import log_refusal, record_decisions
from hitl_app.desk.review_desk import ReviewDesk
from hitl_app.desk.sweeper import SWEEP_INTERVAL_S, Sweeper
from hitl_app.errors import ThreadError
from hitl_app.review import AnyDecision, PendingReview, ReviewError
from hitl_app.review.desk_policy import ToolDesk
from hitl_app.review.grants import GrantRequest
from hitl_app.review.rights import Person, ToolRights
from hitl_app.review.risk_policy import ToolRisk
from hitl_app.review.validate import ArgsValidator, validate_partial
from hitl_app.review.via import PAGE, PersonVia
from hitl_app.runs.agent_runtime import AgentRuntime, ThreadConfig, thread_config
from hitl_app.runs.limits import RunLimits
from hitl_app.runs.run_driver import RunDriver
from hitl_app.runs.text_batcher import FLUSH_INTERVAL_S
from hitl_app.store import reviews, threads
from hitl_app.store.db import Engines
from hitl_app.threads.lost import settle_lost_reviews
from hitl_app.threads.reader import ThreadReader, read_view
from hitl_app.threads.refusals import is_uuid4, refused_when_unavailable
from hitl_app.threads.review_reads import ReviewReads
from hitl_app.threads.run_control import RunControl
from hitl_app.threads.types import AuditEntry, ThreadSummary
from hitl_app.threads.views import ThreadView

__all__ = ["FLUSH_INTERVAL_S", "STALE_CLAIM_S", "AuditEntry", "ThreadError", "ThreadService", "ThreadSummary"]

log = logging.getLogger("hitl_app.threads")

LOST_CHECK_S = 5.0
"""Seconds between two checks of a deployment for the reviews it lost, on reading a sidebar (``threads/lost.py``)."""

class ThreadService:
    """Runs and reads threads of one compiled agent.

    Args:
        graph: the agent runtime (``hitl_app.runs.agent_runtime.AgentRuntime``): a compiled LangGraph
            agent with a checkpointer (``create_agent`` + HITL middleware).
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
        graph: AgentRuntime,
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
        self.engines = engines
        self.validators = dict(validators or {})
        self.bus = bus or LocalRunBus()
        # a thread's lock lives while someone holds or waits for it, then the entry goes
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self.desk = ReviewDesk(
            session=self._session, rights=self.rights, resume=self._resume, announce=self._announce, desks=desks,
            risks=risks,
        )
        self.grants = self.desk.grants
        self.review_reads = ReviewReads(  # a raised review's rows, once for every tab
            self.owner_of, lambda review: self.claims.note_review(review), self.desk.cards_now, self.desk.desk_rows
        )
        self.runs = RunDriver(
            graph=graph, bus=self.bus, session=self._session, lock_for=self._lock, flush_interval=flush_interval,
            limits=limits, on_interrupt=self.desk.interrupt_grants,  # a review grants cover resumes at once
            rights=self.rights, on_paused=self.review_reads.start,
        )
        self.claims = ReviewClaims(
            session=self._session, lock_for=self._lock, pending=self._pending, is_running=self.is_running,
            holds=self.desk.holds, runs=self.runs, bus=self.bus,
        )
        self.bus.on_stop = self.runs.cancel
        self._lost_checked_at = -LOST_CHECK_S
        self.control = RunControl(
            graph=graph, session=self._session, lock_for=self._lock, is_running=self.is_running,
            check_access=self.check_access, runs=self.runs,
        )
        self.reader = ThreadReader(
            graph=graph, session=self._session, lock_for=self._lock, is_running=self.is_running, owner_of=self.owner_of,
            desk=self.desk, claims=self.claims, runs=self.runs, review_reads=self.review_reads,
        )

    def sweeper(self, interval: float = SWEEP_INTERVAL_S, worker: str | None = None) -> Sweeper:
        """A ``Sweeper`` acting on this service's due deadlines and ended undo windows (not started)."""
        return Sweeper(self.claims, self.desk, self.owner_of, interval=interval, worker=worker)

    # ------------------------------------------------------------------ reading
    @staticmethod
    def config(thread_id: str) -> ThreadConfig:
        """The LangGraph config addressing ``thread_id`` (for reading its state)."""
        return thread_config(thread_id)

    async def check_access(self, thread_id: str, owner: str | None) -> str:
        """Refuse a malformed thread id, or a thread created by another browser.

        Returns the thread's owner (``owner`` for a thread not started yet; ``""`` when unknown).
        Raises ThreadError(code="not_found" | "forbidden").
        """
        recorded = await self.owner_of(thread_id)
        if recorded and owner != recorded:
            raise ThreadError("This thread belongs to someone else.", code="forbidden")
        return recorded or owner or ""

    async def owner_of(self, thread_id: str) -> str:
        """The thread's owner as recorded (``""``: not started yet, or no owner). Raises ThreadError("not_found")."""
        if not is_uuid4(thread_id):
            raise ThreadError("That is not a thread address (expected /thread/<uuid4>).", code="not_found")
        async with self._session() as session:
            record = await threads.get_thread(session=session, thread_id=thread_id)
        return (record.owner or "") if record is not None else ""

    async def load(
        self, thread_id: str, *, viewer: Person | None = None, owner: str | None = None, ended: ThreadView | None = None
    ) -> ThreadView:
        """The thread as checkpointed, for ``viewer`` (or the browser ``owner``): see ``ThreadReader.load``,
        which also says what a read repairs. Never runs the graph. Raises ThreadError (``not_found``,
        ``forbidden``, ``agent_unavailable``). An empty thread whose review the deployment lost says so
        (``view.review_lost``, ``threads/lost.py``)."""
        view = await self.reader.load(thread_id, viewer=viewer, owner=owner, ended=ended)
        if view.pending is None and not view.messages and await self._review_lost(thread_id):
            view = view.model_copy(update={"review_lost": True})
        return view

    async def list_threads(self, *, owner: str | None, limit: int = 50) -> list[ThreadSummary]:
        """Threads of ``owner``, most recently active first (after any run's index rows are written; reviews
        a deployment lost are marked so first, at most every ``LOST_CHECK_S``: ``threads/lost.py``)."""
        if self.runs.settling:
            await asyncio.wait(list(self.runs.settling.values()), timeout=2)
        if time.monotonic() - self._lost_checked_at >= LOST_CHECK_S:  # every owner's: the inbox counts them too
            self._lost_checked_at = time.monotonic()
            await settle_lost_reviews(self.graph, self._session, self._announce)
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
    async def start_turn(self, thread_id: str, text: str, *, owner: str | None = None) -> str:
        """Start a run for a new user message; returns the run id. See ``RunControl.start_turn`` (its refusals)."""
        return await self.control.start_turn(thread_id, text, owner=owner)

    @refused_when_unavailable
    async def submit_review(
        self, thread_id: str, interrupt_id: str, decisions: Sequence[AnyDecision | None], *, person: Person | None,
        grants: Sequence[GrantRequest | None] = (), via: PersonVia = PAGE,
    ) -> str | None:
        """Check ``person``'s decisions against the pending interrupt and the review rights, draft
        them, and resume once every card is decided; returns the run id, or None while cards wait.

        ``decisions`` has one typed decision per card (``ApproveDecision``, ``EditDecision``, ...);
        ``None`` leaves a card to others. They are checked again against the interrupt read from the
        checkpoint (``review.validate.validate_partial``: allowed types, the edit's tool and size)
        and on their card (``hitl_app.review.rights``: who may decide, self-approval, one approval
        per person, the decision types the tool allows) and kept server-side (``store.drafts``).
        Exactly one submission resumes the run: the one that decides the last open card writes the
        claim (unique audit rows) with its drafts; a loser gets ``ReviewError(code="stale")``.
        ``grants``: none, or one ``GrantRequest`` or None per card (``ReviewDesk.check_grants``),
        written with the decisions; with an undo window the run starts when it ends (None is returned).
        ``via``: the door they came through (``hitl_app.review.via``), kept on the drafts and the audit rows.

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
            return await self._decide(thread_id, interrupt_id, decisions, person, grants, via)
        except (ReviewError, ThreadError) as exc:
            if isinstance(exc, ReviewError) or exc.code == "forbidden":
                log_refusal(thread_id, interrupt_id, person, exc)
            raise

    async def _decide(
        self, thread_id: str, interrupt_id: str, decisions: Sequence[AnyDecision | None], person: Person | None,
        grants: Sequence[GrantRequest | None], via: PersonVia,
    ) -> str | None:
        """``submit_review`` without the refusal log."""
        if person is None:
            raise ThreadError("Sign in to decide reviews.", code="forbidden")
        await self.claims.after_pausing_run(thread_id, interrupt_id)  # the run that raised it may still be ending
        async with self._lock(thread_id):
            if await self.is_running(thread_id):
                raise ReviewError(ALREADY_DECIDED, code="stale")
            # read together: the rows are keyed by the browser's interrupt id, used only once it is the pending one
            thread_owner, view, (expiry, first) = await asyncio.gather(
                self.owner_of(thread_id), self._read(thread_id), self.desk.first_reads(interrupt_id)
            )
            review = view.pending
            typed = validate_partial(review, interrupt_id, decisions, self.validators)
            assert review is not None  # validate_partial refuses a missing review
            await self.desk.refuse_if_decided(review.interrupt_id, person)  # e.g. in its undo window
            rights = self.desk.rights_with(review, expiry)
            if thread_owner and str(person.account_id) != thread_owner:
                if not may_view((await self.desk.cards_now(review, thread_owner, rights))[0], person, thread_owner):
                    # a claim committed since refuse_if_decided read (complete cards): "already decided", not a stranger
                    await self.desk.refuse_if_decided(review.interrupt_id, person)
                    raise ThreadError("This thread belongs to someone else.", code="forbidden")
            owner_id = thread_owner or str(person.account_id)
            new_grants = await self.grants.checked_grants(review, typed, grants or (), person, owner_id, rights)
            recorded = await record_decisions(
                session=self._session, review=review, typed=typed, person=person, owner_id=owner_id,
                rights=rights, before_claim=lambda: self.runs.counter.check_start(owner_id),
                grants=new_grants, first=first, via=via,
            )
            await self.bus.reviews.announce()  # the inbox: a card's approvals, or the review, changed
            if recorded.decisions is None:
                return None
            if (run_id := await self.desk.resume_or_wait(review, recorded.decisions, owner_id, person)) is None:
                return None  # an undo window: the sweeper resumes the run when it ends
            self.claims.index_resumed(thread_id, owner_id)  # written once this lock is let go
            return run_id

    async def continue_run(self, thread_id: str, *, owner: str | None = None) -> str:
        """Re-run an incomplete or failed thread (the Retry button); returns the run id ("" when the
        thread's decided review went on instead). See ``RunControl.continue_run``.

        A Stop that lands while the checkpointer saves the resume of a decided review can leave the
        checkpoint showing that review, its claim released by the stopped run's read-back, every card
        still decided. Continue then goes on with it as a read of the thread does (``ThreadReader.load``:
        a complete review nothing holds resumes once; a call that already ran is not run again, the
        effect ledger answers it). Raises what ``RunControl.continue_run`` raises otherwise.
        """
        try:
            return await self.control.continue_run(thread_id, owner=owner)
        except ThreadError as exc:
            if exc.code != "review_pending":
                raise
            await self.load(thread_id, owner=owner)  # a decided review goes on here
            if not await self.is_running(thread_id):
                raise
            return ""

    async def stop(self, thread_id: str, *, owner: str | None = None) -> bool:
        """Stop the thread's live run; True if one was running. See ``RunControl.stop``."""
        return await self.control.stop(thread_id, owner=owner)

    async def wait(self, thread_id: str, timeout: float = 30) -> None:
        """Wait until this process's run of the thread ends, at most ``timeout`` seconds (tests, scripts)."""
        await self.control.wait(thread_id, timeout)

    # ------------------------------------------------------------------ helpers
    def _session(self) -> AsyncSession:
        return AsyncSession(self.engines.async_, expire_on_commit=False)

    def _lock(self, thread_id: str) -> asyncio.Lock:
        return self._locks.setdefault(thread_id, asyncio.Lock())

    async def _pending(self, thread_id: str) -> PendingReview | None:
        return (await self._read(thread_id)).pending

    async def _resume(self, review: PendingReview, decisions: list[AnyDecision], owner: str) -> str:
        return await self.claims.resume(review, decisions, owner)

    async def _review_lost(self, thread_id: str) -> bool:
        """True when the review of ``thread_id`` (empty on the deployment) was lost with the server's state."""
        await settle_lost_reviews(self.graph, self._session, self._announce, thread_ids=[thread_id])
        async with self._session() as session:
            record = await threads.get_thread(session=session, thread_id=thread_id)
        return record is not None and record.review_lost_at is not None

    async def _announce(self) -> None:
        await self.bus.reviews.announce()

    async def _read(self, thread_id: str) -> ThreadView:
        """The thread's view from its checkpoint (never runs the graph)."""
        return await read_view(self.graph, thread_id)
