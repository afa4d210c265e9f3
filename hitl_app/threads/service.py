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
import functools
import logging
import sqlite3
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, ParamSpec, TypeVar

from langgraph.types import Command
from psycopg import OperationalError as PgOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review import MAX_MESSAGE_CHARS, AnyDecision, PendingReview, ReviewError, resume_value, validate_submission
from hitl_app.review.validate import ArgsValidator
from hitl_app.store import reviews, threads
from hitl_app.store.db import Engines
from hitl_app.store.tables import utcnow
from hitl_app.threads.bus import RunBus, RunEvent
from hitl_app.threads.bus_local import LocalRunBus
from hitl_app.threads.limits import RunLimits
from hitl_app.threads.pairing import EndReason, answer_open_calls, open_tool_calls, was_stopped
from hitl_app.threads.run_driver import RunDriver, thread_config
from hitl_app.threads.text_batcher import FLUSH_INTERVAL_S
from hitl_app.threads.tool_work import TOOL_WORK
from hitl_app.threads.types import AuditEntry, ThreadError, ThreadSummary
from hitl_app.threads.views import ThreadView, thread_view_from_snapshot

__all__ = ["FLUSH_INTERVAL_S", "STALE_CLAIM_S", "AuditEntry", "ThreadError", "ThreadService", "ThreadSummary"]

log = logging.getLogger("hitl_app.threads")

STALE_CLAIM_S = 30.0
"""Age in seconds after which a review claim with no live run is taken as abandoned.

A claim is written before the run lease is taken, so a fresh claim may belong to a run that is
still starting in another worker; after this long (the Redis run lease's lifetime) it cannot.
``load`` then releases it, and the reviewer decides again: a resume nobody saw run is not replayed
later on its own (the thread may have been opened hours after)."""

TOOL_SETTLE_S = 2.0
"""Seconds a new message or Continue waits for a stopped run's tool to finish before refusing."""

_UNAVAILABLE = (
    OperationalError, InterfaceError, sqlite3.OperationalError, PgOperationalError, OSError, RedisConnectionError,
    RedisTimeoutError
)
"""Errors of a locked or unreachable database or message bus."""
_STALE = "This review was already decided (the agent went on with those decisions)."

P = ParamSpec("P")
R = TypeVar("R")


