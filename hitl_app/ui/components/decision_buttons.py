"""A card's decision buttons: one per decision its review config allows, or an MCP question's three answers.

Every button's label, icon, colour and shortcut comes from the decision vocabulary
(``DECISION_STYLES``, ``review/types.py``); a click is ``ReviewState.choose(index, kind)``. A
button says whether it is the card's pick (``aria-pressed``), its key (``aria-keyshortcuts``) and
the field its shortcut focuses next (``data-focus``, read by ``assets/js/review_keys.js``).
"""

# Tested by: tests/e2e/test_review_keys.py, tests/e2e/test_mcp_e2e.py

from __future__ import annotations

import reflex as rx

from hitl_app.review.types import DECISION_STYLES, DECISION_TYPES, EDIT, REJECT, RESPOND, DecisionType
from hitl_app.ui.cards.card_rows import CardRow
from hitl_app.ui.state.review import ReviewState

_FOCUS_AFTER: dict[DecisionType, str] = {
    REJECT: "[data-testid=reject-message]",
    RESPOND: "[data-testid=respond-message]",
    EDIT: "[data-testid=card-editor] input, [data-testid=card-editor] select, [data-testid=card-editor] textarea, "
          "[data-testid=card-editor] .cm-content",
}
"""The field a decision's keyboard shortcut moves the focus to once the card shows it (read by
``assets/js/review_keys.js`` from the button's ``data-focus``)."""

DECISION_KEYS = "".join(style.key for style in DECISION_STYLES.values())
"""The decision shortcuts, one letter each (``"aers"``), handed to the keyboard script on the
review panel's ``data-decision-keys``."""

_QUESTION_ANSWERS = (
    ("edit", "Accept", "check", "green", "Answer with the form's values"),
    ("reject", "Decline", "x", "red", "Say no: the server hears 'decline'"),
    ("cancel", "Cancel", "circle-slash", "gray", "Dismiss without answering: the server hears 'cancel'"),
)
"""An MCP server's question: the spec's three answers (kind for ``ReviewState.choose``, label, icon,
colour, tooltip)."""


def decision_buttons(card: CardRow) -> rx.Component:
    """The card's row of buttons: Accept / Decline / Cancel on a server's question
    (``card.question``), else one button per decision type the card allows (``data-testid="decision-<kind>"``)."""
    return rx.cond(
        card.question,
        rx.hstack(*[_question_button(card, *answer) for answer in _QUESTION_ANSWERS], spacing="2", wrap="wrap"),
        rx.hstack(*[_decision_button(card, kind) for kind in DECISION_TYPES], spacing="2", wrap="wrap"),
    )


def _decision_button(card: CardRow, kind: DecisionType) -> rx.Component:
    chosen, style = card.choice == kind, DECISION_STYLES[kind]
    return rx.cond(
        card.allowed.contains(kind),
        rx.button(
            rx.icon(style.icon, size=14),
            style.label,
            on_click=ReviewState.choose(card.index, kind),
            color_scheme=style.color,
            variant=rx.cond(chosen, "solid", "surface"),
            size="2",
            data_testid=f"decision-{kind}",
            title=f"{style.label} ({style.key.upper()})",
            custom_attrs={"aria-pressed": rx.cond(chosen, "true", "false"), "aria-keyshortcuts": style.key,
                          "data-focus": _FOCUS_AFTER.get(kind, "")},
        ),
    )


def _question_button(card: CardRow, kind: str, label: str, icon: str, color: str, hint: str) -> rx.Component:
    """One of Accept / Decline / Cancel on a server's question (``data-testid="question-<kind>"``)."""
    chosen = rx.cond(kind == "cancel", (card.choice == REJECT) & card.reject_cancel,
                     rx.cond(kind == REJECT, (card.choice == REJECT) & ~card.reject_cancel, card.choice == kind))
    return rx.button(
        rx.icon(icon, size=14), label,
        on_click=ReviewState.choose(card.index, kind),
        color_scheme=color, variant=rx.cond(chosen, "solid", "surface"), size="2",
        data_testid=f"question-{kind}", title=hint,
        custom_attrs={"aria-pressed": rx.cond(chosen, "true", "false")},
    )
