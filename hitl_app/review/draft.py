"""The reviewer's draft of a review: which cards are decided, "Approve the rest", the decisions sent.

A draft is the list of approval cards of one pending review, one per action request, in order,
with what the reviewer picked so far (``choice``: "" while undecided, else ``approve``, ``edit``,
``reject`` or ``respond``), the open editor flag and its error, the reject reason and the respond
answer. Edited arguments that passed the schema check are kept beside the cards, by card index.
Nothing here talks to the server: the submitted decisions are still checked against the
checkpoint by ``review.validate.validate_submission``.

In a shared review (several people decide its cards) each card also carries the server's
``standing`` for the person viewing it (``standing``): ``complete`` (decided, by anyone),
``waiting`` (still open, but nothing is left for this person: someone else must decide it, or
their approval is in and it needs another reviewer's) or ``open`` (theirs to decide). The counter,
the status line and the Submit label read it, so a card decided earlier never counts as undecided
and Submit counts only the cards this person can still decide.

Each card's choice is also kept on the server until Submit (``hitl_app.store.choices``), so a
reload shows it again: ``kept_choice`` says what is kept of a card, ``restorable`` whether a kept
choice may be shown again on a card as the server now sees it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, get_args

from hitl_app.review.types import (
    MAX_MESSAGE_CHARS,
    AnyDecision,
    ApproveDecision,
    EditDecision,
    EditedAction,
    RejectDecision,
    RespondDecision,
)

Standing = Literal["open", "waiting", "complete"]
"""A card's standing for the viewer (see the module docstring)."""
OPEN, WAITING, COMPLETE = get_args(Standing)


class DraftCard(Protocol):
    """What the rules read of one approval card (the UI's ``CardRow`` has these fields)."""

    @property
    def index(self) -> int:
        """The card's position in the review (0-based, the action request's order)."""
    @property
    def tool_name(self) -> str:
        """The tool the action request would call."""
    @property
    def allowed(self) -> Sequence[str]:
        """The decision types the card's review config allows."""
    @property
    def choice(self) -> str:
        """The decision type picked so far ("" while undecided)."""
    @property
    def editing(self) -> bool:
        """Whether the card's argument editor is open."""
    @property
    def edit_error(self) -> str:
        """Why the last edit was refused ("" when it was accepted or none was made)."""
    @property
    def reason(self) -> str:
        """The reject reason typed so far."""
    @property
    def answer(self) -> str:
        """The answer typed so far (respond)."""
    @property
    def risk(self) -> str:
        """The policy's risk level ("high": never filled by "Approve the rest")."""
    @property
    def standing(self) -> str:
        """``open``, ``waiting`` or ``complete`` for the viewer (the server's word)."""


class WaitingCard(DraftCard, Protocol):
    """A card with what the composer line reads beside ``DraftCard`` (the UI's ``CardRow``)."""

    @property
    def remaining(self) -> int:
        """Approvals the card still needs (the server's count; 0 when complete)."""
    @property
    def my_decision_in(self) -> bool:
        """Whether this person's own decision is recorded on the card."""
    @property
    def others_who_decide(self) -> str:
        """Who besides the person who asked may decide it, in words ("" when nobody else)."""
    @property
    def asks_approval(self) -> bool:
        """Whether its review config allows approve or edit (False: a question, respond only)."""


def standing(*, complete: bool, allowed: Sequence[str], tool_allows: Sequence[str]) -> Standing:
    """A card's standing for one person, from the server's rights check.

    Args:
        complete: the card is decided (``rights.progress(card).complete``).
        allowed: the decision types the person may send now (``rights.may_decide``).
        tool_allows: the decision types the card's review config allows.

    Returns:
        ``COMPLETE``; ``WAITING`` when the person may send nothing, or only reject (withdraw) a
        card whose tool allows more: someone else must approve it (it needs a reviewer, or their
        own approval is in and it needs another); else ``OPEN``.
    """
    if complete:
        return COMPLETE
    if not set(allowed) - {"reject"} and set(tool_allows) - {"reject"}:
        return WAITING
    return OPEN


def is_mine(card: DraftCard) -> bool:
    """True when the card is this person's to decide in this submission: open to them, or a
    waiting card they still picked a decision for (withdrawing their approval with reject)."""
    return card.standing == OPEN or (card.standing == WAITING and card.choice != "")


def mine(cards: Sequence[DraftCard]) -> list[DraftCard]:
    """The cards ``is_mine`` keeps, in order (what Submit sends and counts)."""
    return [card for card in cards if is_mine(card)]


def is_decided(card: DraftCard) -> bool:
    """True when the card holds a decision that can be sent.

    Approve and reject are decided once picked (the reject reason is optional); an edit once its
    editor is closed without an error (its arguments passed the check); a respond once its answer
    has text other than spaces.
    """
    if card.choice == "edit":
        return not card.editing and not card.edit_error
    if card.choice == "respond":
        return bool(card.answer.strip())
    return card.choice in ("approve", "reject")


def decided_count(cards: Sequence[DraftCard]) -> int:
    """How many cards are decided (the "2 of 3 decided" counter): complete on the server (decided
    by anyone earlier) or decided in this draft."""
    return sum(1 for card in cards if card.standing == COMPLETE or (is_mine(card) and is_decided(card)))


def waiting_count(cards: Sequence[DraftCard]) -> int:
    """How many cards wait for someone else (``WAITING`` and not picked in this draft)."""
    return sum(1 for card in cards if card.standing == WAITING and not card.choice)


