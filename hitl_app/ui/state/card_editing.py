"""The edit handlers of the approval cards: one draft per card, edited through the schema form or
the JSON editor, checked on the server by "Check edit".

A Reflex state mixin of ``ReviewState`` (which provides ``cards``, ``_card``, ``_set``,
``_review``, ``_drafts`` and ``_edited``); the rules live in ``hitl_app.ui.card_edit`` (pure).
Every value from the browser is checked here (types, sizes, that the card exists and allows an
edit); the submitted decisions are checked again by the server against the checkpoint.
"""

# Tested by: tests/e2e/test_review_form.py

from __future__ import annotations

import json
from typing import Any

import reflex as rx

from hitl_app.agent.preview import EffectPreview
from hitl_app.desk.previews import effect_previews
from hitl_app.review import ReviewError, parse_args_json, validate_edit_args
from hitl_app.runtime import get_runtime, get_service
from hitl_app.ui import card_edit
from hitl_app.ui.cards.card_rows import CardRow


class CardEditMixin(rx.State, mixin=True):
    """Edit handlers shared into ``ReviewState`` (see the module docstring)."""

    def _editing(self, index: Any) -> tuple[CardRow, dict[str, Any], dict[str, Any]] | None:
        """``(a copy of the card, its draft, the proposed args)`` for a card whose editor is open."""
        card = self._card(index)  # type: ignore[attr-defined]
        review = self._review()  # type: ignore[attr-defined]
        if card is None or review is None or "edit" not in card.allowed or not card.editing:
            return None
        proposed = review.action_requests[index].args
        return card, card_edit.unproxied(self._drafts.get(index, proposed)), proposed  # type: ignore[attr-defined]

    def _store(self, card: CardRow, draft: dict[str, Any]) -> None:
        """Keep ``draft`` and send the changed card (the list is reassigned, as ``_set`` does)."""
        self._drafts[card.index] = draft  # type: ignore[attr-defined]
        cards = list(self.cards)  # type: ignore[has-type]
        cards[card.index] = card
        self.cards = cards

    def _put_previews(self, previews: list[EffectPreview | None], only: int | None = None) -> None:
        """Show ``previews`` (one per card, in order) on the cards, or only on card ``only``."""
        cards = list(self.cards)
        for card, preview in zip(cards, previews, strict=False):
            if only is None or card.index == only:
                shown = (preview.kind, preview.title, preview.body, preview.note) if preview else ("", "", "", "")
                card.preview_kind, card.preview_title, card.preview_body, card.preview_note = shown
        self.cards = cards

    async def _repreview(self, index: int) -> None:
        """Card ``index``'s effect preview again, computed on the server for its checked edit (the
        proposed call when it has none), under the same guards (``desk.previews``)."""
        review = self._review()  # type: ignore[attr-defined]
        if review is None or self._previews_for != review.interrupt_id:  # type: ignore[attr-defined]
            return  # the review's previews were never shown in this tab (``_fill_cards``)
        edited = {int(k): v for k, v in card_edit.unproxied(self._edited).items()}  # type: ignore[attr-defined]
        previews = await effect_previews(
            review, settings=get_runtime().settings, owner=self._previews_owner, args=edited, only={index}  # type: ignore[attr-defined]
        )
        self._put_previews(previews, only=index)

    def _open_editor(self, index: int) -> None:
        """Open ``index``'s editor on its draft (kept from before), its checked edit, or the proposal."""
        card = self.cards[index]
        review = self._review()  # type: ignore[attr-defined]
        proposed = review.action_requests[index].args if review else {}
        draft = card_edit.unproxied(self._drafts.get(index) or self._edited.get(index) or proposed)  # type: ignore[attr-defined]
        card.choice, card.editing, card.edit_error, card.error = "edit", True, "", ""
        card_edit.show_draft(card, draft, proposed, bump=True)
        self._store(card, draft)

    @rx.event
    async def set_edit_mode(self, index: int, mode: str) -> None:
        """Switch a card's editor between the form (``form``) and the JSON editor (``json``); the
        mode is kept with the open draft (a reload reopens the editor in it)."""
        if (found := self._editing(index)) is not None:
            card, draft, proposed = found
            card_edit.set_mode(card, mode)
            card_edit.show_draft(card, draft, proposed, bump=False, text=card.draft_json if card.json_note else None)
            self._store(card, draft)
            await self._keep(index)  # type: ignore[attr-defined]

    @rx.event
    async def set_field(self, index: int, path: str, value: Any, revision: Any = None) -> None:
        """A form input's new value (text on blur and once typing pauses; a select's option or a
        checkbox on change); the open draft is kept until Submit (``_keep``). ``revision``: the
        form's ``CardRow.revision`` the input was drawn with; a send from inputs since replaced (a
        typing pause's send that fires after the field was left and the draft changed elsewhere,
        e.g. in the JSON editor) changes nothing."""
        if (found := self._editing(index)) is not None:
            card, draft, proposed = found
            if revision is not None and revision != card.revision:
                return
            self._store(card, card_edit.set_field(card, draft, proposed, path, value))
            await self._keep(index)  # type: ignore[attr-defined]

    @rx.event
    async def add_item(self, index: int, path: str) -> None:
        """Append a blank item to the array at ``path``."""
        if (found := self._editing(index)) is not None:
            card, draft, proposed = found
            self._store(card, card_edit.change_items(card, draft, proposed, path, add=True))
            await self._keep(index)  # type: ignore[attr-defined]

    @rx.event
    async def remove_item(self, index: int, path: str) -> None:
        """Remove the array item at ``path``."""
        if (found := self._editing(index)) is not None:
            card, draft, proposed = found
            self._store(card, card_edit.change_items(card, draft, proposed, path, add=False))
            await self._keep(index)  # type: ignore[attr-defined]

    @rx.event
    def set_json(self, index: int, text: str) -> None:
        """The JSON editor's text (debounced, and on leaving it): the draft follows when it parses."""
        self._set_json(index, text)

    @rx.event
    async def keep_draft(self, index: int) -> None:
        """The JSON editor's typing paused ``KEEP_TEXT_MS`` (or it was left, after its last
        ``set_json``): the open draft, its text as typed, is kept until Submit (``_keep``)."""
        if self._editing(index) is not None:
            await self._keep(index)  # type: ignore[attr-defined]

    def _set_json(self, index: int, text: str) -> None:
        """``set_json``'s work, for the other handlers to call (to mypy an ``@rx.event`` is not a plain method)."""
        if (found := self._editing(index)) is not None:
            card, draft, proposed = found
            self._store(card, card_edit.set_json(card, draft, proposed, text))

    @rx.event
    async def finish_edit(self, index: int):
        """Handle "Check edit": the draft's arguments are checked against the tool's schema on the server;
        on success the card is decided as edit and the editor closes (the diff stays shown)."""
        if (refused := await self._refuse()) is not None:  # type: ignore[attr-defined]
            return refused
        if (found := self._editing(index)) is None:
            return None
        card, draft, _proposed = found
        args, problem = card_edit.finish_problem(card, draft)
        if args is None:
            self._set(index, edit_error=problem)  # type: ignore[attr-defined]
            return None
        self._check_and_close(index, args)
        await self._repreview(index)
        await self._keep(index)  # type: ignore[attr-defined]
        return None

    @rx.event
    async def save_edit(self, index: int, text: str):
        """Check JSON ``text`` as the card's edited arguments (as "Check edit" in JSON mode)."""
        if (refused := await self._refuse()) is not None:  # type: ignore[attr-defined]
            return refused
        self._save_edit(index, text)
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(self.cards):
            await self._repreview(index)
        await self._keep(index)  # type: ignore[attr-defined]
        return None

    def _save_edit(self, index: int, text: str) -> None:
        card = self._card(index)  # type: ignore[attr-defined]
        if card is None or not isinstance(text, str):
            return
        if "edit" not in card.allowed:
            self._set(index, error=f"Edit is not allowed for {card.tool_name}.")  # type: ignore[attr-defined]
            return
        if not card.editing:
            self._open_editor(index)
        try:
            args = parse_args_json(text)
        except ReviewError as exc:
            self._set(index, edit_error=exc.message, mode="json", draft_json=text)  # type: ignore[attr-defined]
            return
        self._set_json(index, text)
        self._check_and_close(index, args)

    def _check_and_close(self, index: int, args: dict[str, Any]) -> None:
        review = self._review()  # type: ignore[attr-defined]
        try:
            validate_edit_args(review, index, args, get_service().validators)
        except ReviewError as exc:
            self._edited.pop(index, None)  # type: ignore[attr-defined]
            self._set(index, choice="edit", editing=True, edit_error=exc.message)  # type: ignore[attr-defined]
            return
        self._edited[index] = args = card_edit.unproxied(args)  # type: ignore[attr-defined]
        self._show_checked(index, args)

    def _show_checked(self, index: int, args: dict[str, Any]) -> None:
        """Card ``index`` decided as edit with its checked ``args`` (a dict): editor closed, no error."""
        self._set(  # type: ignore[attr-defined]
            index, choice="edit", editing=False, edit_error="", error="",
            args_json=json.dumps(args, indent=2, ensure_ascii=False),
        )

    @rx.event
    async def cancel_edit(self, index: int):
        """Close the editor without deciding: the open draft is dropped. A checked edit from before
        it was opened stands again (its arguments, diff and preview; QA: Cancel on a reopened edit
        dropped the checked one too); without one the card is undecided again."""
        if (refused := await self._refuse()) is not None:  # type: ignore[attr-defined]
            return refused
        card = self._card(index)  # type: ignore[attr-defined]
        if card is None:
            return None
        self._drafts.pop(index, None)  # type: ignore[attr-defined]
        checked = self._edited.get(index)  # type: ignore[attr-defined]
        review = self._review()  # type: ignore[attr-defined]
        if checked is not None and review is not None:
            checked = card_edit.unproxied(checked)
            card_edit.show_draft(card, checked, review.action_requests[index].args, bump=True)  # its diff again
            self._show_checked(index, checked)
            self._set(index, json_note="")  # type: ignore[attr-defined]
        else:
            self._edited.pop(index, None)  # type: ignore[attr-defined]
            self._set(index, choice="", editing=False, edit_error="", diff=[], json_note="")  # type: ignore[attr-defined]
        await self._repreview(index)
        await self._keep(index)  # type: ignore[attr-defined]
        return None
