"""Run control: the verbs that start, stop and wait for a thread's runs (a turn, a continue, Stop).

Each start takes the thread's lock, refuses a busy thread or one whose review is still open, answers
the tool calls an earlier run left open (``runs/pairing.py``) and hands the run to ``RunDriver.launch``.
Deciding a review, the other way a run starts, is ``ThreadService.submit_review`` and the desk
(``desk/``). ``ThreadService`` is their door: it builds one ``RunControl`` and delegates to it.
"""

# Tested by: tests/integration/threads/test_thread_service.py - through ThreadService.start_turn, continue_run, stop

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.errors import ThreadError
from hitl_app.review import MAX_MESSAGE_CHARS, PendingReview
from hitl_app.runs.agent_runtime import AgentRuntime, thread_config
from hitl_app.runs.pairing import EndReason, answer_late_results, answer_open_calls, was_stopped
from hitl_app.runs.partial import drop_failed_partial
from hitl_app.runs.run_driver import RunDriver
from hitl_app.runs.tool_work import STILL_FINISHING, refuse_while_busy
from hitl_app.store import reviews, threads
from hitl_app.threads.reader import read_view
from hitl_app.threads.refusals import refused_when_unavailable
from hitl_app.threads.views import thread_view_from_snapshot


class RunControl:
    """Starts a thread's runs for a new message or Retry, stops them, waits for them.

    Args:
        graph: the agent runtime (``AgentRuntime``) whose checkpoint each start reads and repairs.
        session: a factory of database sessions (the thread index, the review claim).
        lock_for: thread id -> the thread's lock (the service's, shared with Submit and reads).
        is_running: thread id -> True while a run of it is live in any worker.
        check_access: ``ThreadService.check_access``: (thread id, browser owner) -> the thread's owner;
            raises ThreadError(``not_found`` | ``forbidden``).
        runs: the run driver that launches, stops and waits for the runs.
    """

    def __init__(
        self, *, graph: AgentRuntime, session: Callable[[], AsyncSession], lock_for: Callable[[str], asyncio.Lock],
        is_running: Callable[[str], Awaitable[bool]], check_access: Callable[[str, str | None], Awaitable[str]],
        runs: RunDriver,
    ) -> None:
        self.graph, self._session, self._lock, self.is_running = graph, session, lock_for, is_running
        self.check_access, self.runs = check_access, runs

    @refused_when_unavailable
    async def start_turn(self, thread_id: str, text: str, *, owner: str | None = None) -> str:
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
            await refuse_while_busy(thread_id, running=await self.is_running(thread_id))
            snapshot = await self.graph.aget_state(thread_config(thread_id))
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
            answered = await answer_open_calls(self.graph, thread_config(thread_id), reason, snapshot, session=self._session)
            await answer_late_results(self.graph, thread_config(thread_id), None if answered else snapshot, session=self._session)
            async with self._session() as session:
                await threads.touch_thread(session=session, thread_id=thread_id, owner=owner, title=text)
            inp = {"messages": [{"role": "user", "content": text}]}
            return await self.runs.launch(thread_id, inp, "turn", owner=thread_owner)

    @refused_when_unavailable
    async def continue_run(self, thread_id: str, *, owner: str | None = None) -> str:
        """Re-run an incomplete or failed thread from its last checkpoint (the Retry button); returns the run id.

        Raises ThreadError(``busy`` | ``nothing_to_continue`` | ``review_pending`` |
        ``db_unavailable``), or an access error.
        """
        thread_owner = await self.check_access(thread_id, owner)
        async with self._lock(thread_id):
            await refuse_while_busy(thread_id, running=await self.is_running(thread_id))
            view = await read_view(self.graph, thread_id)
            if view.status == "review":
                await self._refuse_pending_review(view.pending)
            if view.status not in ("incomplete", "failed"):
                raise ThreadError("Nothing to continue: the last run finished.", code="nothing_to_continue")
            snapshot = await self.graph.aget_state(thread_config(thread_id))
            if was_stopped(snapshot):  # Stop's own answer to the open calls was not written
                await answer_open_calls(self.graph, thread_config(thread_id), "stopped", snapshot, session=self._session)
            await answer_late_results(self.graph, thread_config(thread_id), session=self._session)
            await drop_failed_partial(self.graph, thread_config(thread_id), snapshot)  # Retry answers afresh
            return await self.runs.launch(thread_id, None, "continue", owner=thread_owner)

    async def stop(self, thread_id: str, *, owner: str | None = None) -> bool:
        """Stop the thread's live run (``RunDriver.stop``; in any worker; what streamed of its reply is
        kept); True if one was running.

        Raises ThreadError for a thread of another browser (``check_access``).
        """
        await self.check_access(thread_id, owner)
        return await self.runs.stop(thread_id)

    async def wait(self, thread_id: str, timeout: float = 30) -> None:
        """Wait until this process's run of the thread ends, at most ``timeout`` seconds (tests, scripts)."""
        await self.runs.wait(thread_id, timeout)

    async def _refuse_pending_review(self, pending: PendingReview | None) -> None:
        """Continue's refusal on a thread whose checkpoint still shows a review.

        A review already decided (claimed) is shown only while the stopped run that resumed it writes
        its late result: ThreadError("busy"), the same plain sentence as a tool still finishing.
        Otherwise ThreadError("review_pending")."""
        if pending is not None:
            async with self._session() as session:
                claimed = await reviews.is_claimed(session=session, interrupt_id=pending.interrupt_id)
            if claimed:
                raise ThreadError(STILL_FINISHING, code="busy")
        raise ThreadError("Decide the pending review first.", code="review_pending")
