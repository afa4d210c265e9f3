"""Reviews an agent deployment lost: the server no longer has the thread a review waited in.

A LangGraph server that loses its state (an in-memory ``langgraph dev`` restarted, a database reset)
forgets its threads and their interrupts; the app's thread index still marks their reviews pending.
Such a review can never be answered (there is nothing on the server to resume) and nothing of it was
sent. This module is the one place that finds them and says so: ``settle_lost_reviews`` asks the
runtime which of the index's pending threads it still has (``known_threads``: only a deployed agent
has it; an agent in this process keeps its own checkpoints) and marks the others lost
(``store.threads.mark_reviews_lost``: out of the sidebar's and the inbox's waiting reviews, nothing
recorded as decided), then announces the change so open inboxes re-read. The sidebar shows such a
thread's row with a "review lost" badge and its page says ``LOST_REVIEW``.

A deployment that does not answer tells nothing: no review is marked lost then.
"""

# Tested by: tests/integration/remote/test_remote_faults.py, tests/e2e/test_deployed_faults_e2e.py

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store import threads

log = logging.getLogger("hitl_app.threads")

LOST_REVIEW = (
    "The agent deployment no longer has this thread (it lost its state, e.g. a restarted in-memory server), "
    "so the review that waited here cannot be answered. Nothing of it was sent or recorded as decided. "
    "A new message starts the thread afresh on the deployment."
)
"""What a lost thread's page says (the sidebar's row says "review lost")."""


async def settle_lost_reviews(
    graph: Any, session: Callable[[], AsyncSession], announce: Callable[[], Awaitable[None]], *,
    owner: str | None = None, thread_ids: Sequence[str] | None = None,
) -> list[str]:
    """Mark lost the pending reviews whose thread the deployment no longer has (see the module).

    Args:
        graph: the agent runtime; without ``known_threads`` (an agent in this process) nothing is done.
        session: opens a session on the app database.
        announce: tells open inboxes to re-read (called when a review was marked lost).
        owner: only this owner's pending threads (every owner's when None or empty).
        thread_ids: only these threads (when they are marked pending).

    Returns the ids marked lost now (empty when the deployment does not answer).
    """
    known_threads = getattr(graph, "known_threads", None)
    if known_threads is None:
        return []
    async with session() as s:
        pending = await threads.pending_thread_ids(session=s, owner=owner)
    if thread_ids is not None:
        pending = [t for t in pending if t in set(thread_ids)]
    if not pending:
        return []
    known: set[str] | None = await known_threads(pending)
    if known is None:
        return []
    lost = [t for t in pending if t not in known]
    if not lost:
        return []
    async with session() as s:
        await threads.mark_reviews_lost(session=s, thread_ids=lost)
    log.warning("the agent deployment no longer has %d thread(s) with a pending review: marked lost %s", len(lost), lost)
    await announce()
    return lost
