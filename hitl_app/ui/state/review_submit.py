"""Submitting the cards: Submit, "Approve all" (it picks), ``approve_all`` (picks and submits),
and what a refused submission shows.

A Reflex state mixin of ``ReviewState`` (which provides the cards, the panel's messages and the
helpers named under ``TYPE_CHECKING``). The decisions sent come from the draft rules
(``hitl_app.review.draft``); ``ThreadService.submit_review`` checks them against the checkpoint.
"""

# Tested by: tests/integration/ui/test_review_submit_ws.py, tests/e2e/test_review_form.py

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.review import ReviewError, draft
from hitl_app.review.grants import GrantError, GrantRequest
from hitl_app.review.rights import Person
from hitl_app.review.types import AnyDecision, PendingReview
from hitl_app.runtime import get_service
from hitl_app.threads.service import ThreadError
from hitl_app.threads.views import CardStatus
from hitl_app.ui import card_edit, review_text
from hitl_app.ui.cards.card_rows import CardRow
from hitl_app.ui.review_text import refusal_banner
from hitl_app.ui.state import desk
from hitl_app.ui.state.chat import ChatState, begin_stream, lose_thread, show_view, signed_out, watch_events
from hitl_app.ui.state.desk import DeskState
from hitl_app.ui.state.inbox import InboxState

SAVED_NOTE = "Your decisions are saved. The agent goes on once every card is decided."
"""The panel's note after a submission that leaves cards to others."""


def inbox_reread() -> Any:
    """The tab's inbox re-read (the ``InboxState.reread`` handler, for a handler to return),
    sent after this person's own decision."""
    return InboxState.reread


class ReviewSubmitMixin(rx.State, mixin=True):
    """Submitting the cards' decisions (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ReviewState and its other mixins
        cards: list[CardRow]
        interrupt_id: str
        review_error: str
        review_note: str
        undo_open: bool
        _edited: dict[int, dict[str, Any]]

        async def _require_principal(self) -> Principal | None: ...
        async def _refuse(self) -> Any: ...
        async def _chat(self) -> ChatState: ...
        def _recovery_if_lost(self, action: str, *args: Any) -> Any: ...
        def _set(self, index: int, **changes: Any) -> None: ...
        async def _keep(self, index: int) -> None: ...
        async def _consume(self, person: Person) -> None: ...
        def _consume_later(self, person: Person) -> None: ...
        def _show(
            self, review: PendingReview | None, *, statuses: list[CardStatus] | None = None, error: str | None = None,
            raised_at: datetime | None = None, undo_open: bool = False, undo_by: str = "",
        ) -> None: ...

    @rx.event
    async def submit(self):
        """Send all decisions at once; the server checks them against the checkpoint first."""
        if (person := await self._require_principal()) is None:
            return await signed_out(await self._chat())
        return self._recovery_if_lost("submit") or await self._submit(person)

    @rx.event
    async def pick_approve_rest(self):
        """The "Approve all" / "Approve the rest" button: pick Approve on every card this person has
        not decided yet, and leave Submit to them, as every other button only picks (QA M5: it used
        to decide and submit in one click, with no confirmation). Decisions already made stay; a
        card whose edit is still open is not overwritten: the reviewer is asked to finish it."""
        if (refused := await self._refuse()) is not None:
            return refused
        if (lost := self._recovery_if_lost("pick_approve_rest")) is not None:
            return lost
        for index in self._approve_rest() or ():
            await self._keep(index)

    @rx.event
    async def approve_all(self):
        """Approve every card the reviewer has not decided yet, then submit (one call for API-like
        clients: the websocket tests and the benchmark; the page's button only picks,
        ``pick_approve_rest``).

        Decisions already made (a reject with its reason, a checked edit, an answer) are kept; a
        card whose edit is still open is not overwritten: the reviewer is asked to finish it.
        """
        if (person := await self._require_principal()) is None:
            return await signed_out(await self._chat())
        if (lost := self._recovery_if_lost("approve_all")) is not None:
            return lost
        if self._approve_rest() is None:
            return None
        return await self._submit(person)

    def _approve_rest(self) -> list[int] | None:
        """Pick Approve on every card this person has not decided yet; returns their indexes, or
        None (nothing picked) when a card's edit is still open: that card asks to finish it."""
        unfinished = draft.open_edit(self.cards, self._edited)
        if unfinished is not None:
            self._set(unfinished.index, error=review_text.FINISH_EDIT)
            self.review_error = ""
            return None
        picked = list(draft.approve_rest(self.cards))
        for index in picked:
            self._set(index, choice="approve", editing=False, edit_error="", error="")
        return picked

    async def _submit(self, person: Principal):
        """Submit the cards' decisions for ``person`` (signed in: this event's ``_require_principal``)."""
        chat = await self._chat()
        if not self.cards:
            if not chat.streaming:  # a second click while the first submission runs says nothing
                self.review_error = "Nothing to submit: this review was already decided or is no longer pending."
            return
        if review_text.nothing_left_note(self.cards):  # e.g. a double-click: the first click sent everything,
            return  # and the panel already says what the review waits for (no error: nothing went wrong)
        blank = draft.unanswered(self.cards)
        if blank is not None:
            self._set(blank.index, error=review_text.unanswered_message(blank))
            self.review_error = ""
            return
        edited = card_edit.unproxied(self._edited)
        edited = {int(k): v for k, v in edited.items()}
        # others may decide, or some card is decided already (by others, or by a grant): send one
        # entry per card, None for a card this person leaves
        shared = any(card.others_may_decide or card.standing == draft.COMPLETE for card in self.cards)
        decisions: list[AnyDecision | None] = [*(draft.to_entries if shared else draft.to_decisions)(self.cards, edited)]
        service = get_service()
        try:
            asked = desk.grants_to_send(await self.get_state(DeskState), [card.choice for card in self.cards])
            grants = [GrantRequest.parse(g) for g in asked or ()]
            run_id = await service.submit_review(chat.tid, self.interrupt_id, decisions, person=person, grants=grants)
        except ReviewError as exc:
            return await self._refused(chat, exc, person)
        except (ThreadError, GrantError) as exc:
            self.review_error = str(exc)
            return
        if run_id is None:  # drafted (other cards or approvals are still to come), or an undo window opened
            await self._consume(person)  # the kept choices went with the submission (before the cards are re-read)
            await self._reload(chat, person)
            self.review_error, self.review_note = "", "" if self.undo_open else SAVED_NOTE
            return inbox_reread()
        self._consume_later(person)  # the review is decided: its kept choices never show again
        self._show(None)
        begin_stream(chat)
        return [*watch_events(chat), inbox_reread()]

    async def _reload(self, chat: ChatState, person: Principal) -> None:
        """Show the thread as it is now after a submission; if it can no longer be read, the cards
        and the running badge go and the reason is shown (the tab never stays "Thinking...")."""
        try:
            await show_view(chat, await get_service().load(chat.tid, viewer=person))
        except ThreadError as exc:
            self._show(None, error="")
            lose_thread(chat, exc.message)

    async def _refused(self, chat: ChatState, exc: ReviewError, person: Principal):
        """Show why a submission was refused: on its card, or on the panel; a stale review is
        replaced by the thread's real state."""
        if exc.code in ("stale", "already_decided"):
            self._show(None)
            await self._reload(chat, person)
            self.review_error = refusal_banner(exc)
            return ChatState.watch
        if exc.card_index is not None and 0 <= exc.card_index < len(self.cards):
            self._set(exc.card_index, error=exc.message)  # shown on its card, not twice
            self.review_error = ""
        else:
            self.review_error = exc.message
        return None
