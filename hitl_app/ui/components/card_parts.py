"""Parts of an approval card: the waited time, the risk badge, the effect preview and the editor.

Stable test ids: ``waited``, ``risk-badge`` (``data-level``), ``effect-preview`` (``data-kind``:
``diff`` or ``sql``), and the editor's (``edit-mode-form``, ``edit-mode-json``, ``edit-form``,
``edit-form-field``, ``edit-json``, ``edit-diff``, ``edit-error``, ``edit-check``, ``edit-cancel``).
"""

# Tested by: tests/e2e/test_review_editing.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.cards.card_rows import CardRow
from hitl_app.ui.components.json_editor import json_editor
from hitl_app.ui.components.schema_form import edit_diff, edit_mode_switch, schema_form
from hitl_app.ui.state.review import ReviewState

KEEP_TEXT_MS = 800
"""Typed text is kept on the server until Submit once typing pauses this long (ms), and on blur: a
reject reason, an answer (both sent then), the JSON editor's draft (its text is sent sooner, for
the diff; ``ReviewState.keep_draft`` keeps it). Never a write per keystroke."""


class Waited(rx.Component):
    """``<Waited>`` from ``assets/waited.js``: "waiting 4 min", live.

    Props: ``raised_ms`` (epoch ms, server clock: when the review was raised) and ``server_ms``
    (epoch ms, server clock: when the server sent it); the browser's clock only measures the time
    since then.
    """

    library = "$/public/waited.js"
    tag = "Waited"

    raised_ms: rx.Var[int]
    server_ms: rx.Var[int]


def waited() -> rx.Component:
    """How long the pending review has waited (``data-testid="waited"``), from the server's times."""
    return rx.hstack(
        rx.icon("clock", size=13, color=theme.MUTED, aria_hidden="true"),
        rx.text(
            Waited.create(
                raised_ms=ReviewState.raised_ms, server_ms=ReviewState.server_ms, custom_attrs={"data-testid": "waited"}
            ),
            size="1",
            color=theme.MUTED,
            white_space="nowrap",
        ),
        spacing="1",
        align="center",
    )


def mcp_origin(card: CardRow) -> rx.Component:
    """An MCP tool's server (``data-testid="mcp-server"``) and the server's hints as badges
    (``hint-badge``, ``data-hint``); nothing for a built-in tool."""
    return rx.cond(
        card.server != "",
        rx.hstack(
            rx.badge(rx.icon("server", size=12, aria_hidden="true"), "MCP server " + card.server,
                     color_scheme="indigo", variant="soft", data_testid="mcp-server"),
            rx.text("tool " + card.server_tool, size="1", color=theme.MUTED, style=theme.WRAP),
            rx.foreach(card.hints, lambda hint: rx.badge(
                hint, variant="outline", data_testid="hint-badge", custom_attrs={"data-hint": hint},
                color_scheme=rx.match(hint, ("destructive", "red"), ("reaches outside", "amber"), "gray"),
            )),
            rx.cond(~card.server_trusted, rx.text("hints only: the server is not marked trusted", size="1",
                                                  color=theme.MUTED, data_testid="untrusted-note")),
            spacing="2", align="center", wrap="wrap",
        ),
    )


def risk_badge(card: CardRow) -> rx.Component:
    """The policy's risk level (``data-testid="risk-badge"``) and its one-line note, if set."""
    return rx.cond(
        card.risk != "",
        rx.hstack(
            rx.badge(
                rx.icon("triangle-alert", size=12, aria_hidden="true"),
                card.risk + " risk",
                color_scheme=rx.match(card.risk, ("high", "red"), ("medium", "amber"), "gray"),
                variant=rx.cond(card.risk == "high", "solid", "soft"),
                data_testid="risk-badge",
                custom_attrs={"data-level": card.risk},
            ),
            rx.cond(
                card.risk_note != "",
                rx.text(
                    card.risk_note, size="2", weight="medium", color=rx.cond(card.risk == "high", "var(--red-11)", theme.MUTED)
                ),
            ),
            rx.cond(
                card.risk == "high",
                rx.text("Decide this one on its own: it is never approved in bulk.", size="1", color=theme.MUTED),
            ),
            spacing="2",
            align="center",
            wrap="wrap",
        ),
    )


def _preview_code(card: CardRow) -> rx.Component:
    style = {**theme.ARGS_CODE_STYLE, "maxHeight": "16rem", "overflow": "auto", "fontSize": "12px"}
    return rx.cond(
        card.preview_body != "",
        rx.cond(
            card.preview_kind == "diff",
            rx.code_block(card.preview_body, language="diff", wrap_long_lines=True, custom_style=style),
            rx.code_block(card.preview_body, language="sql", wrap_long_lines=True, custom_style=style),
        ),
    )


