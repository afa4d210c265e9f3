"""The review desk's two actions on the chat page: a card's "always allow" grant select, and Undo.

A Reflex state mixin of ``ReviewState`` (which provides ``cards``, ``review_note``,
``review_error``, ``_refuse``, ``_chat`` and ``_keep``). What the desk shows (deadline, grant
options, the undo window) is ``DeskState``'s, reached through its module's doors; these handlers
live on the review because both change the review's cards: a grant is kept with its card's
approval, and an Undo puts the submitted choices back on the cards.
"""

# Tested by: tests/integration/ui/test_grants_ws.py, tests/e2e/test_review_desk_browser.py

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.errors import ThreadError
from hitl_app.runtime import get_service
from hitl_app.ui.cards.card_rows import CardRow
from hitl_app.ui.state import desk
from hitl_app.ui.state.chat import ChatState, show_view, signed_out
from hitl_app.ui.state.desk import DeskState
from hitl_app.ui.state.inbox import InboxState

UNDONE_NOTE = "Undone: your decisions are back on the cards. Nothing happens until you press Submit."
"""The panel's note after this person undid their submission (``undo``)."""


class DeskActionsMixin(rx.State, mixin=True):
    """The grant select and Undo handlers of ``ReviewState`` (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ReviewState (and its mixins)
        cards: list[CardRow]
        review_note: str
        review_error: str

        async def _refuse(self) -> Any: ...
        async def _require_principal(self) -> Principal | None: ...
        async def _chat(self) -> ChatState: ...
        async def _keep(self, index: int) -> None: ...

    @rx.event
    async def set_grant(self, index: int, value: str):
        """Pick the grant to add with card ``index``'s approval (the server checks it on submit);
        kept with the approval until Submit (``_keep``)."""
        if (refused := await self._refuse()) is not None:
            return refused
        changed = desk.choose_grant(await self.get_state(DeskState), index, value)
        if changed and index < len(self.cards) and self.cards[index].choice == "approve":
            await self._keep(index)
        return None

    @rx.event
    async def undo(self):
        """Undo the submission while its window is open: the cards come back as they were (the
        submitter's kept choices, also after a reload), and the inbox count at once."""
        if (person := await self._require_principal()) is None:
            return await signed_out(await self._chat())
        chat, desk_state, service = await self._chat(), await self.get_state(DeskState), get_service()
        try:
            await service.desk.undo(chat.tid, desk.shown_interrupt(desk_state), person)
        except ThreadError as exc:
            desk_state.undo_error = exc.message
            undone = False
        else:
            desk_state.undo_error, undone = "", True
        await show_view(chat, await service.load(chat.tid, viewer=person))
        if undone:  # nothing goes on by itself now: say so (not "once every card is decided")
            self.review_note, self.review_error = UNDONE_NOTE, ""  # an earlier refusal is over
        return [ChatState.watch, InboxState.reread]
