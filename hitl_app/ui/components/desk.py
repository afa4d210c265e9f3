"""The review desk's small parts of an approval card and of the review panel.

``card_deadline`` (time left, test id ``deadline``), ``card_grant`` (the "always allow" choice
next to an approval, test id ``grant-scope``) and ``undo_bar`` (``"Running in 10 s · Undo"``,
test id ``undo``, with what was decided on each card: test id ``undo-summary``, one
``undo-decision`` per card). Kept apart from the card itself (``approval_card``), which shows them.
"""

# Tested by: tests/e2e/test_review_desk_browser.py

from __future__ import annotations

import reflex as rx

from hitl_app.review.draft import COMPLETE
from hitl_app.review.types import DECISION_STYLES, REJECT
from hitl_app.ui import theme
from hitl_app.ui.cards.card_rows import CardRow, DecidedRow
from hitl_app.ui.state.desk import NO_GRANT, DeskState
from hitl_app.ui.state.review import ReviewState


def _countdown(due, before: str, done: str, testid: str, after: str = "") -> rx.Component:
    """A span the page's countdown ticker fills (``assets/js/countdown.js``)."""
    return rx.el.span(
        custom_attrs={
            "data-countdown-due": due, "data-server-now": DeskState.server_now_ms,
            "data-countdown-before": before, "data-countdown-after": after, "data-countdown-done": done,
            "data-testid": testid,
        },
        aria_live="polite",
    )


def composer_status(line) -> rx.Component:
    """The locked composer's line about the review: ``line`` (``ReviewState.composer_line``), or
    during an undo window "Every card is decided: the agent goes on in 12 s unless the submission
    is undone." (test id ``composer-undo-left``), counting down."""
    return rx.cond(
        DeskState.undo_ms > 0,
        _countdown(
            DeskState.undo_ms, "Every card is decided: the agent goes on in ", "Every card is decided: the agent goes on now.",
            "composer-undo-left", after=" unless the submission is undone.",
        ),
        rx.el.span(line),
    )


def card_deadline(card: CardRow) -> rx.Component:
    """The review's time left ("Rejected by policy in 14:32 min"), or that it was escalated, on a
    card the deadline can still decide: none on a card already decided (its decision stands)."""
    return rx.cond(card.standing == COMPLETE, rx.fragment(), rx.fragment(
        rx.cond(
            DeskState.deadline_ms > 0,
            rx.hstack(
                rx.icon("timer", size=14, color="var(--amber-11)"),
                rx.text(
                    _countdown(
                        DeskState.deadline_ms, DeskState.deadline_before, "Time is up: the policy decides now", "deadline-left"
                    ),
                    size="2", color="var(--amber-11)", weight="medium",
                ),
                spacing="2", align="center", data_testid="deadline",
            ),
        ),
        rx.cond(
            DeskState.escalated_note != "",
            rx.hstack(rx.icon("arrow-up-right", size=14, color="var(--amber-11)"),
                      rx.text(DeskState.escalated_note, size="2", color="var(--amber-11)"),
                      spacing="2", align="center", data_testid="deadline"),
        ),
    ))


def card_grant(card: CardRow) -> rx.Component:
    """Beside an approval: approve once, or also allow matching calls without asking."""
    options = DeskState.grant_options[card.index]
    return rx.cond(
        (card.choice == "approve") & (options.length() > 0),
        rx.el.select(
            rx.el.option("Approve just this once", value=NO_GRANT),
            rx.foreach(options, lambda o: rx.el.option(o[1], value=o[0])),
            value=DeskState.grant_choice[card.index],
            on_change=lambda value: ReviewState.set_grant(card.index, value),
            aria_label="Also allow without asking",
            data_testid="grant-scope",
            style={"width": "100%", "padding": "6px 8px", "borderRadius": "6px", "border": "1px solid var(--gray-7)",
                   "background": "var(--color-panel-solid)", "color": "var(--gray-12)", "fontSize": "14px"},
        ),
        rx.cond(
            (card.choice == "approve") & (DeskState.grant_notes[card.index] != ""),
            rx.text(DeskState.grant_notes[card.index], size="1", color=theme.MUTED, data_testid="grant-note"),
        ),
    )


