"""A review a run just raised, read once for every tab: the rows each tab's card needs.

When a run pauses for people, every tab following the thread loads the thread for its person
(``ThreadService.load(ended=view)``). What that load reads of the database is the same for every
person: the thread's owner, the review's "requested" row (written when first shown), the cards
with their drafts and rights, and the desk rows (deadline, undo window, the owner's name). Only
what each person sees of them (``card_statuses``, ``ReviewDesk.with_desk``) differs, and that is
pure. ``ReviewReads`` reads those rows once per review in this process, started by the run itself
(``RunDriver``'s ``on_paused``) before it announces its end, so the tabs find them read or being
read, and the run's own index writes come after them rather than in their way (SQLite has one
writer). A later load (a reload, the review signal's re-read) reads afresh: an entry lives only
while it is read and ``KEEP_S`` after.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hitl_app.desk.review_desk import DeskRows
from hitl_app.review import PendingReview

log = logging.getLogger("hitl_app.threads")

KEEP_S = 1.0
"""How long (seconds) a review's rows stay shared after they were read: the tabs of one run's end
arrive within it; a later load reads the rows as they are then."""


@dataclass(frozen=True)
class ReviewRows:
    """The rows of a waiting review that every person's load shares.

    ``owner``: the thread's owner as recorded (``""``: none); ``requested``: when the review was
    first shown (server time); ``cards`` / ``dropped``: ``ReviewDesk.cards_now``'s answer (the cards
    with the drafts that count; card index -> why other drafts do not); ``rows``: ``ReviewDesk.desk_rows``.
    """

    owner: str
    requested: datetime
    cards: list[Any]
    dropped: dict[int, list[str]]
    rows: DeskRows




class ReviewReads:
    """Interrupt id -> the task reading its ``ReviewRows`` (at most one per review at a time).

    Args:
        owner_of: thread id -> its recorded owner (``ThreadService.owner_of``).
        note_review: writes the review's "requested" row, returns its time (``ReviewClaims.note_review``).
        cards_now: ``ReviewDesk.cards_now``; desk_rows: ``ReviewDesk.desk_rows``.
    """

    def __init__(
        self,
        owner_of: Callable[[str], Awaitable[str]],
        note_review: Callable[[PendingReview], Awaitable[datetime]],
        cards_now: Callable[[PendingReview, str], Awaitable[tuple[list[Any], dict[int, list[str]]]]],
        desk_rows: Callable[[PendingReview, str], Awaitable[DeskRows]],
    ) -> None:
        self._owner_of, self._note_review, self._cards_now, self._desk_rows = owner_of, note_review, cards_now, desk_rows
        self._reading: dict[str, asyncio.Task[ReviewRows | None]] = {}

    def start(self, review: PendingReview, owner: str) -> asyncio.Task[ReviewRows | None]:
        """The task reading ``review``'s rows for a run of ``owner`` (started now unless one is under
        way or just done): ``RunDriver``'s ``on_paused``."""
        task = self._reading.get(review.interrupt_id)
        if task is None:
            task = asyncio.ensure_future(self._read(review, owner))
            self._reading[review.interrupt_id] = task
            task.add_done_callback(lambda done: self._forget_later(review.interrupt_id, done))
        return task

    async def read(self, review: PendingReview, recorded: str, owner_id: str) -> ReviewRows:
        """``review``'s rows read now, for one load (``recorded``: the thread's owner as recorded;
        ``owner_id``: whose rights and desk apply, the owner or, before one is recorded, the viewer)."""
        requested, (cards, dropped), rows = await asyncio.gather(
            self._note_review(review), self._cards_now(review, owner_id), self._desk_rows(review, owner_id)
        )
        return ReviewRows(recorded, requested, cards, dropped, rows)

    async def _read(self, review: PendingReview, run_owner: str) -> ReviewRows | None:
        """The rows, read together with the recorded owner; None when it is not the run's owner
        (each tab then reads its own)."""
        recorded, rows = await asyncio.gather(self._owner_of(review.thread_id), self.read(review, run_owner, run_owner))
        return rows if recorded and recorded == run_owner else None

    async def shared(self, review: PendingReview) -> ReviewRows | None:
        """``review``'s rows when a run started reading them (``start``) and they were read; None
        otherwise (none started, a failed read, an owner that differs): the caller reads itself."""
        task = self._reading.get(review.interrupt_id)
        if task is None:
            return None
        try:
            return await asyncio.shield(task)
        except Exception:  # noqa: BLE001 - logged by the task's reader; the tab reads for itself
            return None

    def _forget_later(self, interrupt_id: str, done: asyncio.Task[Any]) -> None:
        if not done.cancelled() and done.exception() is not None:
            log.warning("a review's rows were not read ahead interrupt=%s: %s", interrupt_id, done.exception())
        asyncio.get_running_loop().call_later(KEEP_S, self._forget, interrupt_id, done)

    def _forget(self, interrupt_id: str, done: asyncio.Task[Any]) -> None:
        if self._reading.get(interrupt_id) is done:
            del self._reading[interrupt_id]

    def __len__(self) -> int:
        return len(self._reading)
