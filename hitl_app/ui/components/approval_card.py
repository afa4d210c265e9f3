"""Approval cards: one per action request, with only the buttons its review config allows
(``decision_buttons.py``), and the review panel that holds them with Submit."""

# Tested by: tests/e2e/test_chat_flow.py

from __future__ import annotations

import reflex as rx

from hitl_app.review.types import DECISION_STYLES, EDIT, MAX_PASTE_CHARS, REJECT, RESPOND
from hitl_app.ui import review_text, theme
from hitl_app.ui.cards.card_rows import ArgRow, CardRow
from hitl_app.ui.components.card_parts import (
    KEEP_TEXT_MS,
    edited_summary,
    editor_panel,
    effect_preview,
    mcp_origin,
    risk_badge,
    waited,
)
from hitl_app.ui.components.decision_buttons import DECISION_KEYS, decision_buttons
from hitl_app.ui.components.desk import card_deadline, card_grant, undo_bar
from hitl_app.ui.components.shortcuts import shortcuts_help
from hitl_app.ui.state.desk import DeskState
from hitl_app.ui.state.review import ReviewState


def _arg_row(arg: ArgRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.code(arg.key, variant="ghost"), white_space="nowrap"),
        rx.table.cell(
            rx.text(arg.value, font_family=theme.MONO, size="2", white_space="pre-wrap", style={"wordBreak": "break-all"})
        ),
        rx.table.cell(rx.badge(arg.type_name, variant="outline", color_scheme="gray", size="1")),
        custom_attrs={"data-testid": "card-arg", "data-key": arg.key, "data-type": arg.type_name},
    )


_VISUALLY_HIDDEN = {"position": "absolute", "width": "1px", "height": "1px", "overflow": "hidden", "clip": "rect(0 0 0 0)",
                    "whiteSpace": "nowrap"}

CARD_FOCUS = {
    "&:focus-visible": {"outline": "3px solid var(--accent-9)", "outlineOffset": "2px"},
    "&:focus": {"outline": "3px solid var(--accent-9)", "outlineOffset": "2px"},
    "scrollMarginTop": "12px",
}
"""A card with the keyboard focus is outlined (the review's shortcuts act on it)."""


def _progress_line(card: CardRow) -> rx.Component:
    """``"1 of 2 approvals: Dana"`` on an open shared card, announced as it changes (a live region;
    through ``custom_attrs``, which Reflex 0.10 keeps on every component)."""
    return rx.cond(
        card.show_progress & (card.standing != "complete"),
        rx.hstack(
            rx.icon("users", size=14, color=theme.MUTED, aria_hidden="true"),
            rx.text(card.progress, size="2", weight="medium", data_testid="approval-progress", style=theme.WRAP,
                    custom_attrs={"aria-live": "polite", "role": "status"}),
            spacing="2",
            align="center",
        ),
    )


def _state_text(card: CardRow) -> rx.Component:
    """The card's state in words, announced when it changes (``aria-live``): the draft's choice,
    or the server's word when the card was decided earlier or waits for someone else."""
    return rx.fragment(card.tool_name, ": ", rx.cond(
        card.standing == "complete",
        "decided (" + card.progress + ")",
        rx.cond(
            (card.standing == "waiting") & (card.choice == ""),
            "waiting for " + card.waits_for + " (" + card.progress + ")",
            rx.cond(
                card.question & (card.choice == REJECT),
                rx.cond(card.reject_cancel, "cancel picked (the server hears cancel)",
                        "decline picked (the server hears decline)"),
                rx.match(
                    card.choice,
                    *[(kind, style.picked) for kind, style in DECISION_STYLES.items() if kind != EDIT],
                    (EDIT, rx.cond(card.editing, "editing, not checked", DECISION_STYLES[EDIT].picked)),
                    "not decided yet",
                ),
            ),
        ),
    ))


def _standing_badge(card: CardRow) -> rx.Component:
    """"Decided" on a card decided earlier, "Waiting" on one left to someone else."""
    return rx.match(
        card.standing,
        ("complete", rx.badge(rx.icon("check", size=12), "Decided", color_scheme="green", data_testid="card-standing")),
        ("waiting", rx.cond(card.choice == "", rx.badge(
            rx.icon("hourglass", size=12), "Waiting for ", card.waits_for,
            color_scheme="amber", data_testid="card-standing",
        ))),
        rx.fragment(),
    )