_VERB_COLORS = tuple((kind, style.color) for kind, style in DECISION_STYLES.items())


def _decided(line: DecidedRow) -> rx.Component:
    """One card of the submitted review, read-only: ``send_email  [edited]  by Rex  to: a -> b`` and
    the arguments it runs with, a reject's reason, an answer (``data-decision``: the decision type)."""
    return rx.vstack(
        rx.hstack(
            rx.code(line.tool, size="2", weight="bold", style={"whiteSpace": "nowrap"}),
            rx.badge(line.verb, color_scheme=rx.match(line.decision, *_VERB_COLORS, "gray"), data_testid="undo-verb"),
            rx.cond(line.by != "", rx.text("by ", line.by, size="1", color=theme.MUTED, data_testid="undo-by")),
            rx.cond(
                line.detail != "",
                rx.text(line.detail, size="2", data_testid="undo-detail", style={"overflowWrap": "anywhere", "minWidth": "0"}),
                rx.cond(line.decision == REJECT, rx.text("no reason given", size="2", color=theme.MUTED)),
            ),
            align="center", spacing="2", wrap="wrap", width="100%",
        ),
        rx.cond(
            line.args != "",
            rx.text(line.args, size="1", font_family=theme.MONO, color=theme.MUTED, data_testid="undo-args",
                    style={"overflowWrap": "anywhere", "whiteSpace": "pre-wrap"}),
        ),
        spacing="1", width="100%",
        custom_attrs={"data-testid": "undo-decision", "data-action-name": line.tool, "data-decision": line.decision,
                      "role": "listitem"},
    )


def undo_summary() -> rx.Component:
    """What the submission decided, card by card (``DeskState.undo_lines``, the server's word),
    read-only, for everyone who sees the undo bar; nothing when there are no lines."""
    return rx.cond(
        DeskState.undo_lines.length() > 0,
        rx.vstack(
            rx.text("Decided:", size="1", weight="medium", color=theme.MUTED),
            rx.foreach(DeskState.undo_lines, _decided),
            spacing="2", width="100%", padding_top="4px", border_top="1px solid var(--amber-a5)",
            data_testid="undo-summary", custom_attrs={"role": "list", "aria-label": "What was decided"},
        ),
    )


def undo_bar() -> rx.Component:
    """After Submit with an undo window: "Running in 10 s · Undo" for the submitter (or an admin),
    "Running in 10 s unless Rex undoes it" for everyone else; below it, what each card's
    decision was (``undo_summary``)."""
    return rx.callout.root(
        rx.hstack(
            rx.icon("hourglass", size=16),
            rx.text(_countdown(DeskState.undo_ms, "Running in ", "Starting now…", "undo-left"), size="3", weight="medium"),
            rx.cond(  # only the person whose submission opened the window (or an admin) may undo it
                DeskState.can_undo,
                rx.hstack(
                    rx.text("·", color=theme.MUTED),
                    rx.button(
                        "Undo", on_click=ReviewState.undo, size="2", variant="solid", color_scheme="amber",
                        data_testid="undo-button",
                    ),
                    align="center", spacing="3",
                ),
                rx.text("unless ", DeskState.undo_by, " undoes it", size="2", color=theme.MUTED),
            ),
            rx.spacer(),
            rx.text("submitted by ", DeskState.undo_by, size="1", color=theme.MUTED),
            align="center", spacing="3", width="100%", wrap="wrap",
        ),
        rx.cond(DeskState.undo_error != "", rx.text(DeskState.undo_error, size="2", color=theme.ERROR_COLOR)),
        undo_summary(),
        color_scheme="amber", width="100%", data_testid="undo",
        style={"display": "flex", "flexDirection": "column"},  # (Radix's grid shrank the rows to their content)
    )
