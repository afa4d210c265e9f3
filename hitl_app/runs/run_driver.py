"""Runs as server tasks: start one, stream it to the bus, read the thread back, settle the index.

A run is one pass of the agent (a new user message, a resume with decisions, or a Continue). It
executes in a task owned by this process, not by a browser tab; tabs follow it on the ``RunBus``:
``started``, batched ``text`` deltas, a ``boundary`` after each model message but the last (held
back until the run goes on, see ``RunDriver._stream``), and ``ended`` with the outcome and the
thread as checkpointed afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Literal

from langgraph.errors import GraphRecursionError
from langgraph.types import Command
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app import traces
from hitl_app.bus.run_bus import RunBus, RunEvent
from hitl_app.errors import ThreadError
from hitl_app.review.rights import ToolRights
from hitl_app.runs.agent_runtime import AgentRuntime, RunInput, last_step, thread_config
from hitl_app.runs.boundary import BOUNDARY_HOLD_S, HeldBoundary, read_pass
from hitl_app.runs.errors import describe_run_error
from hitl_app.runs.limits import RunCounter, RunLimits
from hitl_app.runs.pairing import EndReason, answer_open_calls
from hitl_app.runs.partial import CutReason, PartialReply, keep_partial_reply
from hitl_app.runs.review_pause import READ_AHEAD_WAIT_S, InterruptHook, PausedHook, answer_review
from hitl_app.runs.run_end import queue_finished, write_index
from hitl_app.runs.run_trace import run_span
from hitl_app.runs.text_batcher import FLUSH_INTERVAL_S, TextBatcher
from hitl_app.runs.tool_work import RUN_THREAD, TOOL_WORK
from hitl_app.store.reviews import release_claim
from hitl_app.threads.views import ThreadView, thread_view_from_snapshot

log = logging.getLogger("hitl_app.threads")

RunKind = Literal["turn", "resume", "continue"]
"""What started a run: a user message, a resume with decisions, or Continue/Retry."""
RunOutcome = Literal["finished", "interrupted", "failed", "stopped"]
"""How a run ended (``RunEvent.outcome`` of its ``ended`` event)."""


_DONE = object()
"""``_stream``'s next graph input when the run has nothing more to do."""

