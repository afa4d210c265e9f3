"""The approval cards of the pending review, and the reviewer's choices on them.

``ReviewState`` is a sibling of ``ChatState`` (both children of ``SessionState``). It reaches the
chat through one helper, ``_chat``: to read the open thread and whether a run streams, and after a
submission to show the thread's new state. The rules of the draft (what is decided, what
"Approve the rest" fills, the decisions sent) are in ``hitl_app.review.draft``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import reflex as rx
from reflex.event import EventSpec

from hitl_app.auth import Principal
from hitl_app.review import MAX_MESSAGE_CHARS, ReviewError, draft
from hitl_app.review.types import PendingReview, decision_payload
from hitl_app.review.validate import args_json_schema, refusal_banner
from hitl_app.review.waiting import overtaken_note
from hitl_app.runtime import get_runtime, get_service
from hitl_app.threads.previews import effect_previews
from hitl_app.threads.service import ThreadError
from hitl_app.threads.views import CardStatus
from hitl_app.ui import card_edit
from hitl_app.ui.desk_state import DeskState
from hitl_app.ui.rows import CardRow, apply_status, card_rows
from hitl_app.ui.state.card_choices import CardChoiceMixin
from hitl_app.ui.state.card_editing import CardEditMixin
from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.session import SessionState, ask_identity

RECOVERABLE = ("choose", "submit", "approve_all")
"""Review actions replayed after the tab's server state is rebuilt (see ``ReviewState._lost``)."""

SAVED_NOTE = "Your decisions are saved. The agent goes on once every card is decided."
"""The panel's note after a submission that leaves cards to others."""

UNDONE_NOTE = "Undone: your decisions are back on the cards. Nothing happens until you press Submit."
"""The panel's note after this person undid their submission (``DeskState.undo``)."""


def inbox_reread() -> Any:
    """The tab's inbox re-read (the ``InboxState.reread`` handler, for a handler to return),
    sent after this person's own decision."""
    from hitl_app.ui.inbox_state import InboxState  # the inbox state imports this module

    return InboxState.reread


def _schemas(review: PendingReview | None) -> dict[str, Any]:
    """Tool name -> args JSON schema for the review's tools (from the service's validators)."""
    validators = get_service().validators if review else {}
    return {a.name: args_json_schema(validators.get(a.name)) for a in (review.action_requests if review else ())}


