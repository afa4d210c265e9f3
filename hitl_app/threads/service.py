"""The thread service: start a turn, resume a review, continue, stop, load. No reflex here.

A run is a server task that drives ``graph.astream_events(..., version="v3")`` and publishes
batched text to a ``RunBus``; browser tabs subscribe. The server is the authority on what is
pending: every submission is checked against the interrupt read from the checkpoint, under a
per-thread lock, and claimed in the database (unique audit rows) before the graph is resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.types import Command
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review import MAX_MESSAGE_CHARS, PendingReview, ReviewError, validate_submission
from hitl_app.review.validate import ArgsValidator
from hitl_app.store.db import Engines
from hitl_app.store.tables import AuditRecord, ReviewRequestRecord, ThreadRecord, utcnow
from hitl_app.threads.bus import RunBus, RunEvent
from hitl_app.threads.bus_local import LocalRunBus
from hitl_app.threads.errors import describe_run_error
from hitl_app.threads.views import ThreadView, thread_view_from_snapshot

log = logging.getLogger("hitl_app.threads")

FLUSH_INTERVAL_S = 0.05
"""Streamed text is published at most this often per run (seconds); see issue 5 for the why."""


class ThreadError(Exception):
    """A request about a thread was refused; ``message`` says what to do instead."""

    def __init__(self, message: str, code: str = "refused"):
        super().__init__(message)
        self.message = message
        self.code = code


@contextlib.asynccontextmanager
async def _database_errors() -> AsyncIterator[None]:
    """Turn a locked or unreachable database into ThreadError(code="db_unavailable").

    Raised before anything was resumed or started, so the user can simply try again.
    """
    try:
        yield
    except (OperationalError, InterfaceError, sqlite3.OperationalError, OSError) as exc:
        log.warning("database unavailable: %s", exc)
        raise ThreadError(
            "The database is busy or unreachable right now; nothing was sent. Try again in a moment.",
            code="db_unavailable",
        ) from exc


def _is_uuid4(value: str) -> bool:
    try:
        return uuid.UUID(value).version == 4 and len(value) == 36
    except (ValueError, AttributeError, TypeError):
        return False


@dataclass(frozen=True)
class ThreadSummary:
    """A sidebar row: ``thread_id``, ``title``, ``updated_at`` (aware UTC), ``pending_review``."""

    thread_id: str
    title: str
    updated_at: datetime
    pending_review: bool


@dataclass(frozen=True)
class AuditEntry:
    """A decision as shown under its tool call and on the audit page."""

    tool_call_id: str | None
    tool_name: str
    decision_type: str
    reviewer: str
    decided_at: datetime
    waited_seconds: float
    message: str | None


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return (line[:57] + "...") if len(line) > 60 else (line or "New chat")


class ThreadService:
    """Runs and reads threads of one compiled agent.

    Args:
        graph: a compiled LangGraph agent with a checkpointer (``create_agent`` + HITL middleware).
        engines: the app database engines (thread index, review requests, audit records).
        validators: tool name -> arguments validator used for edits (tools not listed are
            checked for JSON validity only).
        bus: the live event fan-out (a new in-process one by default).
    """

    def __init__(
        self,
        graph: Any,
        engines: Engines,
        validators: Mapping[str, ArgsValidator] | None = None,
        bus: RunBus | None = None,
        flush_interval: float = FLUSH_INTERVAL_S,
    ) -> None:
        self.graph = graph
        self.engines = engines
        self.validators = dict(validators or {})
        self.bus = bus or LocalRunBus()
        self.flush_interval = flush_interval
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._settling: dict[str, asyncio.Future[None]] = {}
        self.bus.on_stop = self._cancel_local

    # ------------------------------------------------------------------ reading
    @staticmethod
    def config(thread_id: str) -> dict[str, Any]:
        """The LangGraph config addressing ``thread_id``."""
        return {"configurable": {"thread_id": thread_id}}

    def _session(self) -> AsyncSession:
        return AsyncSession(self.engines.async_, expire_on_commit=False)

    async def check_access(self, thread_id: str, owner: str | None) -> None:
        """Refuse a malformed thread id, or a thread created by another browser.

        Raises ThreadError(code="not_found" | "forbidden").
        """
        if not _is_uuid4(thread_id):
            raise ThreadError("That is not a thread address (expected /thread/<uuid4>).", code="not_found")
        async with self._session() as session:
            record = await session.get(ThreadRecord, thread_id)
        if record is not None and record.owner and owner != record.owner:
            raise ThreadError("This thread belongs to another browser.", code="forbidden")

    async def load(self, thread_id: str, *, owner: str | None = None) -> ThreadView:
        """The thread as checkpointed: messages, pending review, status. Never runs the graph."""
        await self.check_access(thread_id, owner)
        snapshot = await self.graph.aget_state(self.config(thread_id))
        view = thread_view_from_snapshot(thread_id, snapshot)
        if view.pending is not None:
            await self._record_review_requested(view.pending)
        return view

    async def list_threads(self, *, owner: str | None, limit: int = 50) -> list[ThreadSummary]:
        """Threads of ``owner``, most recently active first (after any run's index rows are written)."""
        if self._settling:
            await asyncio.wait(list(self._settling.values()), timeout=2)
        async with self._session() as session:
            stmt = select(ThreadRecord).order_by(col(ThreadRecord.updated_at).desc()).limit(limit)
            if owner:
                stmt = stmt.where(ThreadRecord.owner == owner)
            rows = (await session.exec(stmt)).all()
        return [
            ThreadSummary(r.thread_id, r.title, r.updated_at.replace(tzinfo=r.updated_at.tzinfo or UTC), r.pending_review)
            for r in rows
        ]

    async def audit_for_thread(self, thread_id: str) -> dict[str, AuditEntry]:
        """Decisions recorded for ``thread_id``, keyed by tool call id."""
        async with self._session() as session:
            rows = (await session.exec(select(AuditRecord).where(AuditRecord.thread_id == thread_id))).all()
        return {
            r.tool_call_id: AuditEntry(r.tool_call_id, r.tool_name, r.decision_type, r.reviewer, r.decided_at, r.waited_seconds, r.message)
            for r in rows
            if r.tool_call_id
        }

    async def is_running(self, thread_id: str) -> bool:
        """True while a run of ``thread_id`` is live (in this process, or in any worker with Redis)."""
        return thread_id in self._tasks or await self.bus.is_live(thread_id)

    def subscribe(self, thread_id: str) -> AsyncIterator[RunEvent]:
        """Live events of the thread's current run (empty if none); see ``RunBus.subscribe``."""
        return self.bus.subscribe(thread_id)

    # ------------------------------------------------------------------ writing
    def _lock(self, thread_id: str) -> asyncio.Lock:
        return self._locks.setdefault(thread_id, asyncio.Lock())

    async def _touch_thread(self, thread_id: str, *, owner: str | None, title: str | None = None, pending: bool | None = None) -> None:
        async with self._session() as session:
            record = await session.get(ThreadRecord, thread_id)
            if record is None:
                record = ThreadRecord(thread_id=thread_id, owner=owner, title=_title_from(title or ""))
            elif title and record.title == "New chat":
                record.title = _title_from(title)
            record.updated_at = utcnow()
            if pending is not None:
                record.pending_review = pending
            session.add(record)
            await session.commit()

    async def _record_review_requested(self, review: PendingReview) -> None:
        """Write the review's "requested" row once per interrupt (case C6), however often it is read."""
        async with self._session() as session:
            if await session.get(ReviewRequestRecord, review.interrupt_id) is not None:
                return
            session.add(
                ReviewRequestRecord(
                    interrupt_id=review.interrupt_id,
                    thread_id=review.thread_id,
                    action_count=len(review.action_requests),
                    tool_names=",".join(a.name for a in review.action_requests)[:2000],
                )
            )
            try:
                await session.commit()
            except IntegrityError:
                await session.rollback()

    async def _pending(self, thread_id: str) -> ThreadView:
        snapshot = await self.graph.aget_state(self.config(thread_id))
        return thread_view_from_snapshot(thread_id, snapshot)

    async def start_turn(self, thread_id: str, text: Any, *, owner: str | None = None) -> str:
        """Start a run for a new user message; returns the run id.

        Raises:
            ThreadError: ``empty`` / ``too_large`` message, ``busy`` (a run is streaming),
                ``review_pending`` (decide the open review first), access errors.
        """
        if not isinstance(text, str) or not text.strip():
            raise ThreadError("Type a message first.", code="empty")
        if len(text) > MAX_MESSAGE_CHARS:
            raise ThreadError(
                f"That message is too long ({len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}).",
                code="too_large",
            )
        async with _database_errors():
            return await self._start_turn(thread_id, text, owner)

    async def _start_turn(self, thread_id: str, text: str, owner: str | None) -> str:
        await self.check_access(thread_id, owner)
        async with self._lock(thread_id):
            await self._refuse_if_busy(thread_id)
            view = await self._pending(thread_id)
            if view.pending is not None:
                raise ThreadError(
                    "Decide the pending review first: the agent is waiting on "
                    + (f"{n} actions." if (n := len(view.pending.action_requests)) != 1 else "1 action."),
                    code="review_pending",
                )
            await self._touch_thread(thread_id, owner=owner, title=text)
            return await self._launch(thread_id, {"messages": [{"role": "user", "content": text}]}, "turn")

    async def submit_review(
        self,
        thread_id: str,
        interrupt_id: Any,
        decisions: Any,
        *,
        reviewer: str,
        owner: str | None = None,
    ) -> str:
        """Validate decisions against the pending interrupt, record them, resume; returns the run id.

        Exactly one submission per interrupt wins: the audit rows are unique per
        (interrupt, action), inserted before resuming; a loser gets ``ReviewError(code="stale")``.

        Raises:
            ReviewError: the submission was refused (nothing ran; the review stays answerable).
            ThreadError: access errors, ``busy``, or ``db_unavailable``.
        """
        async with _database_errors():
            return await self._submit_review(thread_id, interrupt_id, decisions, reviewer=reviewer, owner=owner)

    async def _submit_review(self, thread_id: str, interrupt_id: Any, decisions: Any, *, reviewer: str, owner: str | None) -> str:
        await self.check_access(thread_id, owner)
        async with self._lock(thread_id):
            if await self.is_running(thread_id):
                raise ReviewError("This review was already decided (the agent went on with those decisions).", code="stale")
            view = await self._pending(thread_id)
            payload = validate_submission(view.pending, interrupt_id, decisions, self.validators)
            review = view.pending
            assert review is not None
            await self._record_review_requested(review)
            await self._claim(review, payload, reviewer=reviewer)
            try:
                run_id = await self._launch(
                    thread_id,
                    Command(resume={review.interrupt_id: {"decisions": payload}}),
                    "resume",
                    claimed=review.interrupt_id,
                )
            except ThreadError:
                await self._release_claim(review.interrupt_id)
                raise ReviewError("This review was already decided (the agent went on with those decisions).", code="stale") from None
            try:  # the claim is made and the run started: a lagging sidebar index must not fail it
                await self._touch_thread(thread_id, owner=owner, pending=False)
            except (OperationalError, InterfaceError, sqlite3.OperationalError) as exc:
                log.warning("thread index not updated for %s: %s", thread_id, exc)
            return run_id

    async def continue_run(self, thread_id: str, *, owner: str | None = None) -> str:
        """Re-run an incomplete or failed thread from its last checkpoint (the Retry button).

        Raises ThreadError(``busy`` | ``nothing_to_continue`` | ``review_pending`` | ``db_unavailable``).
        """
        async with _database_errors():
            return await self._continue_run(thread_id, owner)

    async def _continue_run(self, thread_id: str, owner: str | None) -> str:
        await self.check_access(thread_id, owner)
        async with self._lock(thread_id):
            await self._refuse_if_busy(thread_id)
            view = await self._pending(thread_id)
            if view.status == "review":
                raise ThreadError("Decide the pending review first.", code="review_pending")
            if view.status not in ("incomplete", "failed"):
                raise ThreadError("Nothing to continue: the last run finished.", code="nothing_to_continue")
            return await self._launch(thread_id, None, "continue")

    async def stop(self, thread_id: str, *, owner: str | None = None) -> bool:
        """Stop the thread's live run (the partial reply is dropped); True if one was running.

        A run owned by another worker (Redis bus) is asked to stop through Redis; this waits up to
        5 s for it to end. Raises ThreadError for a thread of another browser (``check_access``).
        """
        await self.check_access(thread_id, owner)
        task = self._tasks.get(thread_id)
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

    def _cancel_local(self, thread_id: str) -> None:
        """Cancel this process's run of ``thread_id`` (a Stop request from another worker)."""
        task = self._tasks.get(thread_id)
        if task is not None:
            task.cancel()

    async def _refuse_if_busy(self, thread_id: str) -> None:
        if await self.is_running(thread_id):
            raise ThreadError("The agent is still answering; wait for it or press Stop.", code="busy")

    async def _claim(self, review: PendingReview, payload: list[dict[str, Any]], *, reviewer: str) -> None:
        async with self._session() as session:
            request = await session.get(ReviewRequestRecord, review.interrupt_id)
            requested_at = request.requested_at if request else utcnow()
            if requested_at.tzinfo is None:
                requested_at = requested_at.replace(tzinfo=UTC)
            now = utcnow()
            for index, (action, decision) in enumerate(zip(review.action_requests, payload, strict=True)):
                edited = decision.get("edited_action", {}).get("args") if decision["type"] == "edit" else None
                session.add(
                    AuditRecord(
                        thread_id=review.thread_id,
                        interrupt_id=review.interrupt_id,
                        action_index=index,
                        tool_call_id=review.tool_call_ids[index] if index < len(review.tool_call_ids) else None,
                        tool_name=action.name,
                        decision_type=decision["type"],
                        args_proposed=action.args,
                        args_executed=edited if edited is not None else (action.args if decision["type"] == "approve" else None),
                        message=decision.get("message"),
                        reviewer=reviewer[:100] or "anonymous",
                        requested_at=requested_at,
                        decided_at=now,
                        waited_seconds=max(0.0, (now - requested_at).total_seconds()),
                        checkpoint_id=review.checkpoint_id,
                    )
                )
            if request is not None:
                request.decided = True
                session.add(request)
            try:
                await session.commit()
            except IntegrityError:
                await session.rollback()
                raise ReviewError("This review was already decided.", code="stale") from None

    async def _release_claim(self, interrupt_id: str) -> None:
        """Undo a claim whose resume never reached the graph (the review is still pending)."""
        async with self._session() as session:
            rows = (await session.exec(select(AuditRecord).where(AuditRecord.interrupt_id == interrupt_id))).all()
            for row in rows:
                await session.delete(row)
            request = await session.get(ReviewRequestRecord, interrupt_id)
            if request is not None:
                request.decided = False
                session.add(request)
            await session.commit()

    # ------------------------------------------------------------------ running
    async def _launch(self, thread_id: str, inp: Any, kind: str, claimed: str | None = None) -> str:
        run_id = uuid.uuid4().hex
        if not await self.bus.acquire_lease(thread_id, run_id, kind):
            raise ThreadError("The agent is still answering (in another window); wait for it or press Stop.", code="busy")
        await self.bus.open(thread_id, run_id, kind)
        task = asyncio.create_task(self._drive(thread_id, run_id, inp, claimed), name=f"run:{thread_id}")
        self._tasks[thread_id] = task
        return run_id

    async def _drive(self, thread_id: str, run_id: str, inp: Any, claimed: str | None) -> None:
        outcome, error = "finished", None
        pending = ""
        last_flush = 0.0
        bus = self.bus

        def flush() -> None:
            nonlocal pending, last_flush
            if pending:
                bus.publish(thread_id, RunEvent(kind="text", run_id=run_id, delta=pending))
                pending = ""
            last_flush = time.monotonic()

        async def ticker() -> None:
            while True:
                await asyncio.sleep(self.flush_interval)
                if pending and time.monotonic() - last_flush >= self.flush_interval:
                    flush()

        tick = asyncio.create_task(ticker())
        try:
            run = await self.graph.astream_events(inp, self.config(thread_id), version="v3")
            async with run:
                async for message in run.messages:
                    async for token in message.text:
                        pending += token
                        if time.monotonic() - last_flush >= self.flush_interval:
                            flush()
                    flush()
                    bus.publish(thread_id, RunEvent(kind="boundary", run_id=run_id))
                if await run.interrupted():
                    outcome = "interrupted"
        except asyncio.CancelledError:
            outcome = "stopped"
        except Exception as exc:  # noqa: BLE001 - any model/tool/database error ends the run visibly
            outcome, error = "failed", describe_run_error(exc)
            log.warning("run failed thread=%s run=%s: %s", thread_id, run_id, error)
        finally:
            tick.cancel()
            flush()
        view: ThreadView | None = None
        try:
            view = await self._pending(thread_id)
            if claimed and view.pending is not None and view.pending.interrupt_id == claimed:
                await self._release_claim(claimed)
            if outcome == "failed" and view.error is None and error:
                view = view.model_copy(update={"error": error})
        except Exception as exc:  # noqa: BLE001
            log.exception("could not read back thread %s after run", thread_id)
            view = None
            if outcome != "failed":
                outcome, error = "failed", f"{type(exc).__name__}: {exc}"
        # The tabs get the result first (the card's latency, issue 5); the index rows are written
        # after, under the thread lock, so a submission or a new turn waits for them, and
        # ``list_threads`` waits for them through ``_settling``.
        settled = asyncio.get_running_loop().create_future()
        self._settling[thread_id] = settled
        try:
            async with self._lock(thread_id):
                self._tasks.pop(thread_id, None)
                bus.publish(thread_id, RunEvent(kind="ended", run_id=run_id, outcome=outcome, error=error, view=view))
                if view is not None:
                    try:
                        if view.pending is not None:
                            await self._record_review_requested(view.pending)
                        await self._touch_thread(thread_id, owner=None, pending=view.pending is not None)
                    except Exception:  # noqa: BLE001 - the run's result is already shown; the index lags
                        log.exception("thread index not updated after run thread=%s", thread_id)
        finally:
            self._tasks.pop(thread_id, None)
            if self._settling.get(thread_id) is settled:
                del self._settling[thread_id]
            settled.set_result(None)

    async def wait(self, thread_id: str, timeout: float = 30) -> None:
        """Wait until the thread's live run (if any) ends (for tests and scripts)."""
        task = self._tasks.get(thread_id)
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout)
