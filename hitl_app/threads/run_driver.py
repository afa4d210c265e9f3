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
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from langgraph.errors import GraphRecursionError
from langgraph.types import Command
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.audience import Audience, audience_of
from hitl_app.review.rights import ToolRights
from hitl_app.review.types import AnyDecision, PendingReview, resume_value
from hitl_app.store.reviews import record_review_waiting, release_claim
from hitl_app.store.threads import touch_thread
from hitl_app.threads.bus import RunBus, RunEvent
from hitl_app.threads.errors import describe_run_error
from hitl_app.threads.limits import RunCounter, RunLimits
from hitl_app.threads.pairing import EndReason, answer_open_calls
from hitl_app.threads.text_batcher import FLUSH_INTERVAL_S, TextBatcher
from hitl_app.threads.tool_work import RUN_THREAD, TOOL_WORK
from hitl_app.threads.types import ThreadError
from hitl_app.threads.views import ThreadView, thread_view_from_snapshot

log = logging.getLogger("hitl_app.threads")

RunKind = Literal["turn", "resume", "continue"]
"""What started a run: a user message, a resume with decisions, or Continue/Retry."""
RunOutcome = Literal["finished", "interrupted", "failed", "stopped"]
"""How a run ended (``RunEvent.outcome`` of its ``ended`` event)."""


def thread_config(thread_id: str, owner: str | None = None) -> dict[str, Any]:
    """The LangGraph config of a thread: ``{"configurable": {"thread_id", "owner"?}}``.

    ``owner`` (the thread's owner, ``""`` when unknown) is given to runs so tools can read it from
    ``ToolRuntime.config["configurable"].get("owner", "")``; reads leave it out.
    """
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if owner is not None:
        configurable["owner"] = owner
    return {"configurable": configurable}


InterruptHook = Callable[[PendingReview, str], Awaitable[list[AnyDecision] | None]]
"""``(pending review, the run's owner) -> decisions`` to resume with at once (their claim written),
or None: people decide (``hitl_app.threads.grant_check.InterruptGrants``)."""

_DONE = object()
"""``_stream``'s next graph input when the run has nothing more to do."""

BOUNDARY_HOLD_S = 0.25
"""How long (seconds) a finished message's ``boundary`` waits for the run to end or the next
message to start before it is published anyway (a tool is running: the tabs show the message)."""