def _choice_chip(card: CardRow) -> rx.Component:
    """The pick so far ("approve", "edit"), amber while it does not count as decided yet
    ("editing: not checked" until "Check edit" passes), red after a failed check ("edit: check
    failed"): ``ReviewState.chips``, Submit's own rule."""
    chip = ReviewState.chips[card.index]
    done = chip[1] == "done"
    colour = rx.cond(done, "gray", rx.cond(chip[0] == review_text.CHECK_FAILED, "red", "amber"))
    return rx.cond(card.choice != "", rx.badge(
        chip[0], color_scheme=colour, variant=rx.cond(done, "soft", "outline"),
        data_testid="card-choice", custom_attrs={"data-decided": rx.cond(done, "true", "false")},
    ))


def _header(card: CardRow) -> rx.Component:
    return rx.hstack(
        rx.icon("shield-alert", size=18, color="var(--amber-11)", aria_hidden="true"),
        rx.code(card.tool_name, size="3"),
        rx.spacer(),
        waited(),
        _standing_badge(card),
        _choice_chip(card),
        width="100%",
        align="center",
        wrap="wrap",
        spacing="2",
    )


def _edit_area(card: CardRow) -> rx.Component:
    return rx.cond(card.choice == EDIT, rx.cond(card.editing, editor_panel(card), edited_summary(card)))


def _answers(card: CardRow) -> rx.Component:
    return rx.fragment(
        rx.cond(
            card.question & (card.choice == REJECT),
            rx.text("The server hears: ", rx.cond(card.reject_cancel, "cancel (dismissed without an answer)",
                                                  "decline (no)"),
                    size="2", color=theme.MUTED, data_testid="question-answer"),
        ),
        rx.cond(
            ~card.question & (card.choice == REJECT),
            rx.input(
                placeholder="Reason (optional, shown to the agent)",
                default_value=card.reason,
                on_blur=lambda value: ReviewState.set_reason(card.index, value),
                on_change=lambda value: ReviewState.set_reason(card.index, value).debounce(KEEP_TEXT_MS),
                max_length=MAX_PASTE_CHARS,
                width="100%",
                data_testid="reject-message",
                aria_label="Reason for rejecting " + card.tool_name + " (optional)",
            ),
        ),
        rx.cond(
            ~card.question & (card.choice == REJECT),
            rx.text(
                rx.el.label(
                    # a Radix checkbox is a button: axe (button-name) wants its name from aria-labelledby,
                    # not from the label around it
                    rx.checkbox(checked=card.reject_stop, on_change=lambda on: ReviewState.set_reject_stop(card.index, on),
                                data_testid="reject-stop", custom_attrs={"aria-labelledby": f"reject-stop-words-{card.index}"}),
                    rx.el.span("Reject and stop: end the run, the agent does not retry (off: reject and tell the agent, "
                               "the run goes on)", id=f"reject-stop-words-{card.index}"),
                    style={"display": "flex", "gap": "6px", "alignItems": "center"},
                ),
                size="2", color=theme.MUTED,
            ),
        ),
        rx.cond(
            (card.choice == RESPOND) | ((card.allowed.length() == 1) & card.allowed.contains(RESPOND)),
            rx.text_area(
                placeholder="Your answer (required)",
                default_value=card.answer,
                on_blur=lambda value: ReviewState.set_answer(card.index, value),
                on_change=lambda value: ReviewState.set_answer(card.index, value).debounce(KEEP_TEXT_MS),
                max_length=MAX_PASTE_CHARS,
                width="100%",
                data_testid="respond-message",
                aria_label="Your answer for " + card.tool_name,
            ),
        ),
    )


