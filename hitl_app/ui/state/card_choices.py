"""The approval cards' choices kept on the server until Submit, and shown again after a reload.

A Reflex state mixin of ``ReviewState`` (which provides ``cards``, ``interrupt_id``, ``_chat``,
``_review``, ``_set``, ``_store``, ``_edited`` and ``_drafts``). Each handler that changes a
card's choice calls ``_keep`` (a click, a reason or answer when its field changes, a checked
edit); ``_restore`` puts the person's kept choices back on blank cards when the tab shows the
review (``hitl_app.threads.choices``). The rules are ``review.draft.kept_choice`` /
``restorable`` (pure). Nothing here decides anything: Submit sends the choices the usual way and
the server checks them then.
"""

# Tested by: tests/integration/ui/test_card_choices_ws.py, tests/e2e/test_kept_choices.py

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import reflex as rx

from hitl_app.review import ReviewError, draft, validate_edit_args
from hitl_app.review.rights import Person
from hitl_app.runtime import get_choices, get_service
from hitl_app.ui import card_edit

if TYPE_CHECKING:
    from hitl_app.auth import Principal
    from hitl_app.review.types import PendingReview
    from hitl_app.ui.rows import CardRow
    from hitl_app.ui.state.chat import ChatState


class CardChoiceMixin(rx.State, mixin=True):
    """Keeping and restoring the cards' choices (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ReviewState (and its SessionState base)
        cards: list[CardRow]
        interrupt_id: str
        _edited: dict[int, dict[str, Any]]

        async def _chat(self) -> ChatState: ...
        async def require_principal(self) -> Principal | None:
            """The signed-in account, or None (``SessionState.require_principal``)."""
        def _review(self) -> PendingReview | None: ...
        def _set(self, index: int, **changes: Any) -> None: ...
        def _store(self, card: CardRow, draft: dict[str, Any]) -> None: ...

    async def _keep(self, index: int) -> None:
        """Keep card ``index``'s choice as it stands in the tab now (nothing is kept for an open
        editor or no choice: what was kept goes)."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.cards):
            return
        if not self.interrupt_id:
            return
        chat = await self._chat()
        person = await self.require_principal()
        if person is None or not chat.tid:
            return
        edited = {int(k): v for k, v in card_edit.plain(self._edited).items()}  # plain() makes the keys text
        kept = draft.kept_choice(self.cards[index], edited)
        await get_choices().save(chat.tid, self.interrupt_id, index, person, kept)

    async def _consume(self, person: Person) -> None:
        """Submit took this person's choices on the shown review: they are no longer kept."""
        if self.interrupt_id:
            await get_choices().consume(self.interrupt_id, person)

    async def _restore(self) -> None:
        """Show the person's kept choices again on the cards that have none in this tab (a reload,
        another tab of the same account, a restart; after an Undo). A choice the rights no longer
        allow, on a card decided meanwhile, or an edit that fails the tool's check is left out."""
        if not self.interrupt_id or not self.cards:
            return
        person = await self.require_principal()
        if person is None:
            return
        kept = await get_choices().read(self.interrupt_id, person)
        for index, value in sorted(kept.items()):
            if not 0 <= index < len(self.cards):
                continue
            choice = draft.restorable(self.cards[index], value)
            if choice == "edit":
                self._restore_edit(index, card_edit.plain(value["args"]))
            elif choice:
                self._set(
                    index, choice=choice, reason=value.get("reason", "") if choice == "reject" else "",
                    answer=value.get("answer", "") if choice == "respond" else "", error="",
                )

    def _restore_edit(self, index: int, args: dict[str, Any]) -> None:
        """A kept edit: checked again with the tool's validator, then shown as a checked edit."""
        review = self._review()
        if review is None:
            return
        try:
            validate_edit_args(review, index, args, get_service().validators)
        except ReviewError:
            return
        card = self.cards[index]
        card_edit.show(card, args, review.action_requests[index].args, bump=True)
        card.choice, card.editing, card.edit_error, card.error = "edit", False, "", ""
        card.args_json = json.dumps(args, indent=2, ensure_ascii=False)
        self._edited[index] = args
        self._store(card, args)