class ReviewState(CardEditMixin, CardChoiceMixin, SessionState):
    """The approval cards of the pending review, and the reviewer's choices on them (each kept on
    the server until Submit, ``CardChoiceMixin``, so a reload shows them again).

    ``raised_ms`` / ``server_ms``: when the review was raised and when the server sent it (epoch
    ms, server clock): the cards' "waiting 4 min" counts from them (``waited.js``), never from
    the browser's clock. ``_drafts``: card index -> the editor's draft; ``_edited``: card index ->
    the edited arguments that passed the server's check; ``_kept_last``: card index -> what this
    tab last kept of it on the server (``CardChoiceMixin._keep`` writes only a change). ``undo_open``: the review is complete
    and waits out its undo window (``ChatState._apply_view``).
    """

    cards: list[CardRow] = []
    interrupt_id: str = ""
    review_error: str = ""
    review_note: str = ""
    undo_open: bool = False
    raised_ms: int = 0
    server_ms: int = 0
    _review_json: str = ""
    _edited: dict[int, dict[str, Any]] = {}
    _drafts: dict[int, dict[str, Any]] = {}
    _kept_last: dict[int, str] = {}
    _previews_for: str = ""
    _previews_owner: str = ""

    def _lost(self, action: str, *args: Any) -> EventSpec | None:
        """When the tab's server state is gone (expired in Redis, or deleted), the way back.

        A fresh state has no browser id: the page's localStorage never reached it (Reflex sends it
        only when a page hydrates). The page still shows the card, so the click must not act on
        the empty state ("no such card", "nothing to submit"). Instead the browser is asked for
        its stored id and reviewer name, and ``recover`` reloads the thread from the URL and the
        checkpoint and replays ``action``. Returns None when the state is intact.
        """
        if self.browser_id:
            return None
        replay = json.dumps([action, *args], ensure_ascii=True)
        return ask_identity(ReviewState.recover, f", action: {replay}")

    @rx.event
    async def recover(self, stored: dict[str, Any]):
        """Rebuild a lost tab state (see ``_lost``): identity from the browser, the thread from the
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
        action = stored.get("action")
        if isinstance(action, list) and action and action[0] in RECOVERABLE:
            events.append(getattr(ReviewState, action[0])(*action[1:3]))
        return events

    async def _refuse(self):
        """None while signed in; else the tab is emptied (chat and cards) and the sign-in redirect
        is returned for the handler to return. Every handler here starts with it."""
        if await self.require_principal() is not None:
            return None
        return await (await self._chat())._signed_out()

    async def _chat(self) -> ChatState:
        """The tab's ``ChatState`` (the one way this state reaches the chat)."""
        return await self.get_state(ChatState)

    def _show(
        self, review: PendingReview | None, *, statuses: list[CardStatus] | None = None, error: str | None = None,
        raised_at: datetime | None = None, undo_open: bool = False, undo_by: str = "",
    ) -> None:
        """Replace the cards with ``review`` (or clear them). Private: not callable from the browser.

        ``statuses`` (``ThreadView.cards``) set each card's buttons and progress, also on the
        cards already shown. ``error`` (when given) then replaces the panel's message; otherwise
        a refused submission's message ("already decided") stays until a new review shows.
        ``raised_at``: when the review was raised (``ThreadView.raised_at``, server time).
        ``undo_open``: the review is complete and waits out its undo window, submitted by
        ``undo_by`` (``""``: this person): choices made here then say so.
        """
        if undo_open and not self.undo_open and undo_by and (note := overtaken_note(self.cards, undo_by)):
            self.review_error = note
        self.undo_open = undo_open
        new_id = review.interrupt_id if review else ""
        if raised_at is not None:
            self.raised_ms = int(raised_at.timestamp() * 1000)
            self.server_ms = int(datetime.now(UTC).timestamp() * 1000)
        if new_id != self.interrupt_id or (review is None) != (not self.cards):
            self.cards = card_rows(review, statuses, schemas=_schemas(review), risks=get_runtime().risks if review else {})
            self.interrupt_id = new_id
            self._review_json = review.model_dump_json() if review else ""
            self._edited, self._drafts, self._previews_for = {}, {}, ""
            self.review_note = ""
            if review is not None:
                self.review_error = ""
        elif statuses is not None:
            cards = list(self.cards)
            for card in cards:
                apply_status(card, statuses)
            self.cards = cards
        if error is not None:
            self.review_error = error

    async def _fill_cards(self, owner: str, person: Principal | None = None) -> None:
        """After ``_show``: the person's kept choices back on blank cards (``_restore``; ``person``:
        the signed-in person as the caller just read them, else read there), then each card's effect
        preview, once per review (``threads.previews``; ``owner``: the thread's owner, whose
        workspace the calls act on)."""
        await self._restore(person)
        review = self._review()
        if review is None or self._previews_for == review.interrupt_id:
            return
        self._previews_for, self._previews_owner = review.interrupt_id, owner
        edited = {int(k): v for k, v in card_edit.plain(self._edited).items()}  # a kept edit's preview shows the edit
        self._put_previews(await effect_previews(review, settings=get_runtime().settings, owner=owner, args=edited))

    def _show_error(self, message: str) -> None:
        """Show ``message`` on the review panel (e.g. why the last submission did not go through)."""
        self.review_error = message

    def _review(self) -> PendingReview | None:
        return PendingReview.model_validate_json(self._review_json) if self._review_json else None

    def _card(self, index: Any) -> CardRow | None:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.cards):
            self.review_error = "That card does not exist (the review may have changed); reload the page."
            return None
        return self.cards[index]

    def _set(self, index: int, **changes: Any) -> None:
        cards = list(self.cards)
        card = cards[index]
        for key, value in changes.items():
            setattr(card, key, value)
        cards[index] = card
        self.cards = cards  # reassigned: Reflex then sends the changed card

    @rx.var
    def decided_count(self) -> int:
        """How many cards are decided (earlier by anyone, or in this draft)."""
        return draft.decided_count(self.cards)

    @rx.var
    def summary(self) -> str:
        """The counter line, e.g. "2 of 3 decided · 1 waiting for another reviewer"."""
        return draft.summary(self.cards)

    @rx.var
    def all_decided(self) -> bool:
        """True when every card this person can still decide has a complete decision."""
        return draft.all_decided(self.cards)

    @rx.var
    def nothing_left(self) -> str:
        """Why Submit is not shown ("Waiting for another reviewer: ..."), "" while it is."""
        return draft.nothing_left_note(self.cards)

    @rx.var
    def composer_line(self) -> str:
        """The locked composer's line while the review is pending (``draft.composer_line``), or
        ``draft.UNDO_LINE`` while its undo window is open (the page counts the seconds down)."""
        return draft.UNDO_LINE if self.undo_open else draft.composer_line(self.cards)

    @rx.var
    def can_approve_all(self) -> bool:
        """Offered while some card is undecided and every undecided card allows approve."""
        return draft.offers_approve_rest(self.cards)

    @rx.var
    def approve_all_label(self) -> str:
        """Label "Approve all", or "Approve the rest" once some card is decided (those decisions stay)."""
        return draft.approve_rest_label(self.cards)

    @rx.var
    def submit_label(self) -> str:
        """E.g. "Submit 2 decisions": the cards this person can still decide ("" when none)."""
        return draft.submit_label(self.cards)

    @rx.event
    async def choose(self, index: int, kind: str):
        """Pick ``approve``, ``edit``, ``reject`` or ``respond`` on a card (only if allowed)."""
        if (refused := await self._refuse()) is not None:
            return refused
        if (lost := self._lost("choose", index, kind)) is not None:
            return lost
        card = self._card(index)
        if card is None:
            return
        if kind not in card.allowed:
            self._set(index, error=f"{str(kind).capitalize()} is not allowed for {card.tool_name}.")
            return
        self.review_error = ""
        if kind != "approve":
            (await self.get_state(DeskState))._drop_grant(index)  # a grant goes only with an approval
        if kind == "edit":
            self._open_editor(index)
        else:
            had_edit = self._edited.pop(index, None) is not None
            self._set(index, choice=kind, editing=False, edit_error="", error="")
            if had_edit:
                await self._repreview(index)  # back to the proposed call's preview
        await self._keep(index)

    @rx.event
    async def set_reason(self, index: int, text: str):
        """The optional reason of a reject."""
        if (refused := await self._refuse()) is not None:
            return refused
        if self._card(index) is None or not isinstance(text, str):
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self._set(index, error=f"The reason is too long (limit {MAX_MESSAGE_CHARS:,} characters).")
            return
        self._set(index, reason=text, error="")
        if self.cards[index].choice == "reject":
            await self._keep(index)

    @rx.event
    async def set_answer(self, index: int, text: str):
        """The reviewer's answer for a respond decision (required)."""
        if (refused := await self._refuse()) is not None:
            return refused
        if self._card(index) is None or not isinstance(text, str):
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self._set(index, error=f"The answer is too long (limit {MAX_MESSAGE_CHARS:,} characters).")
            return
        self._set(index, answer=text, choice="respond", error="")
        await self._keep(index)

    @rx.event
    async def reread(self):
        """The review signal said reviews changed (``InboxState.watch``, any worker): re-read the
        shown review's cards for the signed-in person, e.g. another reviewer's approval shows as
        "1 of 2 approvals: Rex". Nothing while no review is shown or a run streams."""
        if not self.interrupt_id or (person := await self.require_principal()) is None:
            return
        chat = await self.get_state(ChatState)
        if not chat.tid or chat.streaming:
            return
        try:
            view = await get_service().load(chat.tid, viewer=person)
        except ThreadError:  # no longer visible to this person: the next load says so
            return
        await chat._apply_view(view)

    @rx.event
    async def submit(self):
        """Send all decisions at once; the server checks them against the checkpoint first."""
        if (person := await self.require_principal()) is None:
            return await (await self._chat())._signed_out()
        return self._lost("submit") or await self._submit(person)

    @rx.event
    async def approve_all(self):
        """Approve every card the reviewer has not decided yet, then submit.

        Decisions already made (a reject with its reason, a checked edit, an answer) are kept; a
        card whose edit is still open is not overwritten: the reviewer is asked to finish it.
        """
        if (person := await self.require_principal()) is None:
            return await (await self._chat())._signed_out()
        if (lost := self._lost("approve_all")) is not None:
            return lost
        unfinished = draft.open_edit(self.cards, self._edited)
        if unfinished is not None:
            self._set(unfinished.index, error=draft.FINISH_EDIT)
            self.review_error = ""
            return
        for index in draft.approve_rest(self.cards):
            self._set(index, choice="approve", editing=False, edit_error="", error="")
        return await self._submit(person)

    async def _submit(self, person: Principal):
        """Submit the cards' decisions for ``person`` (signed in: this event's ``require_principal``)."""
        chat = await self._chat()
        if not self.cards:
            if not chat.streaming:  # a second click while the first submission runs says nothing
                self.review_error = "Nothing to submit: this review was already decided or is no longer pending."
            return
        if draft.nothing_left_note(self.cards):  # e.g. a double-click: the first click sent everything,
            return  # and the panel already says what the review waits for (no error: nothing went wrong)
        blank = draft.unanswered(self.cards)
        if blank is not None:
            self._set(blank.index, error=draft.unanswered_message(blank))
            self.review_error = ""
            return
        edited = card_edit.plain(self._edited)
        edited = {int(k): v for k, v in edited.items()}
        # others may decide, or some card is decided already (by others, or by a grant): send one
        # entry per card, None for a card this person leaves
        if any(card.shared or card.standing == draft.COMPLETE for card in self.cards):
            decisions: list[Any] = [d and decision_payload(d) for d in draft.to_entries(self.cards, edited)]
        else:
            decisions = [decision_payload(d) for d in draft.to_decisions(self.cards, edited)]
        service = get_service()
        try:
            grants = (await self.get_state(DeskState))._grants([card.choice for card in self.cards])
            run_id = await service.submit_review(chat.tid, self.interrupt_id, decisions, person=person, grants=grants)
        except ReviewError as exc:
            return await self._refused(chat, exc, person)
        except ThreadError as exc:
            self.review_error = exc.message
            return
        if run_id is None:  # drafted (other cards or approvals are still to come), or an undo window opened
            await self._consume(person)  # the kept choices went with the submission (before the cards are re-read)
            await self._reload(chat, person)
            self.review_error, self.review_note = "", "" if self.undo_open else SAVED_NOTE
            return inbox_reread()
        self._consume_later(person)  # the review is decided: its kept choices never show again
        self._show(None)
        chat._begin_stream()
        return [*chat._watch_if_needed(), inbox_reread()]

    async def _reload(self, chat: ChatState, person: Principal) -> None:
        """Show the thread as it is now after a submission; if it can no longer be read, the cards
        and the running badge go and the reason is shown (the tab never stays "Thinking...")."""
        try:
            await chat._apply_view(await get_service().load(chat.tid, viewer=person))
        except ThreadError as exc:
            self._show(None, error="")
            chat.streaming, chat.status, chat.load_error = False, "idle", exc.message

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
