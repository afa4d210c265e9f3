"""Approval cards: one per action request, with only the buttons its review config allows."""

# Tested by: tests/e2e/test_chat_flow.py

from __future__ import annotations

import reflex as rx

from hitl_app.review.types import MAX_PASTE_CHARS
from hitl_app.ui import theme
from hitl_app.ui.components.desk import card_deadline, card_grant, undo_bar
from hitl_app.ui.desk_state import DeskState
from hitl_app.ui.rows import ArgRow, CardRow
from hitl_app.ui.state import ReviewState

_LABELS = {"approve": "Approve", "edit": "Edit", "reject": "Reject", "respond": "Respond"}
_ICONS = {"approve": "check", "edit": "pencil", "reject": "x", "respond": "message-circle"}
_COLORS = {"approve": "green", "edit": "blue", "reject": "red", "respond": "violet"}


def _arg_row(arg: ArgRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.code(arg.key, variant="ghost"), white_space="nowrap"),
        rx.table.cell(
            rx.text(arg.value, font_family=theme.MONO, size="2", white_space="pre-wrap", style={"wordBreak": "break-all"})
        ),
        rx.table.cell(rx.badge(arg.type_name, variant="outline", color_scheme="gray", size="1")),
        custom_attrs={"data-testid": "card-arg", "data-key": arg.key, "data-type": arg.type_name},
    )


def _decision_button(card: CardRow, kind: str) -> rx.Component:
    chosen = card.choice == kind
    return rx.cond(
        card.allowed.contains(kind),
        rx.button(
            rx.icon(_ICONS[kind], size=14),
            _LABELS[kind],
            on_click=ReviewState.choose(card.index, kind),
            color_scheme=_COLORS[kind],
            variant=rx.cond(chosen, "solid", "surface"),
            size="2",
            data_testid=f"decision-{kind}",
            custom_attrs={"aria-pressed": rx.cond(chosen, "true", "false")},
        ),
    )


def _editor(card: CardRow) -> rx.Component:
    # Uncontrolled text area (no round trip per keystroke, so fast typing never loses characters);
    # its text is checked on blur and by "Check edit" (a form submit, so it works without focus).
    return rx.form(rx.vstack(
        rx.text("Edit the arguments (JSON). The tool name cannot change.", size="1", color=theme.MUTED),
        rx.el.input(type="hidden", name="index", value=card.index.to_string()),
        rx.text_area(
            name="args",
            default_value=card.args_json,
            on_blur=lambda value: ReviewState.save_edit(card.index, value),
            font_family=theme.MONO,
            rows="8",
            width="100%",
            max_length=MAX_PASTE_CHARS,
            spell_check=False,
            data_testid="edit-json",
        ),
        rx.cond(
            card.edit_error != "",
            rx.text(card.edit_error, color=theme.ERROR_COLOR, size="2", data_testid="edit-error"),
        ),
        rx.hstack(
            rx.button("Check edit", type="submit", size="1", variant="soft", data_testid="edit-check"),
            rx.button(
                "Cancel edit", type="button", size="1", variant="soft", color_scheme="gray",
                on_click=ReviewState.cancel_edit(card.index), data_testid="edit-cancel"
            ),
            spacing="2",
            align="center",
        ),
        width="100%",
        spacing="1",
    ), on_submit=ReviewState.check_edit, reset_on_submit=False, width="100%")


