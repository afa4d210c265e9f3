"""The way back when a tab's server state is gone while the page still shows the cards.

A Reflex state mixin of ``ReviewState`` (which provides ``_refuse``, ``_adopt_identity`` and
``browser_id``): a click on a card of a lost state asks the browser for its stored identity
(``_recovery_if_lost``), and ``recover`` reloads the thread and replays the click.
"""

# Tested by: tests/e2e/test_expired_state.py

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import reflex as rx
from reflex.event import EventSpec

from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.session import ask_identity

RECOVERABLE = ("choose", "submit", "approve_all", "pick_approve_rest")
"""Review actions replayed after the tab's server state is rebuilt (see ``RecoveryMixin._recovery_if_lost``)."""


class RecoveryMixin(rx.State, mixin=True):
    """Recovering a lost tab state for the review's actions (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ReviewState (and its SessionState base)
        browser_id: str
        cards: list[Any]
        _recovering: bool

        async def _refuse(self) -> Any: ...
        def _adopt_identity(self, stored: Any) -> None: ...

    def _recovery_if_lost(self, action: str, *args: Any) -> EventSpec | None:
        """When the tab's server state is gone (expired in Redis, or deleted), the way back.

        A fresh state has no browser id: the page's localStorage never reached it (Reflex sends it
        only when a page hydrates). The page still shows the card, so the click must not act on
        the empty state ("no such card", "nothing to submit"). Instead the browser is asked for
        its stored id and reviewer name, and ``recover`` reloads the thread from the URL and the
        checkpoint and replays ``action``. Returns None when the state is intact.

        A state lost in part counts too: with Redis, each state class is its own key, and a
        background task (the chat's or the inbox's watcher) that wrote its own state back after the
        keys expired brings the browser id back but not the cards. A review action on a tab whose
        server state shows no card is such a loss (the page shows the card it clicked); the replay
        after the reload is not recovered again (``_recovering``), so a review that is really gone
        says so instead of looping.
        """
        if self._recovering:
            self._recovering = False
            return None
        if self.browser_id and self.cards:
            return None
        self._recovering = bool(self.browser_id)
        replay = json.dumps([action, *args], ensure_ascii=True)
        return ask_identity(type(self).recover, f", action: {replay}")

    @rx.event
    async def recover(self, stored: dict[str, Any]):
        """Rebuild a lost tab state (see ``_recovery_if_lost``): identity from the browser, the thread from the
        URL and the checkpoint (``ChatState.load_thread``), then replay the reviewer's action.

        ``stored``: ``{"browser_id", "reviewer", "action": [name, *args]}``; a malformed value
        gives a new identity (the thread is then refused as another browser's, and says so).
        """
        if (refused := await self._refuse()) is not None:
            return refused
        if not isinstance(stored, dict):
            return None
        events: list[Any] = []
        if not self.browser_id:  # (a second click before the first recovery is only replayed)
            self._adopt_identity(stored)
            events.append(ChatState.load_thread)
        elif self._recovering:  # only the cards were lost: read the thread again
            events.append(ChatState.load_thread)
        action = stored.get("action")
        replay = action if isinstance(action, list) and action and action[0] in RECOVERABLE else None
        # the replay acts on what the reload shows, and is not recovered again; no replay: no mark
        self._recovering = replay is not None
        if replay is not None:
            events.append(getattr(type(self), replay[0])(*replay[1:3]))
        return events
