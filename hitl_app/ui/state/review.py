"""The approval cards of the pending review, and the reviewer's choices on them.

``ReviewState`` is a sibling of ``ChatState`` (both children of ``SessionState``). It reads the
chat's public vars (the open thread, whether a run streams) and acts on it through the chat
module's doors (``show_view``, ``begin_stream``, ``watch_events``, ``signed_out``); the chat reaches
the cards through the ``ReviewPanel`` this module attaches (``attach_review_panel``, bottom). The
rules of the draft (what is decided, what "Approve the rest" fills, the decisions sent) are in
``hitl_app.review.draft``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.desk.previews import effect_previews
from hitl_app.review import MAX_MESSAGE_CHARS
from hitl_app.review.types import RESPOND, PendingReview
from hitl_app.review.validate import args_json_schema
from hitl_app.runtime import get_runtime, get_service
from hitl_app.threads.service import ThreadError
from hitl_app.threads.views import CardStatus, ThreadView
from hitl_app.ui import card_edit
from hitl_app.ui.cards.card_rows import CardRow, apply_status, card_rows
from hitl_app.ui.review_text import overtaken_note
from hitl_app.ui.state import desk
from hitl_app.ui.state.card_choices import CardChoiceMixin
from hitl_app.ui.state.card_editing import CardEditMixin
from hitl_app.ui.state.chat import (
    ChatState,
    ReviewPanel,
    attach_review_panel,
    show_view,
    signed_out,
)
from hitl_app.ui.state.desk import DeskState
from hitl_app.ui.state.desk_actions import DeskActionsMixin
from hitl_app.ui.state.inbox import add_announcement_handler
from hitl_app.ui.state.review_recovery import RecoveryMixin
from hitl_app.ui.state.review_submit import ReviewSubmitMixin
from hitl_app.ui.state.review_summary import ReviewSummaryMixin
from hitl_app.ui.state.session import SessionState


def _schemas(review: PendingReview | None) -> dict[str, Any]:
    """Tool name -> args JSON schema for the review's tools (from the service's validators)."""
    validators = get_service().validators if review else {}
    return {a.name: a.args_schema or args_json_schema(validators.get(a.name))
            for a in (review.action_requests if review else ())}


class ReviewState(
    ReviewSubmitMixin, CardEditMixin, CardChoiceMixin, DeskActionsMixin, RecoveryMixin, ReviewSummaryMixin, SessionState
):
    """The approval cards of the pending review, and the reviewer's choices on them (each kept on
    the server until Submit, ``CardChoiceMixin``, so a reload shows them again).

    ``raised_ms`` / ``server_ms``: when the review was raised and when the server sent it (epoch
    ms, server clock): the cards' "waiting 4 min" counts from them (``waited.js``), never from
    the browser's clock. ``_drafts``: card index -> the editor's draft; ``_edited``: card index ->
    the edited arguments that passed the server's check; ``_kept_last``: card index -> what this
    tab last kept of it on the server (``CardChoiceMixin._keep`` writes only a change). ``undo_open``: the review is complete
    and waits out its undo window (``chat.show_view``).
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
    _recovering: bool = False  # ``RecoveryMixin``: the next review action is a replay after a reload

    async def _refuse(self):
        """None while signed in; else the tab is emptied (chat and cards) and the sign-in redirect
        is returned for the handler to return. Every handler here starts with it."""
        if await self._require_principal() is not None:
            return None
        return await signed_out(await self._chat())

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
            self.cards = card_rows(review, statuses, schemas=_schemas(review), risks=get_runtime().risks if review else {},
                                    origins=get_runtime().origins if review else {})
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

    async def _fill_cards(self, owner: str, person: Principal | None = None, previews: bool = True) -> None:
        """After ``_show``: the person's kept choices back on blank cards (``_restore``; ``person``:
        the signed-in person as the caller just read them, else read there), then each card's effect
        preview (``owner``: the thread's owner, whose workspace the calls act on). ``previews`` False:
        both later, with ``_fill_later`` (after the cards' delta went out)."""
        self._previews_owner = owner
        if previews:
            await self._fill_later(person)

    async def _fill_later(self, person: Principal | None = None) -> None:
        """The second half of ``_fill_cards``: the kept choices (on the cards still blank: a pick made
        since the cards showed stays) and the effect previews."""
        await self._restore(person)
        await self._fill_previews()

    async def _fill_previews(self) -> None:
        """Each shown card's effect preview, once per review in this tab (``desk.previews``)."""
        review = self._review()
        if review is None or self._previews_for == review.interrupt_id:
            return
        self._previews_for, owner = review.interrupt_id, self._previews_owner
        edited = {int(k): v for k, v in card_edit.unproxied(self._edited).items()}  # a kept edit's preview shows the edit
        self._put_previews(await effect_previews(review, settings=get_runtime().settings, owner=owner, args=edited))

    def _show_error(self, message: str) -> None:
        """Show ``message`` on the review panel (e.g. why the last submission did not go through)."""
        self.review_error = message

    def _review(self) -> PendingReview | None:
        return PendingReview.model_validate_json(self._review_json) if self._review_json else None

    def _card(self, index: Any) -> CardRow | None:
        """The card at ``index``, or None: with no card shown (the review was decided, e.g. a reason
        box's late change after Submit) quietly, otherwise with an error on the panel."""
        if not self.cards:
            return None
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

    @rx.event
    async def choose(self, index: int, kind: str):
        """Pick ``approve``, ``edit``, ``reject`` or ``respond`` on a card (only if allowed); on an MCP
        server's question, ``reject`` is Decline and ``cancel`` is Cancel (a reject the server hears as
        ``cancel``)."""
        if (refused := await self._refuse()) is not None:
            return refused
        if (lost := self._recovery_if_lost("choose", index, kind)) is not None:
            return lost
        card = self._card(index)
        if card is None:
            return
        cancel = kind == "cancel" and card.question
        kind = "reject" if cancel else kind
        if kind not in card.allowed:
            self._set(index, error=f"{str(kind).capitalize()} is not allowed for {card.tool_name}.")
            return
        self.review_error = ""
        if kind != "approve":
            desk.drop_grant(await self.get_state(DeskState), index)  # a grant goes only with an approval
        if kind == "edit":
            self._open_editor(index)
        else:
            had_edit = self._edited.pop(index, None) is not None
            self._set(index, choice=kind, editing=False, edit_error="", error="", reject_cancel=cancel)
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
    async def set_reject_stop(self, index: int, stop: bool):
        """Reject and stop (True: the run ends, the model is told not to retry) or reject and tell."""
        if (refused := await self._refuse()) is not None:
            return refused
        if self._card(index) is None or not isinstance(stop, bool):
            return
        self._set(index, reject_stop=stop)
        if self.cards[index].choice == "reject":
            await self._keep(index)  # kept like the reason: a reload shows the same stop/tell

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
        self._set(index, answer=text, choice=RESPOND, error="")
        await self._keep(index)

    @rx.event
    async def reread(self):
        """The review signal said reviews changed (``InboxState.watch``, any worker): re-read the
        shown review's cards for the signed-in person, e.g. another reviewer's approval shows as
        "1 of 2 approvals: Rex". Nothing while no review is shown or a run streams."""
        if not self.interrupt_id or (person := await self._require_principal()) is None:
            return
        chat = await self.get_state(ChatState)
        if not chat.tid or chat.streaming:
            return
        try:
            view = await get_service().load(chat.tid, viewer=person)
        except ThreadError:  # no longer visible to this person: the next load says so
            return
        await show_view(chat, view)