def approval_card(card: CardRow) -> rx.Component:
    """One card: tool name, description, typed arguments, allowed decisions and their inputs."""
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.icon("shield-alert", size=18, color="var(--amber-11)"),
                rx.code(card.tool_name, size="3"),
                rx.spacer(),
                rx.cond(card.choice != "", rx.badge(card.choice, color_scheme="gray", data_testid="card-choice")),
                width="100%",
                align="center",
            ),
            rx.text(card.description, weight="medium", data_testid="card-description", style={"overflowWrap": "anywhere"}),
            card_deadline(),
            rx.cond(
                card.args.length() > 0,
                rx.table.root(rx.table.body(rx.foreach(card.args, _arg_row)), size="1", width="100%", variant="ghost"),
            ),
            rx.cond(card.editing | (card.choice == "edit"), rx.cond(card.editing, _editor(card), rx.box(
                rx.text("Will run with:", size="1", color=theme.MUTED),
                rx.code_block(card.args_json, language="json", wrap_long_lines=True),
                width="100%",
            ))),
            rx.cond(
                card.choice == "reject",
                rx.input(
                    placeholder="Reason (optional, shown to the agent)",
                    default_value=card.reason,
                    on_blur=lambda value: ReviewState.set_reason(card.index, value),
                    max_length=MAX_PASTE_CHARS,
                    width="100%",
                    data_testid="reject-message",
                ),
            ),
            rx.cond(
                (card.choice == "respond") | ((card.allowed.length() == 1) & card.allowed.contains("respond")),
                rx.text_area(
                    placeholder="Your answer (required)",
                    default_value=card.answer,
                    on_blur=lambda value: ReviewState.set_answer(card.index, value),
                    max_length=MAX_PASTE_CHARS,
                    width="100%",
                    data_testid="respond-message",
                ),
            ),
            rx.cond(
                card.show_progress,
                rx.hstack(
                    rx.icon("users", size=14, color=theme.MUTED),
                    rx.text(card.progress, size="2", weight="medium", data_testid="approval-progress"),
                    spacing="2",
                    align="center",
                ),
            ),
            rx.cond(card.note != "", rx.text(card.note, size="2", color=theme.MUTED, data_testid="card-note")),
            rx.hstack(
                _decision_button(card, "approve"),
                _decision_button(card, "edit"),
                _decision_button(card, "reject"),
                _decision_button(card, "respond"),
                spacing="2",
                wrap="wrap",
            ),
            card_grant(card),
            rx.cond(card.error != "", rx.text(card.error, color=theme.ERROR_COLOR, size="2", data_testid="card-error")),
            spacing="2",
            width="100%",
        ),
        custom_attrs={"data-testid": "approval-card", "data-action-name": card.tool_name, "data-index": card.index},
        style={"background": theme.CARD_BG, "border": theme.CARD_BORDER},
        width="100%",
    )


def review_panel() -> rx.Component:
    """The pending review: its cards, the count decided, Submit and Approve all.

    A refused submission's message (e.g. "already decided") stays visible after the cards were
    replaced by the thread's real state.
    """
    return rx.fragment(
        rx.cond(
            (ReviewState.cards.length() == 0) & (ReviewState.review_error != ""),
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
                rx.text(
                    ReviewState.decided_count.to_string() + " of " + ReviewState.cards.length().to_string() + " decided",
                    size="2", color=theme.MUTED, data_testid="decided-count"
                ),
                align="baseline",
                spacing="3",
            ),
            rx.foreach(ReviewState.cards, approval_card),
            rx.cond(ReviewState.review_note != "", rx.text(ReviewState.review_note, size="2", color=theme.MUTED, data_testid="review-note")),
            rx.cond(ReviewState.review_error != "", rx.callout(ReviewState.review_error, icon="triangle-alert", color_scheme="red", data_testid="review-error", width="100%")),
            rx.hstack(
                rx.button(ReviewState.submit_label, on_click=ReviewState.submit, size="3", data_testid="submit-decisions",
                          variant=rx.cond(ReviewState.all_decided, "solid", "soft")),
                rx.cond(
                    ReviewState.can_approve_all,
                    rx.button(
                        ReviewState.approve_all_label, on_click=ReviewState.approve_all, size="3", variant="outline",
                        color_scheme="green", data_testid="approve-all"
                    )
                ),
                spacing="3",
            ),
            spacing="3",
            width="100%",
            data_testid="review-panel",
        ),
    ))