def approval_card(card: CardRow) -> rx.Component:
    """One card: tool name, waited time, risk, description, typed arguments, the effect preview,
    the allowed decisions and their inputs (the editor: form or JSON, with the diff).

    The card itself takes the keyboard focus (``tabindex=0``; ``assets/js/review_keys.js`` moves
    it with J/K and acts on it with A/E/R/S); its state is announced in an ``aria-live`` line.
    """
    return rx.card(
        rx.vstack(
            _header(card),
            mcp_origin(card),
            risk_badge(card),
            rx.text(card.description, weight="medium", data_testid="card-description", style={"overflowWrap": "anywhere"}),
            card_deadline(card),
            rx.cond(
                card.args.length() > 0,
                rx.table.root(rx.table.body(rx.foreach(card.args, _arg_row)), size="1", width="100%", variant="ghost"),
            ),
            effect_preview(card),
            _edit_area(card),
            _answers(card),
            _progress_line(card),
            rx.cond(card.note != "", rx.text(card.note, size="2", color=theme.MUTED, data_testid="card-note", style=theme.WRAP)),
            decision_buttons(card),
            rx.cond(card.risk != "high", card_grant(card)),  # a high-risk tool is never granted from its card
            rx.cond(
                card.error != "",
                rx.text(card.error, color=theme.ERROR_COLOR, size="2", data_testid="card-error", role="alert"),
            ),
            rx.el.span(_state_text(card), data_testid="card-state", style=_VISUALLY_HIDDEN,
                       custom_attrs={"aria-live": "polite", "role": "status"}),
            spacing="2",
            width="100%",
        ),
        custom_attrs={
            "data-testid": "approval-card", "data-action-name": card.tool_name, "data-index": card.index,
            "data-choice": card.choice, "data-standing": card.standing, "data-editing": rx.cond(card.editing, "true", "false"),
            "tabIndex": 0, "role": "group",
            "aria-label": "Approval card " + (card.index + 1).to_string() + ": " + card.tool_name + ". " + card.description,
        },
        style={
            "background": theme.CARD_BG, "position": "relative", **CARD_FOCUS,
            "border": rx.cond(card.risk == "high", "1px solid var(--red-8)", theme.CARD_BORDER),
        },
        width="100%",
    )


def review_panel() -> rx.Component:
    """The pending review: its cards, the count decided, Submit and Approve all.

    A refused submission's message (e.g. "Rex already decided this review") stays visible after
    the cards were replaced by the thread's real state (also by the undo window's summary).
    """
    return rx.fragment(
        rx.cond(
            ((ReviewState.cards.length() == 0) | (DeskState.undo_ms > 0)) & (ReviewState.review_error != ""),
            rx.callout(
                ReviewState.review_error, icon="triangle-alert", color_scheme="amber", data_testid="review-error", width="100%"
            ),
        ),
        _cards_panel(),
    )


def _cards_panel() -> rx.Component:
    return rx.cond(DeskState.undo_ms > 0, undo_bar(), rx.cond(
        ReviewState.cards.length() > 0,
        rx.vstack(
            rx.hstack(
                rx.heading("Review needed", size="3"),
                rx.text(ReviewState.summary, size="2", color=theme.MUTED, data_testid="decided-count",
                        custom_attrs={"aria-live": "polite", "role": "status"}),
                rx.spacer(),
                shortcuts_help(),
                align="center",
                spacing="3",
                width="100%",
            ),
            rx.foreach(ReviewState.cards, approval_card),
            rx.cond(  # after a partial submit the waiting callout and the composer line say it (QA: three notes)
                (ReviewState.review_note != "") & (ReviewState.nothing_left == ""),
                rx.text(ReviewState.review_note, size="2", color=theme.MUTED, data_testid="review-note"),
            ),
            rx.cond(
                ReviewState.review_error != "",
                rx.callout(
                    ReviewState.review_error, icon="triangle-alert", color_scheme="red", data_testid="review-error", width="100%"
                ),
            ),
            rx.cond(
                ReviewState.nothing_left != "",
                rx.callout(ReviewState.nothing_left, icon="hourglass", color_scheme="gray", size="1",
                           data_testid="nothing-left", width="100%"),
            ),
            rx.hstack(
                rx.cond(
                    ReviewState.submit_label != "",
                    rx.button(ReviewState.submit_label, on_click=ReviewState.submit, size="3", data_testid="submit-decisions",
                              disabled=~ReviewState.all_decided,  # every card of theirs first (C5; the server checks)
                              title=rx.cond(
                                  ReviewState.all_decided, "Submit (Ctrl+Enter)", "Decide every card that is yours first"
                              ),
                              custom_attrs={"aria-keyshortcuts": "Control+Enter"}),
                ),
                rx.cond(
                    ReviewState.can_approve_all,
                    rx.button(
                        ReviewState.approve_all_label, on_click=ReviewState.pick_approve_rest, size="3", variant="outline",
                        color_scheme="green", data_testid="approve-all"
                    )
                ),
                spacing="3",
            ),
            spacing="3",
            width="100%",
            data_testid="review-panel",
            custom_attrs={"data-interrupt": ReviewState.interrupt_id, "data-decision-keys": DECISION_KEYS,
                          "data-all-decided": rx.cond(ReviewState.all_decided, "true", "false"),
                          "role": "region", "aria-label": "Review needed"},
        ),
    ))
