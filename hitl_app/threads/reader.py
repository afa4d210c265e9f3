"""Reading a thread for one viewer: the view from its checkpoint with each card's status and the
desk's part, and what a read puts right on the way (a stopped run's open calls answered, a call that
finished after its run ended shown done, a complete review nobody holds resumed, an abandoned claim
released, a deployed agent's run that no worker follows joined). ``ThreadService.load`` is its door.
"""

# Tested by: tests/integration/threads/test_thread_service.py - through ThreadService.load

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.desk.cards import BrowserPerson, card_statuses
from hitl_app.desk.claims import ReviewClaims
from hitl_app.desk.review_desk import ReviewDesk
from hitl_app.desk.sweeper import resume_if_complete
from hitl_app.errors import ThreadError
from hitl_app.review import PendingReview, ReviewError
from hitl_app.review.rights import Person, progress
from hitl_app.runs.agent_runtime import AgentRuntime, thread_config
from hitl_app.runs.pairing import answer_late_results, answer_open_calls, has_cancel_answers, open_tool_calls, was_stopped
from hitl_app.runs.rejoin import rejoin
from hitl_app.runs.run_driver import RunDriver
from hitl_app.threads.review_reads import ReviewReads
from hitl_app.threads.views import ThreadView, thread_view_from_snapshot

log = logging.getLogger("hitl_app.threads")


async def read_view(graph: AgentRuntime, thread_id: str) -> ThreadView:
    """The thread's view from its checkpoint (never runs the graph; no viewer's part)."""
    return thread_view_from_snapshot(thread_id, await graph.aget_state(thread_config(thread_id)))


class ThreadReader:
    """``load`` for the thread service (see the module).

    Args:
        graph: the agent runtime whose checkpoints are read (and whose stopped runs' open calls are answered).
        session: opens a session on the app database.
        lock_for: the thread's lock (the service's, shared with its acting doors).
        is_running: whether a run of a thread is live (in any worker).
        owner_of: the thread's recorded owner (``""`` none; raises ThreadError ``not_found``).
        desk: the review desk (rights, cards now, desk rows); claims: the review claims; runs: the run driver.
        review_reads: a raised review's rows, read once for every tab (``ReviewReads``).
    """

    def __init__(
        self, *, graph: AgentRuntime, session: Callable[[], AsyncSession], lock_for: Callable[[str], asyncio.Lock],
        is_running: Callable[[str], Awaitable[bool]], owner_of: Callable[[str], Awaitable[str]],
        desk: ReviewDesk, claims: ReviewClaims, runs: RunDriver, review_reads: ReviewReads,
    ) -> None:
        self.graph, self._session, self._lock, self.is_running = graph, session, lock_for, is_running
        self.owner_of, self.desk, self.claims, self.runs = owner_of, desk, claims, runs
        self.review_reads = review_reads

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
        ``STALE_CLAIM_S``). A deployed agent's run going on with no worker following it is joined
        (``runs/rejoin.py``). Raises ThreadError (``not_found``, ``forbidden``, ``agent_unavailable``).
        """
        viewer = viewer if viewer is not None else BrowserPerson(owner or "")
        given = ended if ended is not None and ended.thread_id == thread_id else None
        shared = await self.review_reads.shared(given.pending) if given is not None and given.pending else None
        if shared is not None:  # a review the run just raised: its rows were read once for every tab
            thread_owner, snapshot = shared.owner, None
        else:
            read = self.graph.aget_state(thread_config(thread_id)) if given is None else asyncio.sleep(0)
            thread_owner, snapshot = await asyncio.gather(self.owner_of(thread_id), read)
        is_owner = not thread_owner or str(viewer.account_id) == thread_owner
        if not is_owner:
            pending = (await read_view(self.graph, thread_id)).pending
            if not await self.desk.may_read(thread_id, pending, viewer, thread_owner):
                raise ThreadError("This thread belongs to someone else.", code="forbidden")
        if given is None:  # a deployed agent's run that no worker follows (a restart): joined, never run twice
            await rejoin(self.runs, thread_id, thread_owner or str(viewer.account_id))
            snapshot = await self._answer_ended_calls(thread_id, snapshot)
        view = given.model_copy(update={"cards": [], "desk": None}) if given else thread_view_from_snapshot(thread_id, snapshot)
        cards = []
        if (pending := view.pending) is not None:
            owner_id = thread_owner or str(viewer.account_id)
            got = shared or await self.review_reads.read(pending, thread_owner, owner_id)
            if got.cards and all(progress(c).complete for c in got.cards) and await self._go_on(pending, owner_id):
                return await self.load(thread_id, viewer=viewer, owner=owner)  # its run goes on now
            view = self.desk.with_desk(view, got.cards, viewer, owner_id, got.rows, got.requested)
            cards = card_statuses(got.cards, viewer, got.dropped, owner_name=view.desk.owner_name if view.desk else "")
        return view.model_copy(
            update={"cards": cards, "read_only": not is_owner, "owner": thread_owner or str(viewer.account_id)}
        )

    async def _answer_ended_calls(self, thread_id: str, snapshot: Any) -> Any:
        """A stopped run's open calls answered, and a call that finished after its run ended shown done
        (unless a run is live); returns the snapshot to show (read again when either changed it)."""
        messages = (snapshot.values or {}).get("messages", [])
        stopped_open = was_stopped(snapshot) and bool(open_tool_calls(messages))
        if not stopped_open and not has_cancel_answers(messages):
            return snapshot
        async with self._lock(thread_id):
            if not await self.is_running(thread_id):
                if stopped_open:
                    await answer_open_calls(self.graph, thread_config(thread_id), "stopped", session=self._session)
                late = await answer_late_results(
                    self.graph, thread_config(thread_id), None if stopped_open else snapshot, session=self._session)
                stopped_open = stopped_open or late > 0
        return await self.graph.aget_state(thread_config(thread_id)) if stopped_open else snapshot

    async def _go_on(self, review: PendingReview, owner_id: str) -> bool:
        """Resume a complete review nothing holds (``sweeper.resume_if_complete``); False when it
        did not start (logged when the run could not start: the review stays answerable)."""
        try:
            return await resume_if_complete(self.claims, self.desk, review, owner_id)
        except (ReviewError, ThreadError) as exc:
            log.warning("a complete review did not go on thread=%s: %s", review.thread_id, exc.message)
            return False