def effect_preview(card: CardRow) -> rx.Component:
    """What the call would do (``data-testid="effect-preview"``): a file diff or the formatted SQL
    with the rows it would change; nothing for tools without a preview."""
    return rx.cond(
        card.preview_kind != "",
        rx.box(
            rx.hstack(
                rx.cond(
                    card.preview_kind == "diff",
                    rx.icon("file-diff", size=14, color=theme.MUTED, aria_hidden="true"),
                    rx.icon("database", size=14, color=theme.MUTED, aria_hidden="true"),
                ),
                rx.text(
                    "Preview: ",
                    rx.el.span(card.preview_title, style={"fontFamily": theme.MONO}),
                    size="1",
                    weight="bold",
                    color=theme.MUTED,
                ),
                spacing="1",
                align="center",
            ),
            _preview_code(card),
            rx.cond(
                card.preview_note != "", rx.text(card.preview_note, size="2", weight="medium", data_testid="effect-preview-note")
            ),
            data_testid="effect-preview",
            custom_attrs={"data-kind": card.preview_kind},
            width="100%",
            padding="8px 10px",
            border_radius="8px",
            background="var(--gray-a2)",
            border="1px solid var(--gray-a5)",
            style={"display": "flex", "flexDirection": "column", "gap": "6px"},
        ),
    )


def _edit_buttons(index: rx.Var) -> rx.Component:
    """The "Check edit" (checked on the server) and "Cancel edit" buttons."""
    return rx.hstack(
            rx.button(
                rx.icon("check-check", size=14),
                "Check edit",
                size="2",
                variant="soft",
                on_click=ReviewState.finish_edit(index),
                data_testid="edit-check",
            ),
            rx.button(
                "Cancel edit",
                type="button",
                size="2",
                variant="soft",
                color_scheme="gray",
                on_click=ReviewState.cancel_edit(index),
                data_testid="edit-cancel",
            ),
            spacing="2",
            align="center",
        )


def _draft_feedback(card: CardRow) -> list[rx.Component]:
    """What the server says back about the draft: a failed check's error, the note on the JSON
    text, the diff against the proposal. Drawn below "Check edit": leaving a field sends it, and a
    diff row drawn above the button between the press and the release moved the button away from
    the pointer, so the click was lost (CI, under load)."""
    return [
        rx.cond(
            card.edit_error != "",
            rx.text(card.edit_error, color=theme.ERROR_COLOR, size="2", data_testid="edit-error", role="alert"),
        ),
        rx.cond(  # the server's note on the text, unless a failed check just said the same above
            (card.mode == "json") & (card.json_note != "") & (card.json_note != card.edit_error),
            rx.text(card.json_note, size="1", color=theme.ERROR_COLOR),
        ),
        edit_diff(card.diff, stale=(card.mode == "json") & (card.json_note != "")),
    ]


def editor_panel(card: CardRow) -> rx.Component:
    """The open editor: Form/JSON switch over one draft, the form or the JSON editor (schema
    errors inline at their line), "Check edit" and "Cancel edit", then a failed check's error and
    the diff against the proposal (below the buttons, so sending a field never moves them)."""
    index = card.index
    return rx.vstack(
        rx.hstack(
            rx.text(rx.cond(card.question, "Your answer to the server's question: fill in the form, then check it.",
                            "Edit the arguments. The tool name cannot change."), size="1", color=theme.MUTED),
            rx.spacer(),
            rx.cond(card.has_form, edit_mode_switch(card.mode, lambda mode: ReviewState.set_edit_mode(index, mode))),
            width="100%",
            align="center",
            wrap="wrap",
        ),
        rx.cond(
            card.mode == "json",
            json_editor(
                card.draft_json,
                lambda text: ReviewState.set_json(index, text),
                schema=card.schema,
                on_settle=ReviewState.keep_draft(index),
                settle_ms=KEEP_TEXT_MS,
                aria_label="Arguments of " + card.tool_name + " (JSON)",
            ),
            rx.vstack(
                rx.cond(card.json_note != "", rx.callout(
                    "The JSON text has a problem (" + card.json_note + "); the form shows the last valid arguments.",
                    color_scheme="amber", size="1", width="100%")),
                schema_form(
                    card.form,
                    # the inputs' revision goes along: a send from inputs since replaced is late
                    lambda path, value: ReviewState.set_field(index, path, value, card.revision),
                    lambda path: ReviewState.add_item(index, path),
                    lambda path: ReviewState.remove_item(index, path),
                    revision=card.revision,
                ),
                width="100%",
                spacing="2",
            ),
        ),
        _edit_buttons(index),
        *_draft_feedback(card),
        width="100%",
        spacing="2",
        padding="10px",
        border_radius="8px",
        background="var(--color-panel-solid)",
        border="1px solid var(--blue-a6)",
        data_testid="card-editor",
    )


def edited_summary(card: CardRow) -> rx.Component:
    """A checked edit, editor closed: the arguments that will run and the diff."""
    return rx.vstack(
        rx.text("Will run with:", size="1", color=theme.MUTED),
        rx.code_block(card.args_json, language="json", wrap_long_lines=True, custom_style=theme.ARGS_CODE_STYLE),
        edit_diff(card.diff),
        width="100%",
        min_width="0",
        spacing="1",
        data_testid="edited-summary",
    )
