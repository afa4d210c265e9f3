"""Each person's choices on the cards of a pending review, kept on the server until Submit.

The review panel keeps a person's choice on a card (``hitl_app.review.draft.kept_choice``) each
time it changes, and shows the kept choices again when it builds the cards (a reload, another tab
of the same account, a restart). Submit consumes them; an Undo of the submission reopens them
(``ReviewDesk.undo``). They are never decisions: only ``submit_review`` checks and records those,
so a kept choice is checked again at Submit exactly like a fresh one.

Keeping is a convenience: a database failure is logged and the tab goes on without it (the choice
still stands in the tab), so a click never fails because of it.
"""

# Tested by: tests/integration/store/test_store_choices.py, tests/integration/ui/test_card_choices_ws.py

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.rights import Person
from hitl_app.store import choices as store
from hitl_app.store.db import Engines

log = logging.getLogger("hitl_app.review")

AHEAD_KEEP_S = 1.0
"""How long (seconds) a read started ahead (``read_ahead``) waits for the ``read`` it was started for."""

MAX_KEPT_CHARS = 128 * 1024
"""Largest kept choice, as JSON text in characters (an edit's arguments are at most 64 KiB)."""


class CardChoices:
    """The kept choices on one app database (see the module).

    Args:
        engines: the app database.
    """

    def __init__(self, engines: Engines) -> None:
        self.engines = engines
        self._ahead: dict[tuple[str, str], asyncio.Task[dict[int, dict[str, Any]]]] = {}

    def read_ahead(self, interrupt_id: str, person: Person) -> None:
        """Start reading ``person``'s kept choices on ``interrupt_id`` now (e.g. beside the thread's
        read, before the tab's state is locked); the next ``read`` of the same takes its answer
        (within ``AHEAD_KEEP_S``; a ``save`` or ``consume`` meanwhile drops it)."""
        key = (interrupt_id, str(person.account_id))
        if key in self._ahead:
            return
        task = asyncio.ensure_future(self._read(interrupt_id, person))
        self._ahead[key] = task
        asyncio.get_running_loop().call_later(AHEAD_KEEP_S, self._drop, key, task)

    def _drop(self, key: tuple[str, str], task: asyncio.Task[Any] | None = None) -> None:
        if task is None or self._ahead.get(key) is task:
            self._ahead.pop(key, None)

    def _session(self) -> AsyncSession:
        return AsyncSession(self.engines.async_, expire_on_commit=False)

    async def save(
        self, thread_id: str, interrupt_id: str, index: int, person: Person, kept: dict[str, Any] | None
    ) -> bool:
        """Keep ``person``'s choice on card ``index`` of the pending review (None: forget it).

        ``thread_id`` / ``interrupt_id`` are the review the tab shows (read by the server, never
        taken from the browser). Returns False when nothing was kept (too large; the row was
        consumed by Submit or the review is decided: ``store.save_choice``; or the database
        failed: logged).
        """
        if kept is not None and len(json.dumps(kept, ensure_ascii=False, default=str)) > MAX_KEPT_CHARS:
            return False
        self._drop((interrupt_id, str(person.account_id)))
        try:
            async with self._session() as session:
                return await store.save_choice(
                    session=session, thread_id=thread_id, interrupt_id=interrupt_id, action_index=index,
                    account_id=str(person.account_id), choice=kept,
                )
        except Exception as exc:  # noqa: BLE001 - the choice still stands in the tab
            log.warning("card choice not kept interrupt=%s card=%s: %s: %s", interrupt_id, index, type(exc).__name__, exc)
            return False

    async def read(self, interrupt_id: str, person: Person) -> dict[int, dict[str, Any]]:
        """``person``'s open kept choices on ``interrupt_id``: card index -> payload (``{}`` when
        the database failed: logged); the answer of a ``read_ahead`` of the same when one is pending."""
        ahead = self._ahead.pop((interrupt_id, str(person.account_id)), None)
        return await ahead if ahead is not None else await self._read(interrupt_id, person)

    async def _read(self, interrupt_id: str, person: Person) -> dict[int, dict[str, Any]]:
        try:
            async with self._session() as session:
                return await store.read_choices(session=session, interrupt_id=interrupt_id, account_id=str(person.account_id))
        except Exception as exc:  # noqa: BLE001 - the cards show blank, as before
            log.warning("card choices not read interrupt=%s: %s: %s", interrupt_id, type(exc).__name__, exc)
            return {}

    async def consume(self, interrupt_id: str, person: Person) -> None:
        """Submit took ``person``'s choices on ``interrupt_id`` (they are no longer shown)."""
        self._drop((interrupt_id, str(person.account_id)))
        try:
            async with self._session() as session:
                await store.consume_choices(session=session, interrupt_id=interrupt_id, account_id=str(person.account_id))
        except Exception as exc:  # noqa: BLE001 - left open: restorable() skips decided cards
            log.warning("card choices not consumed interrupt=%s: %s: %s", interrupt_id, type(exc).__name__, exc)
