"""The approval cards' choices kept on the server until Submit, and shown again after a reload.

Also each card's chip (``chips``: the pick in words, and whether Submit counts it as decided).

A Reflex state mixin of ``ReviewState`` (which provides ``cards``, ``interrupt_id``, ``_chat``,
``_review``, ``_set``, ``_store``, ``_edited``, ``_drafts`` and ``_kept_last``). Each handler that
changes a card's choice calls ``_keep`` (a click, a reason or answer when its field changes, a
checked edit, the "always allow" scope beside an approval, an open editor's draft when the JSON
editor's typing pauses or a form field is left); ``_restore`` puts the person's kept choices back
on blank cards when the tab shows the review (``hitl_app.desk.choices``), an approval with its
grant scope (``DeskState`` shows it if the server still offers it) and an open edit as an open
editor with its draft. The rules are ``review.draft.kept_choice`` / ``restorable`` and
``review.kept`` (pure). Nothing here decides anything: Submit sends the choices the usual way and
the server checks them then. A write is made only when what is kept changed (``_kept_last``).
"""

# Tested by: tests/integration/ui/test_card_choices_ws.py, tests/e2e/test_kept_choices.py

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.review import ReviewError, draft, validate_edit_args
from hitl_app.review import kept as kept_rules
from hitl_app.review.rights import Person
from hitl_app.review.types import RESPOND, PendingReview
from hitl_app.runtime import get_choices, get_service
from hitl_app.ui import card_edit, review_text
from hitl_app.ui.cards.card_rows import CardRow
from hitl_app.ui.state import desk
from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.desk import DeskState

_CONSUMING: set[asyncio.Future[None]] = set()
"""Kept choices being consumed after a resumed submission (held here so they are not collected)."""