def _refused_when_unavailable(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn a locked or unreachable database/bus inside ``fn`` into ThreadError("db_unavailable").

    Only for steps before anything was claimed or started, so "nothing was sent" is true.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except _UNAVAILABLE as exc:
            log.warning("database or bus unavailable: %s", type(exc).__name__)
            raise ThreadError(
                "The database is busy or unreachable right now; nothing was sent. Try again in a moment.",
                code="db_unavailable",
            ) from exc

    return wrapper


def _is_uuid4(value: str) -> bool:
    try:
        return uuid.UUID(value).version == 4 and len(value) == 36
    except (ValueError, AttributeError, TypeError):
        return False


class ThreadService:
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
    """

    def __init__(
        self,
        graph: Any,
        engines: Engines,
        validators: Mapping[str, ArgsValidator] | None = None,
        bus: RunBus | None = None,
        flush_interval: float = FLUSH_INTERVAL_S,
        limits: RunLimits | None = None,
    ) -> None:
        self.graph = graph
        self.engines = engines
        self.validators = dict(validators or {})
        self.bus = bus or LocalRunBus()
        # a thread's lock lives while someone holds or waits for it, then the entry goes
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self.runs = RunDriver(
            graph=graph, bus=self.bus, session=self._session, lock_for=self._lock, flush_interval=flush_interval,
            limits=limits,
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
        if not _is_uuid4(thread_id):
            raise ThreadError("That is not a thread address (expected /thread/<uuid4>).", code="not_found")
        async with self._session() as session:
            record = await threads.get_thread(session=session, thread_id=thread_id)
        if record is not None and record.owner and owner != record.owner:
            raise ThreadError("This thread belongs to another browser.", code="forbidden")
        return (record.owner if record is not None and record.owner else owner) or ""

    async def load(self, thread_id: str, *, owner: str | None = None) -> ThreadView:
        """The thread as checkpointed: messages, pending review, status. Never runs the graph.

        Records that the pending review was shown, and releases an abandoned claim on it (see
        ``STALE_CLAIM_S``). Raises ThreadError (``check_access``).
        """
        await self.check_access(thread_id, owner)
        snapshot = await self.graph.aget_state(self.config(thread_id))
        if was_stopped(snapshot) and open_tool_calls(snapshot.values.get("messages", []) if snapshot.values else []):
            async with self._lock(thread_id):
                if not await self.is_running(thread_id):
                    await answer_open_calls(self.graph, self.config(thread_id), "stopped")
            snapshot = await self.graph.aget_state(self.config(thread_id))
        view = thread_view_from_snapshot(thread_id, snapshot)
        if view.pending is not None:
            await self._note_review(view.pending)
        return view

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
    @_refused_when_unavailable
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

    @_refused_when_unavailable
    async def submit_review(
        self, thread_id: str, interrupt_id: Any, decisions: Any, *, reviewer: str, owner: str | None = None
    ) -> str:
        """Validate decisions against the pending interrupt, claim them, resume; returns the run id.

        Exactly one submission per interrupt wins: the audit rows are unique per (interrupt,
        action) and inserted before resuming; a loser gets ``ReviewError(code="stale")``.

        Raises:
            ReviewError: the submission was refused (nothing ran; the review stays answerable).
            ThreadError: access errors, ``busy``, ``db_unavailable`` (before the claim), or
                ``not_started`` (the run could not start after the claim; the message says when
                the review can be answered again).
        """
        thread_owner = await self.check_access(thread_id, owner)
        async with self._lock(thread_id):
            if await self.is_running(thread_id):
                raise ReviewError(_STALE, code="stale")
            review = (await self._read(thread_id)).pending
            typed = validate_submission(review, interrupt_id, decisions, self.validators)
            assert review is not None  # validate_submission refuses a missing review
            self.runs.counter.check_start(thread_owner)
            await self._claim(review, typed, reviewer)
            run_id = await self._resume(review, typed, thread_owner)
            try:  # the claim is made and the run started: a lagging sidebar index must not fail it
                async with self._session() as session:
                    await threads.touch_thread(session=session, thread_id=thread_id, owner=owner, pending_review=False)
            except _UNAVAILABLE as exc:
                log.warning("thread index not updated for %s: %s", thread_id, type(exc).__name__)
            return run_id

    @_refused_when_unavailable
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

    async def _claim(self, review: PendingReview, decisions: list[AnyDecision], reviewer: str) -> None:
        """Record the decisions as the review's claim. Raises ReviewError("stale") if it lost."""
        async with self._session() as session:
            await reviews.record_review_requested(session=session, review=review)
            try:
                await reviews.claim_review(session=session, review=review, decisions=decisions, reviewer=reviewer)
            except reviews.AlreadyDecided:
                raise ReviewError("This review was already decided.", code="stale") from None

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

    async def _release_claim(self, interrupt_id: str) -> bool:
        """Release the claim on ``interrupt_id``; False when the database did not answer."""
        try:
            async with self._session() as session:
                await reviews.release_claim(session=session, interrupt_id=interrupt_id)
        except Exception:  # noqa: BLE001 - ``load`` releases it once it is stale
            log.exception("review claim not released interrupt=%s", interrupt_id)
            return False
        return True

    async def _note_review(self, review: PendingReview) -> None:
        """Write the review's "requested" row; release an abandoned claim on it (no live run, older
        than ``STALE_CLAIM_S``), re-checked under the thread lock against the checkpoint."""
        thread_id = review.thread_id
        async with self._session() as session:
            await reviews.record_review_requested(session=session, review=review)
            if await self.is_running(thread_id) or not await reviews.is_claimed(
                session=session, interrupt_id=review.interrupt_id
            ):
                return
        async with self._lock(thread_id):
            current = (await self._read(thread_id)).pending
            if await self.is_running(thread_id) or current is None or current.interrupt_id != review.interrupt_id:
                return
            cutoff = utcnow() - timedelta(seconds=STALE_CLAIM_S)
            async with self._session() as session:
                released = await reviews.release_claim(session=session, interrupt_id=review.interrupt_id, claimed_before=cutoff)
        if released:
            log.warning("released an abandoned review claim thread=%s interrupt=%s", thread_id, review.interrupt_id)