class RunDriver:
    """Starts and drives the runs of one graph; at most one live run per thread in this process.

    Args:
        graph: the agent runtime (``AgentRuntime``: the compiled graph with its checkpointer).
        bus: where run events go (in-process or Redis).
        session: opens an ``AsyncSession`` on the app database.
        lock_for: the thread's lock, shared with the service: a run's index rows are written
            under it, so a submission or a new turn waits for them.
        flush_interval: the least time between two streamed text deltas, in seconds
            (``TextBatcher``: a token after a quiet gap goes out at once).
        limits: the run limits (time, steps, runs per owner and per worker).
        on_interrupt: asked when a run pauses for review (``InterruptHook``): decisions it returns
            resume the graph in the same run (see ``_stream``); None: every review waits for people.
        rights: the policy's review rights (tool name -> rights), for whom a new review's
            announcement concerns (``hitl_app.review.audience``).
        on_paused: started when a run pauses for people (``PausedHook``), before its end is announced.

    Attributes:
        boundary_hold_s: how long a finished message's ``boundary`` is held back (seconds,
            ``BOUNDARY_HOLD_S``; see ``_stream``).
        tasks: thread id -> the task of its live run in this process.
        settling: thread id -> a future done once the ended run's index rows are written.
    """

    def __init__(
        self,
        *,
        graph: AgentRuntime,
        bus: RunBus,
        session: Callable[[], AsyncSession],
        lock_for: Callable[[str], asyncio.Lock],
        flush_interval: float = FLUSH_INTERVAL_S,
        limits: RunLimits | None = None,
        on_interrupt: InterruptHook | None = None,
        rights: Mapping[str, ToolRights] | None = None,
        on_paused: PausedHook | None = None,
    ) -> None:
        self.graph = graph
        self.limits = limits or RunLimits()
        self.counter = RunCounter(self.limits)
        self.bus = bus
        self.flush_interval = flush_interval
        self.boundary_hold_s = BOUNDARY_HOLD_S
        self._session = session
        self._lock_for = lock_for
        self.on_interrupt = on_interrupt
        self.rights = dict(rights or {})
        self.on_paused = on_paused
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._owners: dict[str, str] = {}  # thread id -> owner of its live run (counted in ``counter``)
        self._stopping: set[str] = set()  # threads whose run Stop cancels (a deployed run is cancelled too)
        self.settling: dict[str, asyncio.Future[None]] = {}

    async def launch(
        self, thread_id: str, inp: RunInput, run_kind: RunKind, *, owner: str, claimed: str | None = None
    ) -> str:
        """Take the thread's run lease and start a run task; returns the run id (32 hex chars).

        Args:
            thread_id: the thread to run.
            inp: the graph input (``{"messages": [...]}``, a ``Command(resume=...)``, or ``None``).
            run_kind: "turn" (a new message), "resume" (a submitted review) or "continue".
            owner: the thread's owner, put into the run config.
            claimed: the interrupt id whose review claim this run carries; if the run ends with
                that interrupt still pending, the claim is released.

        Raises:
            ThreadError: ``busy`` when another run of the thread holds the lease (another worker),
                ``limited`` when the owner or this worker already has as many runs as allowed.
            Exception: whatever the bus raises (e.g. a Redis connection error); nothing started.
        """
        run_id = uuid.uuid4().hex
        if thread_id in self._owners:
            raise ThreadError("The agent is still answering; wait for it or press Stop.", code="busy")
        self.counter.check_start(owner)
        self.counter.started(owner)
        self._owners[thread_id] = owner
        try:
            if not await self.bus.acquire_lease(thread_id, run_id, run_kind):
                raise ThreadError("The agent is still answering (in another window); wait for it or press Stop.", code="busy")
            await self.bus.open(thread_id, run_id, run_kind)
        except BaseException:
            self._end(thread_id)
            raise
        TOOL_WORK.install(asyncio.get_running_loop())
        config = {**thread_config(thread_id, owner), "recursion_limit": self.limits.max_steps}
        drive = self._drive(thread_id, run_id, run_kind, inp, config, claimed)
        task = asyncio.create_task(drive, name=f"run:{thread_id}")
        self.tasks[thread_id] = task
        return run_id

    def cancel(self, thread_id: str) -> None:
        """Cancel this process's run of ``thread_id`` (if any); what streamed of its reply is kept."""
        task = self.tasks.get(thread_id)
        if task is not None:
            self._stopping.add(thread_id)
            task.cancel()

    async def stop(self, thread_id: str) -> bool:
        """Stop the thread's live run (what streamed of its reply is kept); True if one was running.

        A run owned by another worker (Redis bus) is asked to stop through the bus; this waits up
        to 5 s for it to end.
        """
        task = self.tasks.get(thread_id)
        if task is None:
            if not await self.bus.request_stop(thread_id):
                return False
            for _ in range(50):
                if not await self.bus.is_live(thread_id):
                    break
                await asyncio.sleep(0.1)
            return True
        self._stopping.add(thread_id)
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=5)
        except (asyncio.CancelledError, TimeoutError):
            pass
        return True

    async def _drive(
        self, thread_id: str, run_id: str, run_kind: RunKind, inp: RunInput, config: dict[str, Any], claimed: str | None
    ) -> None:
        RUN_THREAD.set(thread_id)
        claims = {claimed} if claimed else set()  # + the reviews this run answered by grants
        reply = PartialReply()
        traced = run_span(session=self._session, thread_id=thread_id, run_id=run_id, run_kind=run_kind, claimed=claimed)
        try:
            async with traced:
                outcome, error, ended_by, paused = await self._stream(thread_id, run_id, inp, config, claims, reply)
                if outcome in ("stopped", "failed") and reply.text:
                    cut: CutReason = "failed" if ended_by is None else "time_limit" if ended_by == "time_limit" else "stopped"
                    await keep_partial_reply(self.graph, thread_config(thread_id), reply.text, cut, error)
                if ended_by is not None:
                    await self._answer_open_calls(thread_id, ended_by)
                view, outcome, error = await self._read_back(thread_id, outcome, error, claims, paused)
                traces.note(**{"hitl.run.outcome": outcome})
                await self._settle(thread_id, run_id, outcome, error, view)
        finally:
            self._end(thread_id)

    def _end(self, thread_id: str) -> None:
        """Forget the thread's live run: its task entry and its place in the run counts (idempotent)."""
        self.tasks.pop(thread_id, None)
        self._stopping.discard(thread_id)
        owner = self._owners.pop(thread_id, None)
        if owner is not None:
            self.counter.ended(owner)

    async def _answer_open_calls(self, thread_id: str, reason: EndReason) -> None:
        """Answer the tool calls the run left open (see ``runs/pairing.py``); a failure is logged,
        and the next load, Continue or new message answers them instead."""
        try:
            await answer_open_calls(self.graph, thread_config(thread_id), reason, session=self._session)
        except Exception:  # noqa: BLE001 - the run's end must still be announced
            log.exception("open tool calls not answered thread=%s", thread_id)

    async def _stream(
        self, thread_id: str, run_id: str, inp: Any, config: dict[str, Any], claims: set[str], reply: PartialReply
    ) -> tuple[RunOutcome, str | None, EndReason | None, ThreadView | None]:
        """Run the graph, publishing batched text and message boundaries, within the run limits.

        Returns (outcome, error, why tool calls may be left open: None when the run ended normally,
        the thread as ``_answer_review`` read it when the run paused for people, else None). A pause for
        review goes to ``on_interrupt`` first (``_answer_review``): when grants approve every card, the
        graph resumes in this same run (same lease, same Stop, the time limit and the step budget
        counted from the run's start) and ``claims`` gets the review's interrupt id. A message's
        ``boundary`` (tabs then read the committed thread) is held back: published when the next message
        starts, or ``boundary_hold_s`` after it ended if the run goes on (a tool running), never while
        grants are asked; a run's last message gets none (``ended`` carries the thread). ``reply`` holds
        what streamed of the message in progress (kept in the thread if the run ends mid-message)."""
        bus = self.bus
        batcher = TextBatcher(
            lambda text: bus.publish(thread_id, RunEvent(kind="text", run_id=run_id, delta=text)),
            gap_s=self.flush_interval,
        )
        boundary = HeldBoundary(lambda: bus.publish(thread_id, RunEvent(kind="boundary", run_id=run_id)), self.boundary_hold_s)
        outcome: RunOutcome = "finished"
        error: str | None = None
        ended_by: EndReason | None = None
        paused: ThreadView | None = None
        run: Any = None
        carrying: str | None = None  # the interrupt id the graph input answers
        try:
            async with asyncio.timeout(self.limits.run_timeout_s):
                start = await last_step(self.graph, thread_id) if self.on_interrupt is not None else None
                while inp is not _DONE:
                    carrying = next(iter(inp.resume), None) if isinstance(inp, Command) and isinstance(inp.resume, dict) else None
                    run = await self.graph.astream_events(inp, config, version="v3")
                    interrupted = await read_pass(run, batcher, boundary, reply)
                    if interrupted:
                        boundary.pause()  # a tab reading the thread now would show a card a grant may answer
                    answer = self._answer_review(thread_id, config, start, claims) if interrupted else None
                    inp, config, paused = await answer if answer is not None else (_DONE, config, None)
                    if inp is None:
                        outcome, inp = "interrupted", _DONE
        except asyncio.CancelledError:
            outcome, ended_by, paused = "stopped", "stopped", None
            if not await self._cancel_deployed(thread_id, asked=thread_id in self._stopping):
                ended_by = None  # a deployed run goes on without this process (a shutdown): it is joined again
                reply.start()
        except TimeoutError:
            outcome, ended_by, error = "failed", "time_limit", self._time_limit_text(run, carrying, claims)
            await self._cancel_deployed(thread_id, asked=True)
        except GraphRecursionError:
            outcome, ended_by, error = "failed", "step_limit", self.limits.step_limit_text()
        except Exception as exc:  # noqa: BLE001 - any model/tool/database error ends the run visibly
            outcome, error = "failed", describe_run_error(exc)
            log.warning("run failed thread=%s run=%s: %s", thread_id, run_id, error)
            if carrying is not None and getattr(run, "sent", True) is False:
                claims.discard(carrying)  # a deployed agent never got these decisions: nothing is recorded
                await self._release(thread_id, carrying)
        finally:
            boundary.drop()
            batcher.flush()
        return outcome, error, ended_by, paused if outcome == "interrupted" else None

    def _time_limit_text(self, run: Any, carrying: str | None, claims: set[str]) -> str:
        """What the thread says when the time limit ended the run. A resume a deployed agent had not taken
        yet (``run.sent`` False) may still be on its way and be carried out: its claim stays (taken out of
        ``claims``, which ``_read_back`` releases) and the thread says so; ``load`` releases a claim no run
        took once it is stale (``desk/claims.py``, ``STALE_CLAIM_S``)."""
        if carrying is None or getattr(run, "sent", True) is not False:
            return self.limits.time_limit_text()
        claims.discard(carrying)
        return self.limits.unconfirmed_resume_text()

    async def _answer_review(
        self, thread_id: str, config: dict[str, Any], start: int | None, claims: set[str]
    ) -> tuple[Any, dict[str, Any], ThreadView | None]:
        """``answer_review`` for this run's thread (see ``hitl_app.runs.review_pause``)."""
        if self.on_interrupt is None:
            return None, config, None
        return await answer_review(
            self.graph, self.limits.max_steps, self.on_interrupt, self._owners.get(thread_id, ""),
            thread_id=thread_id, config=config, start=start, claims=claims,
        )

    async def _read_back(
        self, thread_id: str, outcome: RunOutcome, error: str | None, claims: set[str], paused: ThreadView | None = None
    ) -> tuple[ThreadView | None, RunOutcome, str | None]:
        """The thread as checkpointed after the run (``paused``: as read when it paused for people);
        releases the claim of a review in ``claims`` still pending (its resume never reached the checkpoint)."""
        try:
            view = paused or thread_view_from_snapshot(thread_id, await self.graph.aget_state(thread_config(thread_id)))
        except Exception as exc:  # noqa: BLE001 - the run's end must still be announced
            log.exception("could not read back thread %s after run", thread_id)
            return None, "failed", error if outcome == "failed" else describe_run_error(exc)
        if view.pending is not None and (claimed := view.pending.interrupt_id) in claims:
            await self._release(thread_id, claimed)  # the resume never reached the checkpoint: the review stays answerable
        if outcome == "failed" and view.error is None and error:
            view = view.model_copy(update={"error": error})
        return view, outcome, error

    async def _release(self, thread_id: str, interrupt_id: str) -> None:
        """Release the review claim on ``interrupt_id``: its decisions never reached the agent."""
        try:
            async with self._session() as session:
                await release_claim(session=session, interrupt_id=interrupt_id)
        except Exception:  # noqa: BLE001 - ThreadService.load releases it later
            log.exception("review claim not released thread=%s interrupt=%s", thread_id, interrupt_id)

    async def _cancel_deployed(self, thread_id: str, *, asked: bool) -> bool:
        """For a deployed agent (``acancel_run``): cancel the server's run when ``asked`` (Stop, the time
        limit) and return True; False when not asked (this process stops, the run goes on there).
        True at once for an agent in this process (its run ended with the task)."""
        cancel = getattr(self.graph, "acancel_run", None)
        if cancel is None:
            return True
        if asked:
            await cancel(thread_id)
        return asked

    async def _settle(
        self, thread_id: str, run_id: str, outcome: RunOutcome, error: str | None, view: ThreadView | None
    ) -> None:
        """Announce the end to the tabs first (the card's latency), then write the index rows under
        the thread lock; ``settling`` lets ``list_threads`` wait for those rows."""
        settled = asyncio.get_running_loop().create_future()
        self.settling[thread_id] = settled
        paused = view.pending if view is not None and outcome == "interrupted" and self.on_paused is not None else None
        try:
            async with self._lock_for(thread_id):
                ahead = self.on_paused(paused, self._owners.get(thread_id, "")) if paused is not None and self.on_paused else None
                self._end(thread_id)
                self.bus.publish(thread_id, RunEvent(kind="ended", run_id=run_id, outcome=outcome, error=error, view=view))
                if ahead is not None:  # the tabs' reads of the new review go before the index writes
                    await asyncio.wait({ahead}, timeout=READ_AHEAD_WAIT_S)
                if view is not None:
                    end = await write_index(session=self._session, thread_id=thread_id, view=view, rights=self.rights)
                    if end.announce:  # a review waits: the inboxes it may concern re-read
                        await self.bus.reviews.announce(end.audience)
                await queue_finished(session=self._session, thread_id=thread_id, run_id=run_id, outcome=outcome, view=view)
        finally:
            if self.settling.get(thread_id) is settled:
                del self.settling[thread_id]
            settled.set_result(None)

    async def wait(self, thread_id: str, timeout_s: float = 30) -> None:
        """Wait until this process's run of ``thread_id`` (if any) ends, at most ``timeout_s`` seconds.

        Raises TimeoutError when it is still running after ``timeout_s``.
        """
        task = self.tasks.get(thread_id)
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
