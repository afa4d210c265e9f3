"""The reviewer's draft of a review: which cards are decided, "Approve the rest", the decisions sent.

A draft is the list of approval cards of one pending review, one per action request, in order,
with what the reviewer picked so far (``choice``: "" while undecided, else ``approve``, ``edit``,
``reject`` or ``respond``), the open editor flag and its error, the reject reason and the respond
answer. Edited arguments that passed the schema check are kept beside the cards, by card index.
Nothing here talks to the server: the submitted decisions are still checked against the
checkpoint by ``review.validate.validate_submission``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from hitl_app.review.types import (
    AnyDecision,
    ApproveDecision,
    EditDecision,
    EditedAction,
    RejectDecision,
    RespondDecision,
)

FINISH_EDIT = "Finish this edit (Check edit) or cancel it before approving the rest."
"""Shown on a card whose edit is still open when the reviewer presses "Approve the rest"."""


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
    """How many cards are decided (the "2 of 3 decided" counter)."""
    return sum(1 for card in cards if is_decided(card))


def all_decided(cards: Sequence[DraftCard]) -> bool:
    """True when there is at least one card and every card is decided."""
    return bool(cards) and all(is_decided(card) for card in cards)


def offers_approve_rest(cards: Sequence[DraftCard]) -> bool:
    """Whether the "Approve all" / "Approve the rest" button is shown.

    Only while some card is still untouched (no choice) and every untouched card allows approve
    and is not high-risk (``risk == "high"``: decided one by one): the button never has to skip a
    card it cannot fill.
    """
    untouched = [card for card in cards if card.choice == ""]
    return bool(untouched) and all("approve" in card.allowed and card.risk != "high" for card in untouched)


def approve_rest_label(cards: Sequence[DraftCard]) -> str:
    """Return "Approve all" while nothing was picked yet, else "Approve the rest" (picked decisions stay)."""
    return "Approve the rest" if any(card.choice for card in cards) else "Approve all"


def open_edit(cards: Sequence[DraftCard], edited: Mapping[int, Any]) -> DraftCard | None:
    """The first card whose edit is not finished (editor open, or no checked arguments), or None.

    "Approve the rest" stops at such a card instead of overwriting the reviewer's edit.
    """
    return next((c for c in cards if c.choice == "edit" and (c.editing or c.index not in edited)), None)


def approve_rest(cards: Sequence[DraftCard]) -> list[int]:
    """Indexes of the cards "Approve the rest" fills with approve: untouched cards that allow it.

    A card that already has a choice (a reject with its reason, an edit, an answer, an approve),
    and a high-risk card, is never in the list.
    """
    return [card.index for card in cards if card.choice == "" and "approve" in card.allowed and card.risk != "high"]


def unanswered(cards: Sequence[DraftCard]) -> DraftCard | None:
    """The first card set to respond whose answer is still blank, or None."""
    return next((c for c in cards if c.choice == "respond" and not c.answer.strip()), None)


def unanswered_message(card: DraftCard) -> str:
    """What the card shows when it is submitted without an answer."""
    return f"Write an answer for {card.tool_name} before submitting."


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
            out.append(RejectDecision(type="reject", message=card.reason.strip() or None))
        elif card.choice == "respond":
            out.append(RespondDecision(type="respond", message=card.answer))
        else:
            out.append(ApproveDecision(type="approve"))
    return out