class _HeldBoundary:
    """The ``boundary`` of the message that just ended, published late or not at all.

    ``hold`` starts the wait (a timer on the running loop), ``release`` publishes now if one is
    held (the next message started), ``pause`` stops the timer but keeps the boundary for the next
    ``release`` (the run paused for review: no tab may read the pending review while the grants
    are asked), ``drop`` forgets it (the run ended: ``ended`` says it all).
    """

    def __init__(self, publish: Callable[[], None], hold_s: float) -> None:
        self._publish = publish
        self._hold_s = hold_s
        self._timer: asyncio.TimerHandle | None = None
        self._pending = False

    def hold(self) -> None:
        self.drop()
        self._pending = True
        self._timer = asyncio.get_running_loop().call_later(self._hold_s, self.release)

    def pause(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def release(self) -> None:
        if self._pending:
            self.drop()
            self._publish()

    def drop(self) -> None:
        self.pause()
        self._pending = False


def _duration(seconds: float) -> str:
    """``600`` -> ``"10 minutes"``, ``90`` -> ``"90 seconds"``, ``1`` -> ``"1 second"``."""
    if seconds >= 120 and seconds % 60 == 0:
        return f"{int(seconds // 60)} minutes"
    return f"{seconds:g} second{'' if seconds == 1 else 's'}"


class RunDriver:
    """Starts and drives the runs of one graph; at most one live run per thread in this process.

    Args:
        graph: the compiled agent (with its checkpointer).
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

    Attributes:
        boundary_hold_s: how long a finished message's ``boundary`` is held back (seconds,
            ``BOUNDARY_HOLD_S``; see ``_stream``).
        tasks: thread id -> the task of its live run in this process.
        settling: thread id -> a future done once the ended run's index rows are written.
    """

    def __init__(
        self,
        *,
        graph: Any,
        bus: RunBus,
        session: Callable[[], AsyncSession],
        lock_for: Callable[[str], asyncio.Lock],
        flush_interval: float = FLUSH_INTERVAL_S,
        limits: RunLimits | None = None,
        on_interrupt: InterruptHook | None = None,
        rights: Mapping[str, ToolRights] | None = None,
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
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._owners: dict[str, str] = {}  # thread id -> owner of its live run (counted in ``counter``)
        self.settling: dict[str, asyncio.Future[None]] = {}

    async def launch(
        self, thread_id: str, inp: Any, run_kind: RunKind, *, owner: str, claimed: str | None = None
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
        task = asyncio.create_task(self._drive(thread_id, run_id, inp, config, claimed), name=f"run:{thread_id}")
        self.tasks[thread_id] = task
        return run_id

    def cancel(self, thread_id: str) -> None:
        """Cancel this process's run of ``thread_id`` (if any); the partial reply is dropped."""
        task = self.tasks.get(thread_id)
        if task is not None:
            task.cancel()

    async def _drive(self, thread_id: str, run_id: str, inp: Any, config: dict[str, Any], claimed: str | None) -> None:
        RUN_THREAD.set(thread_id)
        claims = {claimed} if claimed else set()  # + the reviews this run answered by grants
        try:
            outcome, error, ended_by, paused = await self._stream(thread_id, run_id, inp, config, claims)
            if ended_by is not None:
                await self._answer_open_calls(thread_id, ended_by)
            view, outcome, error = await self._read_back(thread_id, outcome, error, claims, paused)
            await self._settle(thread_id, run_id, outcome, error, view)
        finally:
            self._end(thread_id)

    def _end(self, thread_id: str) -> None:
        """Forget the thread's live run: its task entry and its place in the run counts (idempotent)."""
        self.tasks.pop(thread_id, None)
        owner = self._owners.pop(thread_id, None)
        if owner is not None:
            self.counter.ended(owner)

    async def _answer_open_calls(self, thread_id: str, reason: EndReason) -> None:
        """Answer the tool calls the run left open (see ``threads/pairing.py``); a failure is logged,
        and the next load, Continue or new message answers them instead."""
        try:
            await answer_open_calls(self.graph, thread_config(thread_id), reason)
        except Exception:  # noqa: BLE001 - the run's end must still be announced
            log.exception("open tool calls not answered thread=%s", thread_id)

    async def _stream(
        self, thread_id: str, run_id: str, inp: Any, config: dict[str, Any], claims: set[str]
    ) -> tuple[RunOutcome, str | None, EndReason | None, ThreadView | None]:
        """Run the graph, publishing batched text and message boundaries, within the run limits.

        Returns (outcome, error, why tool calls may be left open: None when the run ended normally,
        the thread as ``_answer_review`` read it when the run paused for people, else None). A pause for
        review goes to ``on_interrupt`` first (``_answer_review``): when grants approve every card, the
        graph resumes in this same run (same lease, same Stop, the time limit and the step budget
        counted from the run's start) and ``claims`` gets the review's interrupt id. A message's
        ``boundary`` (tabs then read the committed thread) is held back: published when the next message
        starts, or ``boundary_hold_s`` after it ended if the run goes on (a tool running), never while
        grants are asked; a run's last message gets none (``ended`` carries the thread)."""
        bus = self.bus
        batcher = TextBatcher(
            lambda text: bus.publish(thread_id, RunEvent(kind="text", run_id=run_id, delta=text)),
            gap_s=self.flush_interval,
        )
        boundary = _HeldBoundary(lambda: bus.publish(thread_id, RunEvent(kind="boundary", run_id=run_id)), self.boundary_hold_s)
        outcome: RunOutcome = "finished"
        error: str | None = None
        ended_by: EndReason | None = None
        paused: ThreadView | None = None
        try:
            async with asyncio.timeout(self.limits.run_timeout_s):
                start = await self._step_now(thread_id) if self.on_interrupt is not None else None
                while inp is not _DONE:
                    run = await self.graph.astream_events(inp, config, version="v3")
                    async with run:
                        async for message in run.messages:
                            boundary.release()
                            async for token in message.text:
                                batcher.append(token)
                            batcher.flush()
                            boundary.hold()
                        interrupted = await run.interrupted()
                    if interrupted:
                        boundary.pause()  # a tab reading the thread now would show a card a grant may answer
                    answer = self._answer_review(thread_id, config, start, claims) if interrupted else None
                    inp, config, paused = await answer if answer is not None else (_DONE, config, None)
                    if inp is None:
                        outcome, inp = "interrupted", _DONE
        except asyncio.CancelledError:
            outcome, ended_by, paused = "stopped", "stopped", None
        except TimeoutError:
            outcome, ended_by = "failed", "time_limit"
            error = (
                f"The run took longer than {_duration(self.limits.run_timeout_s)}; it was stopped."
                " Send a new message or press Retry."
            )
        except GraphRecursionError:
            outcome, ended_by = "failed", "step_limit"
            error = f"The agent took more than {self.limits.max_steps} steps; it was stopped. Send a new message to go on."
        except Exception as exc:  # noqa: BLE001 - any model/tool/database error ends the run visibly
            outcome, error = "failed", describe_run_error(exc)
            log.warning("run failed thread=%s run=%s: %s", thread_id, run_id, error)
        finally:
            boundary.drop()
            batcher.flush()
        return outcome, error, ended_by, paused if outcome == "interrupted" else None

    async def _step_now(self, thread_id: str) -> int | None:
        """The step of the thread's last checkpoint (-1 for a new thread; None when unreadable).

        Reads the checkpoint's metadata only (``aget_tuple``), not the state: no message history
        is replayed."""
        try:
            found = await self.graph.checkpointer.aget_tuple(thread_config(thread_id))
        except Exception:  # noqa: BLE001 - the run goes on; answered reviews then get a full step budget
            log.exception("step not read thread=%s", thread_id)
            return None
        step = (found.metadata or {}).get("step") if found is not None else None
        return step if isinstance(step, int) else -1

    async def _answer_review(
        self, thread_id: str, config: dict[str, Any], start: int | None, claims: set[str]
    ) -> tuple[Any, dict[str, Any], ThreadView | None]:
        """``(Command(resume=...), config, None)`` when ``on_interrupt`` answered the pending review
        (its claim is written), else ``(None, config, view)``: people decide; ``view`` (None without
        ``on_interrupt``) is the thread as read here, which ``_read_back`` reuses (the run holds the
        lease and resumes no more). The resumed graph gets the steps this run has left; with none
        left, people decide. A review this run already claimed is never answered again."""
        if self.on_interrupt is None:
            return None, config, None
        snapshot = await self.graph.aget_state(thread_config(thread_id))
        view = thread_view_from_snapshot(thread_id, snapshot)
        review = view.pending
        if review is None or review.interrupt_id in claims:
            return None, config, view
        step = (snapshot.metadata or {}).get("step")
        left = self.limits.max_steps - (step - start) if start is not None and isinstance(step, int) else self.limits.max_steps
        if left <= 0:
            return None, config, view
        try:
            decisions = await self.on_interrupt(review, self._owners.get(thread_id, ""))
        except BaseException:
            claims.add(review.interrupt_id)  # stopped meanwhile: its claim, if written, is released
            raise
        if decisions is None:
            return None, config, view
        claims.add(review.interrupt_id)
        command: Command[Any] = Command(resume={review.interrupt_id: resume_value(decisions)})
        return command, {**config, "recursion_limit": left}, None

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
            # the resume never reached the checkpoint: the review must stay answerable
            try:
                async with self._session() as session:
                    await release_claim(session=session, interrupt_id=claimed)
            except Exception:  # noqa: BLE001 - ThreadService.load releases it later
                log.exception("review claim not released thread=%s interrupt=%s", thread_id, claimed)
        if outcome == "failed" and view.error is None and error:
            view = view.model_copy(update={"error": error})
        return view, outcome, error

    async def _settle(
        self, thread_id: str, run_id: str, outcome: RunOutcome, error: str | None, view: ThreadView | None
    ) -> None:
        """Announce the end to the tabs first (the card's latency), then write the index rows under
        the thread lock; ``settling`` lets ``list_threads`` wait for those rows."""
        settled = asyncio.get_running_loop().create_future()
        self.settling[thread_id] = settled
        try:
            async with self._lock_for(thread_id):
                self._end(thread_id)
                self.bus.publish(thread_id, RunEvent(kind="ended", run_id=run_id, outcome=outcome, error=error, view=view))
                if view is not None:
                    await self._write_index(thread_id, view)
        finally:
            if self.settling.get(thread_id) is settled:
                del self.settling[thread_id]
            settled.set_result(None)

    async def _write_index(self, thread_id: str, view: ThreadView) -> None:
        """The thread's index rows after a run (a new review's two rows in one transaction), then
        the review signal when a review waits, naming whom a new one concerns."""
        audience: Audience | None = None  # none: every open inbox re-reads
        try:
            async with self._session() as session:
                if view.pending is None:
                    await touch_thread(session=session, thread_id=thread_id, owner=None, pending_review=False)
                else:
                    new, owner = await record_review_waiting(session=session, review=view.pending)
                    if new:
                        names = [a.name for a in view.pending.action_requests]
                        audience = audience_of(names, self.rights, owner or "")
        except Exception:  # noqa: BLE001 - the run's result is already shown; the index lags
            log.exception("thread index not updated after run thread=%s", thread_id)
        if view.pending is not None:  # a review waits: the inboxes it may concern re-read
            await self.bus.reviews.announce(audience)

    async def wait(self, thread_id: str, timeout_s: float = 30) -> None:
        """Wait until this process's run of ``thread_id`` (if any) ends, at most ``timeout_s`` seconds.

        Raises TimeoutError when it is still running after ``timeout_s``.
        """
        task = self.tasks.get(thread_id)
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