# ---------------------------------------------------------------- the panel the chat shows views on
async def _clear_panel(chat: ChatState, error: str | None) -> None:
    panel = await chat.get_state(ReviewState)
    panel._show(None, error=error)


async def _show_view_on_panel(
    chat: ChatState, view: ThreadView, viewer: Principal | None, error: str | None, previews: bool
) -> None:
    panel, desk_view = await chat.get_state(ReviewState), view.desk
    waiting = desk_view is not None and desk_view.undo_until is not None  # an undo window: cards stay decided
    panel._show(view.pending, statuses=None if waiting else view.cards, error=error, undo_open=waiting,
                raised_at=desk_view.requested_at if desk_view else None, undo_by=desk_view.overtaken_by if desk_view else "")
    if view.pending is not None:
        await panel._fill_cards(view.owner, viewer, previews)


async def _fill_previews_on_panel(chat: ChatState, viewer: Principal | None) -> None:
    panel = await chat.get_state(ReviewState)
    await panel._fill_later(viewer)


async def _show_error_on_panel(chat: ChatState, message: str) -> None:
    panel = await chat.get_state(ReviewState)
    panel._show_error(message)


attach_review_panel(ReviewPanel(clear=_clear_panel, show_view=_show_view_on_panel, show_error=_show_error_on_panel,
                                fill_previews=_fill_previews_on_panel))
add_announcement_handler(ReviewState.reread)