def all_decided(cards: Sequence[DraftCard]) -> bool:
    """True when this person has at least one card to decide and every such card is decided."""
    own = mine(cards)
    return bool(own) and all(is_decided(card) for card in own)


def offers_approve_rest(cards: Sequence[DraftCard]) -> bool:
    """Whether the "Approve all" / "Approve the rest" button is shown.

    Only while some card open to this person is still untouched (no choice) and every such card allows approve
    and is not high-risk (``risk == "high"``: decided one by one): the button never has to skip a
    card it cannot fill.
    """
    untouched = [card for card in cards if card.choice == "" and card.standing == OPEN]
    return bool(untouched) and all("approve" in card.allowed and card.risk != "high" for card in untouched)


def open_edit(cards: Sequence[DraftCard], edited: Mapping[int, Any]) -> DraftCard | None:
    """The first card whose edit is not finished (editor open, or no checked arguments), or None.

    "Approve the rest" stops at such a card instead of overwriting the reviewer's edit.
    """
    return next((c for c in cards if c.choice == "edit" and (c.editing or c.index not in edited)), None)


def approve_rest(cards: Sequence[DraftCard]) -> list[int]:
    """Indexes of the cards "Approve the rest" fills with approve: untouched cards open to this person that allow it.

    A card that already has a choice (a reject with its reason, an edit, an answer, an approve),
    and a high-risk card, is never in the list.
    """
    return [
        card.index for card in cards
        if card.choice == "" and card.standing == OPEN and "approve" in card.allowed and card.risk != "high"
    ]


def unanswered(cards: Sequence[DraftCard]) -> DraftCard | None:
    """The first card set to respond whose answer is still blank, or None."""
    return next((c for c in cards if c.choice == "respond" and not c.answer.strip()), None)


def to_entries(cards: Sequence[DraftCard], edited: Mapping[int, dict[str, Any]]) -> list[AnyDecision | None]:
    """One entry per card, in order: its decision (as ``to_decisions``), or None for a card left
    undecided (for someone else to decide, when the review is shared)."""
    return [next(iter(to_decisions([card], edited)), None) for card in cards]


def to_decisions(cards: Sequence[DraftCard], edited: Mapping[int, dict[str, Any]]) -> list[AnyDecision]:
    """The typed decisions of the decided cards, in card order.

    Args:
        cards: the draft, one card per action request.
        edited: card index -> the edited arguments that passed the schema check.

    Returns:
        One decision per decided card. An undecided card (or an edit without checked
        arguments) is left out, so a partial draft yields fewer decisions than cards and the
        server's count check refuses it with "k of n decided". A reject reason of only spaces
        is sent as no reason.
    """
    out: list[AnyDecision] = []
    for card in cards:
        if not is_decided(card):
            continue
        if card.choice == "edit":
            if card.index in edited:
                action = EditedAction(name=card.tool_name, args=dict(edited[card.index]))
                out.append(EditDecision(type="edit", edited_action=action))
        elif card.choice == "reject":
            out.append(RejectDecision(type="reject", message=card.reason.strip() or None,
                                      stop=bool(getattr(card, "reject_stop", False)),
                                      cancel=bool(getattr(card, "reject_cancel", False))))
        elif card.choice == "respond":
            out.append(RespondDecision(type="respond", message=card.answer))
        else:
            out.append(ApproveDecision(type="approve"))
    return out


_KEPT_FIELD = {"reject": ("reason", str), "respond": ("answer", str), "edit": ("args", dict)}
"""The field a kept choice carries besides ``choice``, and its type."""


def kept_choice(card: DraftCard, edited: Mapping[int, dict[str, Any]]) -> dict[str, Any] | None:
    """What the server keeps of ``card``'s choice until Submit, or None for nothing.

    Args:
        card: one card of the draft.
        edited: card index -> the edited arguments that passed the schema check.

    Returns:
        ``{"choice": "approve"}``, ``{"choice": "reject", "reason": str, "stop": bool, "cancel":
        bool}`` (reject and stop or tell; on a server's question, cancel or decline), ``{"choice":
        "respond", "answer": str}`` or ``{"choice": "edit", "args": dict}`` (only an edit whose
        arguments passed the check and whose editor is closed); None while undecided or editing.
    """
    if card.choice == "approve":
        return {"choice": "approve"}
    if card.choice == "reject":
        return {"choice": "reject", "reason": card.reason, "stop": bool(getattr(card, "reject_stop", False)),
                "cancel": bool(getattr(card, "reject_cancel", False))}
    if card.choice == "respond":
        return {"choice": "respond", "answer": card.answer}
    if card.choice == "edit" and is_decided(card) and card.index in edited:
        return {"choice": "edit", "args": dict(edited[card.index])}
    return None


def restorable(card: DraftCard, kept: Any) -> str:
    """The choice a kept one (``kept_choice``'s shape, read back) gives ``card`` again, or ``""``.

    Only a card without a choice in this tab and not complete takes one, and only a choice among
    the buttons the person has now (``card.allowed``: the rights may have changed since) with its
    field well formed (a text within ``MAX_MESSAGE_CHARS``, edited arguments as an object). An edit
    must still pass the tool's schema check (the caller's job) before it is shown.
    """
    if card.choice or card.standing == COMPLETE or not isinstance(kept, Mapping):
        return ""
    choice = kept.get("choice")
    if not isinstance(choice, str) or choice not in card.allowed:
        return ""
    if choice in _KEPT_FIELD:
        key, kind = _KEPT_FIELD[choice]
        value = kept.get(key)
        if not isinstance(value, kind) or (isinstance(value, str) and len(value) > MAX_MESSAGE_CHARS):
            return ""
    return choice
