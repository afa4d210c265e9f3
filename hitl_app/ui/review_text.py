"""The review panel's sentences: the counter line, Submit's label, the notes and the composer line.

Each is a pure function of the cards a tab shows (``ui.rows.CardRow``, read through
``review.draft.DraftCard``), built on the draft's rules in ``hitl_app.review.draft`` (what is
decided, whose a card is, what waits for someone else). They live in the UI, not in the pure
``review/`` room: they are what a tab says, not what the review decides.
"""

# Tested by: tests/unit/review/test_draft.py, tests/integration/ui/test_review_labels_ws.py

from __future__ import annotations

from collections.abc import Sequence

from hitl_app.review.draft import (
    OPEN,
    WAITING,
    DraftCard,
    WaitingCard,
    decided_count,
    is_decided,
    mine,
    waiting_count,
)
from hitl_app.review.types import EDIT, REJECT, RESPOND
from hitl_app.review.validate import ReviewError, already_decided_text

WAITING_NOTE = "Waiting for a reviewer: nothing is left for you to decide here."
"""Shown instead of Submit when every open card waits for someone else (``waiting_note`` says
"another reviewer" instead once this person's own approval is on a waiting card)."""


WITHDRAW_NOTE = "Waiting for a reviewer. You can still stop a waiting card with its Reject button."
"""``WAITING_NOTE`` when a waiting card still offers this person Reject."""


UNDO_LINE = "Every card is decided: the agent goes on when the undo window ends, unless the submission is undone."
"""The composer line while a completed review waits out its undo window (the page shows the
seconds left: ``components.desk.undo_line``)."""


FINISH_EDIT = "Finish this edit (Check edit) or cancel it before approving the rest."
"""Shown on a card whose edit is still open when the reviewer presses "Approve the rest"."""


NOT_CHECKED = "editing: not checked"
"""The chip of a card whose editor is open and not checked yet: not decided yet."""


CHECK_FAILED = "edit: check failed"
"""The chip of a card whose last "Check edit" failed (its error shows under the editor): not decided."""


NO_ANSWER = "respond: no answer yet"
"""The chip of a card set to respond before its answer has text: not decided yet."""


def choice_chip(card: DraftCard) -> tuple[str, bool]:
    """The small label of a card's pick and whether it counts as decided (``is_decided``, as the
    counter and Submit count it): ``("approve", True)``, ``("edit", True)`` once "Check edit"
    passed, ``(NOT_CHECKED, False)`` before, ``(CHECK_FAILED, False)`` after a failed check,
    ``(NO_ANSWER, False)``; ``("", False)`` with no pick. On an MCP server's question the decided
    chip names the answer the server hears: ``accept``, ``decline`` or ``cancel``."""
    if not card.choice:
        return "", False
    if is_decided(card):
        if getattr(card, "question", False):  # an MCP server's question: the answer the server hears
            answer: dict[str, str] = {EDIT: "accept",
                                      "reject": "cancel" if getattr(card, "reject_cancel", False) else "decline"}
            return answer.get(str(card.choice), str(card.choice)), True
        return card.choice, True
    if card.choice == EDIT and card.edit_error:
        return CHECK_FAILED, False
    unfinished: dict[str, str] = {EDIT: NOT_CHECKED, RESPOND: NO_ANSWER}
    return unfinished.get(card.choice, card.choice), False


def waiting_for(cards: Sequence[DraftCard]) -> str:
    """Whom the waiting cards wait for, in words: ``"another reviewer"`` once this person's own
    decision is on one of them (their approval is in, a second is needed), else whom the cards
    name (``others_who_decide``: ``"a reviewer"``, or the name of the person who asked, ``"Max"``), joined
    with "or"; ``"a reviewer"`` when they name nobody."""
    waiting = [c for c in cards if c.standing == WAITING]
    if any(getattr(c, "my_decision_in", False) for c in waiting):
        return "another reviewer"
    return " or ".join(dict.fromkeys(o for c in waiting if (o := getattr(c, "others_who_decide", "")))) or "a reviewer"


def summary(cards: Sequence[DraftCard]) -> str:
    """The review's counter line: ``"2 of 3 decided"``, plus ``" · 1 waiting for a reviewer"``
    when some cards wait for someone else (``waiting_for``)."""
    waiting = waiting_count(cards)
    line = f"{decided_count(cards)} of {len(cards)} decided"
    return line + (f" · {waiting} waiting for {waiting_for(cards)}" if waiting else "")


