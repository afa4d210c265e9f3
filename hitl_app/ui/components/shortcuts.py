"""The review's keyboard shortcuts: the "?" overlay that lists them, and the script that runs them.

The keys are handled in the browser by ``assets/js/review_keys.js`` (loaded in the document head):
they only click the same buttons a mouse would and move the focus, so every decision still goes
through the server's checks. Typing in a text field (inputs, text areas, selects, the JSON
editor) never triggers a shortcut; ``Esc`` leaves the field and puts the focus back on its card.

Stable test ids: ``shortcuts-button`` (opens the overlay; also the ``?`` key) and
``shortcuts-help`` (the overlay).
"""

# Tested by: tests/e2e/test_review_editing.py

from __future__ import annotations

import reflex as rx

from hitl_app.review.types import DECISION_STYLES
from hitl_app.ui import theme

REVIEW_KEYS_JS_SRC = "/js/review_keys.js"
"""The keyboard script (``assets/js/review_keys.js``), a plain ``<script src>`` (``script-src 'self'``)."""

SHORTCUTS: tuple[tuple[str, str], ...] = (
    *((style.key.upper(), style.key_help) for style in DECISION_STYLES.values()),
    ("J / K", "Next / previous card"),
    ("Esc", "Leave a text field or the editor (back to the card)"),
    ("Ctrl+Enter", "Submit, once every card is decided"),
    ("?", "Show this list"),
)
"""The keys and what they do, as the overlay lists them."""


def _row(key: str, what: str) -> rx.Component:
    keys = [
        rx.el.kbd(
            k.strip(),
            style={
                "fontFamily": theme.MONO,
                "fontSize": "12px",
                "padding": "1px 6px",
                "borderRadius": "4px",
                "border": "1px solid var(--gray-a7)",
                "background": "var(--gray-a2)",
            },
        )
        for k in key.split("/")
    ]
    return rx.table.row(
        rx.table.cell(rx.hstack(*keys, spacing="1"), white_space="nowrap"),
        rx.table.cell(rx.text(what, size="2")),
    )


def shortcuts_help() -> rx.Component:
    """A "Keys" button (``?``) opening a dialog that lists the review's keyboard shortcuts."""
    return rx.dialog.root(
        rx.dialog.trigger(
            rx.button(
                rx.icon("keyboard", size=14, aria_hidden="true"),
                "Keys",
                size="1",
                variant="ghost",
                color_scheme="gray",
                aria_label="Keyboard shortcuts",
                title="Keyboard shortcuts (?)",
                data_testid="shortcuts-button",
                custom_attrs={"aria-keyshortcuts": "?"},
            ),
        ),
        rx.dialog.content(
            rx.dialog.title("Keyboard shortcuts"),
            rx.dialog.description(
                "Keys act on the focused card. They do nothing while you type in a field.", size="2", color=theme.MUTED
            ),
            rx.table.root(
                rx.table.body(*[_row(k, w) for k, w in SHORTCUTS]), size="1", variant="ghost", width="100%", margin_top="8px"
            ),
            rx.flex(
                rx.dialog.close(rx.button("Close", variant="soft", data_testid="shortcuts-close")),
                justify="end",
                margin_top="12px",
            ),
            max_width="460px",
            data_testid="shortcuts-help",
        ),
    )
