"""The cards of a pending review at the server: each with the decisions drafted on it, what a
person may see and decide, and what each card shows them.

The rules themselves are ``hitl_app.review.rights`` (pure); here they meet the stored drafts
(``hitl_app.store.drafts``). Which drafts count is ``hitl_app.desk.requalify``'s to say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hitl_app.review import draft
from hitl_app.review.rights import (
    DEFAULT_RIGHTS,
    Card,
    Person,
    RecordedDecision,
    ToolRights,
    may_decide,
    progress,
    who_else_may_decide,
    who_may_decide,
)
from hitl_app.review.types import DECISION_STYLES, PendingReview
from hitl_app.store.tables import DecisionDraft
from hitl_app.threads.views import CardStatus


@dataclass(frozen=True)
class BrowserPerson:
    """A person known only by a browser id (no accounts yet): a member who owns their threads.

    ``account_id`` is the browser id (the threads' owner string); ``display_name`` plain text.
    """

    account_id: str
    display_name: str = "anonymous"
    role: str = "member"
    email: str = ""


def is_admin(person: Person) -> bool:
    """True for the admin role."""
    return str(person.role) == "admin"


def cards_for(
    review: PendingReview, owner_id: str, rights: Mapping[str, ToolRights], drafts: Sequence[DecisionDraft]
) -> list[Card]:
    """One ``Card`` per action request of ``review``, with the decisions drafted on it (in order).

    ``owner_id`` is the thread's owner (the person who asked); a tool ``rights`` does not name
    has ``DEFAULT_RIGHTS`` (the owner decides alone).
    """
    cards = []
    for index, (action, config) in enumerate(zip(review.action_requests, review.review_configs, strict=True)):
        recorded = [
            RecordedDecision(d.account_id, d.display_name, d.decision_type, d.role or "")
            for d in drafts
            if d.action_index == index
        ]
        cards.append(
            Card.for_request(
                {"name": action.name, "args": action.args}, config.allowed_decisions, owner_id=owner_id,
                rights=rights.get(action.name, DEFAULT_RIGHTS), recorded=recorded,
            )
        )
    return cards


def may_view(cards: Sequence[Card], person: Person, owner_id: str) -> bool:
    """The owner, an admin, or someone who may decide a pending card may open the thread."""
    if owner_id and str(person.account_id) == owner_id:
        return True
    return is_admin(person) or any(may_decide(card, person).may_decide for card in cards)


def card_statuses(
    cards: Sequence[Card], person: Person, dropped: Mapping[int, Sequence[str]] | None = None, *, owner_name: str = ""
) -> list[CardStatus]:
    """What each card shows ``person``: progress, who decided, the buttons they may use and why not.

    ``dropped``: card index -> why earlier approvals no longer count (``requalify``), added to
    the card's progress line. ``owner_name``: the thread owner's display name, whom a card only
    they may decide waits for (``CardStatus.others``)."""
    out = []
    for index, card in enumerate(cards):
        state, rights = progress(card), may_decide(card, person)
        why = "; ".join((dropped or {}).get(index, ()))
        out.append(
            CardStatus(
                index=index,
                progress=state.text + (f" ({why})" if why else ""),
                show_progress=state.needed > 1 or bool(card.recorded) or bool(why),
                complete=state.complete,
                needed=state.needed,
                deciders=[f"{r.display_name} {_past(r.type)}" for r in card.recorded],
                allowed=list(rights.allowed),
                note=rights.note,
                who=who_may_decide(card.rule),
                standing=draft.standing(complete=state.complete, allowed=rights.allowed, tool_allows=card.allowed_decisions),
                remaining=state.remaining,
                yours=any(r.account_id == str(person.account_id) for r in card.recorded),
                others=who_else_may_decide(card.rule) or owner_name,
            )
        )
    return out


def _past(decision_type: str) -> str:
    style = DECISION_STYLES.get(decision_type)  # type: ignore[call-overload]
    return style.past if style is not None else decision_type