def submit_label(cards: Sequence[DraftCard]) -> str:
    """``"Submit 2 decisions"``: the decisions this person made so far on the cards they can
    still decide (``"Submit"`` before the first); ``""`` when there are no such cards (the button
    is hidden and ``nothing_left_note`` shown). The button is enabled only once ``all_decided``:
    a submission must decide every card that is theirs (the server checks it too)."""
    own = mine(cards)
    n = sum(1 for card in own if is_decided(card))
    if not own:
        return ""
    return f"Submit {n} decision{'s' if n != 1 else ''}" if n else "Submit"


def nothing_left_note(cards: Sequence[DraftCard]) -> str:
    """Why there is no Submit button: ``WAITING_NOTE`` when cards wait for someone else, a line
    when every card is decided, ``""`` while this person still has a card to decide. A waiting
    card with a Reject button gets ``WITHDRAW_NOTE``."""
    if not cards or mine(cards):
        return ""
    if waiting_count(cards):
        note = WITHDRAW_NOTE if any(REJECT in c.allowed for c in cards if c.standing == WAITING) else WAITING_NOTE
        return note.replace("a reviewer", waiting_for(cards), 1)
    return "Every card is decided; the agent goes on."


DECIDE_ALL = "The agent is waiting for your review above: decide every card, then submit."
"""The composer line while every open card is this person's to decide."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def composer_line(cards: Sequence[WaitingCard]) -> str:
    """The line above the locked composer while a review is pending, true for this person.

    ``DECIDE_ALL`` while every open card is theirs; ``"Decide your 1 card above, then submit;
    1 more waits for a reviewer."`` when some wait for others; once nothing is left for them,
    ``"Your decisions are in; waiting for 1 more approval from a reviewer."`` (their decision is in on
    some card; "answer" when only questions wait, "decision" for a mix) or ``"Waiting for a reviewer to
    decide (2 approvals still needed); nothing here is yours to approve."``; ``""`` without cards.
    """
    if not cards:
        return ""
    waiting = [c for c in cards if c.standing == WAITING and not c.choice]
    who = " or ".join(dict.fromkeys(c.others_who_decide for c in waiting if c.others_who_decide)) or waiting_for(cards)
    own = len(mine(cards))
    if own:
        if not waiting:
            return DECIDE_ALL
        wait = "waits" if len(waiting) == 1 else "wait"
        return f"Decide your {_plural(own, 'card')} above, then submit; {len(waiting)} more {wait} for {who}."
    if not waiting:
        return "Every card is decided; the agent goes on."
    left, asks = sum(max(1, c.remaining) for c in waiting), {c.asks_approval for c in waiting}
    unit = "approval" if asks == {True} else "answer" if asks == {False} else "decision"
    if any(c.my_decision_in for c in cards):
        return f"Your decisions are in; waiting for {_plural(left, 'more ' + unit)} from {who}."
    verb = "approve" if unit == "approval" else "decide"
    return f"Waiting for {who} to decide ({_plural(left, unit)} still needed); nothing here is yours to {verb}."


def approve_rest_label(cards: Sequence[DraftCard]) -> str:
    """Return "Approve all" while no card is decided yet, else "Approve the rest" (decisions made stay).

    An edit still open or cancelled, or an answer not written yet, is not a decision (QA C10: after
    Edit then Cancel edit the button read "Approve the rest" with 0 of 2 decided)."""
    return "Approve the rest" if any(is_decided(card) for card in cards) else "Approve all"


def unanswered_message(card: DraftCard) -> str:
    """What the card shows when it is submitted without an answer."""
    return f"Write an answer for {card.tool_name} before submitting."



def overtaken_note(cards: Sequence[DraftCard], by: str) -> str:
    """What a tab says when ``by``'s submission decided the review while this person had choices
    on cards still open to them (not sent); ``""`` when none (their own submitted cards do not count)."""
    if not any(card.choice and card.standing == OPEN for card in cards):
        return ""
    return f"{by or 'Someone else'} decided this review first; your choices were not sent."


def refusal_banner(exc: ReviewError) -> str:
    """What the review panel says of a refused submission: ``exc.message``, except nothing for
    one's own earlier submission (a double-clicked Submit whose second click landed in the undo
    window the first opened: the panel already shows that submission, nothing went wrong)."""
    return "" if exc.code == "already_decided" and exc.message == already_decided_text("You") else exc.message