class CardChoiceMixin(rx.State, mixin=True):
    """Keeping and restoring the cards' choices (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ReviewState (and its SessionState base)
        cards: list[CardRow]
        interrupt_id: str
        undo_open: bool
        _edited: dict[int, dict[str, Any]]
        _drafts: dict[int, dict[str, Any]]
        _kept_last: dict[int, str]

        async def _chat(self) -> ChatState: ...
        async def _require_principal(self) -> Principal | None:
            """The signed-in account, or None (``SessionState._require_principal``)."""
        def _review(self) -> PendingReview | None: ...
        def _set(self, index: int, **changes: Any) -> None: ...
        def _store(self, card: CardRow, draft: dict[str, Any]) -> None: ...

    @rx.var
    def chips(self) -> list[list[str]]:
        """Each card's chip as ``[text, "done" | "open"]`` (``review_text.choice_chip``, by card index):
        ``["edit", "done"]`` once "Check edit" passed, ``["editing: not checked", "open"]`` while
        the editor is open; ``["", "open"]`` with no pick. "done" is what Submit counts as decided."""
        return [[text, "done" if done else "open"] for text, done in map(review_text.choice_chip, self.cards)]

    async def _keep(self, index: int) -> None:
        """Keep card ``index``'s choice as it stands in the tab now: the choice, an approval's
        grant scope, an open editor's draft (no choice: what was kept goes). Nothing is written
        when that is what this tab kept last, or while the review waits out its undo window."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.cards):
            return
        if not self.interrupt_id or self.undo_open:
            return
        chat = await self._chat()
        person = await self._require_principal()
        if person is None or not chat.tid:
            return
        kept = await self._kept_now(index)
        mark = f"{self.interrupt_id}\n{json.dumps(kept, sort_keys=True, default=str)}"
        if self._kept_last.get(index) == mark:
            return
        if await get_choices().save(chat.tid, self.interrupt_id, index, person, kept):
            self._kept_last[index] = mark

    async def _kept_now(self, index: int) -> dict[str, Any] | None:
        """What is kept of card ``index`` now (``draft.kept_choice``, else ``kept.open_edit``,
        with the approval's grant scope from ``DeskState``)."""
        card = self.cards[index]
        edited = {int(k): v for k, v in card_edit.unproxied(self._edited).items()}  # unproxied() makes the keys text
        kept = draft.kept_choice(card, edited)
        if kept is None and card.choice == "edit" and card.editing:
            review = self._review()
            proposed = review.action_requests[index].args if review else {}
            kept = kept_rules.open_edit(card, card_edit.unproxied(self._drafts.get(index, proposed)), card.draft_json, card.mode)
        grants = (await self.get_state(DeskState)).grant_choice
        return kept_rules.with_grant(kept, grants[index] if index < len(grants) else "")

    async def _consume(self, person: Person) -> None:
        """Submit took this person's choices on the shown review: they are no longer kept."""
        if self.interrupt_id:
            self._kept_last = {}
            await get_choices().consume(self.interrupt_id, person)

    def _consume_later(self, person: Person) -> None:
        """``_consume`` as its own task: after a submission that resumed the run (the review is
        decided, so nothing shows its kept choices again), the handler lets go of the tab without
        waiting for this write, and the resumed text is not held behind it. Failures are logged."""
        if self.interrupt_id:
            self._kept_last = {}
            task = asyncio.ensure_future(get_choices().consume(self.interrupt_id, person))
            _CONSUMING.add(task)
            task.add_done_callback(_CONSUMING.discard)

    async def _restore(self, person: Person | None = None) -> None:
        """Show the person's kept choices again on the cards that have none in this tab (a reload,
        another tab of the same account, a restart; after an Undo). A choice the rights no longer
        allow, on a card decided meanwhile, or an edit that fails the tool's check is left out;
        nothing comes back on a review waiting out its undo window (it is decided). An approval's
        grant scope goes to ``DeskState``, which shows it if the server still offers it; an open
        edit comes back open, with its draft. ``person``: the signed-in person as the caller read
        them for the view just shown (the session is then not read again), else read here."""
        if not self.interrupt_id or not self.cards or self.undo_open:
            return
        person = person if person is not None else await self._require_principal()
        if person is None:
            return
        kept = await get_choices().read(self.interrupt_id, person)
        grants: dict[int, str] = {}
        for index, value in sorted(kept.items()):
            if not 0 <= index < len(self.cards):
                continue
            choice = draft.restorable(self.cards[index], value)
            if choice == "edit":
                self._restore_edit(index, card_edit.unproxied(value["args"]))
            elif choice:
                self._set(
                    index, choice=choice, reason=value.get("reason", "") if choice == "reject" else "",
                    answer=value.get("answer", "") if choice == RESPOND else "", error="",
                )
                if choice == "reject" and isinstance(value.get("stop"), bool):
                    self._set(index, reject_stop=value["stop"])  # the reviewer's stop/tell over the policy's default
                if choice == "reject" and isinstance(value.get("cancel"), bool):
                    self._set(index, reject_cancel=value["cancel"] and self.cards[index].question)
                if choice == "approve" and isinstance(value.get("grant"), str):
                    grants[index] = value["grant"]
            elif (opened := kept_rules.restorable_open_edit(self.cards[index], value)) is not None:
                self._restore_open_edit(index, opened)
        desk.keep_grants(await self.get_state(DeskState), grants)

    def _restore_open_edit(self, index: int, opened: kept_rules.OpenEdit) -> None:
        """A kept open edit: the editor open again on its draft (and the JSON text as typed), not
        checked (the person still presses "Check edit")."""
        review = self._review()
        if review is None:
            return
        proposed = review.action_requests[index].args
        card = self.cards[index]
        card.choice, card.editing, card.edit_error, card.error = "edit", True, "", ""
        card_edit.set_mode(card, opened.mode)
        args = card_edit.unproxied(opened.draft)
        try:
            card_edit.show_draft(card, args, proposed, bump=True)
        except (TypeError, ValueError, KeyError, AttributeError):  # a draft the form cannot show: the JSON editor can
            card.mode, card.form = "json", []
            card.draft_json = card_edit.pretty(args)
        if card.mode == "json" and opened.text:
            args = card_edit.set_json(card, args, proposed, opened.text)
        self._store(card, args)

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
        card_edit.show_draft(card, args, review.action_requests[index].args, bump=True)
        card.choice, card.editing, card.edit_error, card.error = "edit", False, "", ""
        card.args_json = json.dumps(args, indent=2, ensure_ascii=False)
        self._edited[index] = args
        self._store(card, args)
