"""The argument editor's form, mode switch and diff, as Reflex components.

The form is drawn on the server's side from ``hitl_app.review.form_rows.FormRow`` rows (one loop,
any nesting depth): typed inputs, enums as selects, required fields marked with ``*``, the schema's
descriptions as hints under the inputs, nested objects as indented groups, arrays with Add and
Remove. Text inputs are uncontrolled and send their value on blur (no round trip per keystroke,
so fast typing never loses characters); selects and checkboxes send on change.

Stable test ids: ``edit-form`` (the form), ``edit-form-field`` with ``data-field="<path>"`` (one
per input), ``edit-form-group`` (an object or array header), ``edit-form-add`` /
``edit-form-remove`` (with ``data-field``), ``edit-form-error``, ``edit-mode-form`` /
``edit-mode-json``, ``edit-diff`` with ``edit-diff-row`` (``data-kind``: changed/added/removed).
"""

# Tested by: tests/e2e/test_editor_components.py

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import reflex as rx

from hitl_app.review.diff import DiffLine
from hitl_app.review.form_rows import FormRow
from hitl_app.ui import theme

FieldEvent = Callable[[Any, Any], Any]
"""``(path, value) -> event``: e.g. ``lambda path, value: CardState.set_field(index, path, value)``."""
PathEvent = Callable[[Any], Any]
"""``(path) -> event``: e.g. ``lambda path: CardState.add_item(index, path)``."""

FIELD_SETTLE_MS = 800
"""How long typing in a text field must pause before its value goes to the server (ms), as the
JSON editor's ``settle_ms``: one write per pause, never one per keystroke."""

_KIND_COLOR = {"changed": "blue", "added": "green", "removed": "red"}


def _input(row: FormRow, on_field: FieldEvent, key: rx.Var) -> rx.Component:
    attrs = {
        "aria-label": row.aria_label,
        "aria-required": rx.cond(row.required, "true", "false"),
        "aria-invalid": rx.cond(row.error != "", "true", "false"),
    }
    text_props = dict(
        key=key,
        default_value=row.value,
        on_blur=lambda value: on_field(row.path, value),
        # also once typing pauses, so an open draft is kept (and its diff shown) without leaving the
        # field; Reflex debounces in the browser (one timer for the form's fields: leaving one sends at once)
        on_change=lambda value: on_field(row.path, value).debounce(FIELD_SETTLE_MS),
        width="100%",
        custom_attrs=attrs,
    )
    return rx.match(
        row.kind,
        ("boolean", rx.checkbox(checked=row.checked, on_change=lambda value: on_field(row.path, value), custom_attrs=attrs)),
        (
            "enum",
            rx.el.select(
                rx.foreach(row.options, lambda o: rx.el.option(rx.cond(o == "", "(not set)", o), value=o)),
                value=row.value,
                on_change=lambda value: on_field(row.path, value),
                custom_attrs=attrs,
                style={"padding": "4px 6px", "borderRadius": "6px", "border": "1px solid var(--gray-a7)",
                       "background": "var(--color-surface)", "minWidth": "10rem", "fontSize": "14px"},
            ),
        ),
        ("number", rx.input(input_mode="decimal", **text_props)),
        ("integer", rx.input(input_mode="numeric", **text_props)),
        ("json", rx.code(row.value, font_family=theme.MONO, size="1", white_space="pre-wrap")),
        rx.cond(row.multiline, rx.text_area(rows="4", **text_props), rx.input(**text_props)),
    )


def _remove(row: FormRow, on_remove: PathEvent) -> rx.Component:
    return rx.cond(
        row.removable,
        rx.icon_button(
            rx.icon("x", size=14),
            variant="ghost",
            color_scheme="red",
            size="1",
            on_click=on_remove(row.path),
            aria_label="Remove " + row.aria_label,
            data_testid="edit-form-remove",
            custom_attrs={"data-field": row.path},
        ),
    )


def _label(row: FormRow) -> rx.Component:
    return rx.hstack(
        rx.text(row.label, size="2", weight="medium"),
        rx.cond(row.required, rx.text("*", color=theme.ERROR_COLOR, size="2", title="required", aria_hidden="true")),
        spacing="1",
        align="center",
    )


def _group(row: FormRow, on_add: PathEvent, on_remove: PathEvent) -> rx.Component:
    return rx.vstack(
        rx.hstack(
            _label(row),
            rx.spacer(),
            rx.cond(
                row.kind == "array",
                rx.button(
                    rx.icon("plus", size=14), "Add", size="1", variant="soft",
                    on_click=on_add(row.path), aria_label="Add to " + row.aria_label,
                    data_testid="edit-form-add", custom_attrs={"data-field": row.path},
                ),
            ),
            _remove(row, on_remove),
            width="100%",
            align="center",
        ),
        rx.cond(row.hint != "", rx.text(row.hint, size="1", color=theme.MUTED)),
        rx.cond(row.error != "", rx.text(row.error, size="1", color=theme.ERROR_COLOR, data_testid="edit-form-error")),
        spacing="0",
        width="100%",
        padding_top="4px",
        border_bottom="1px solid var(--gray-a5)",
        role="group",
        data_testid="edit-form-group",
        custom_attrs={"data-field": row.path, "aria-label": row.aria_label},
    )


def _field(row: FormRow, on_field: FieldEvent, on_remove: PathEvent, key: rx.Var) -> rx.Component:
    return rx.vstack(
        rx.hstack(_label(row), rx.spacer(), _remove(row, on_remove), width="100%", align="center"),
        _input(row, on_field, key),
        rx.cond(row.hint != "", rx.text(row.hint, size="1", color=theme.MUTED)),
        rx.cond(row.error != "", rx.text(row.error, size="1", color=theme.ERROR_COLOR, data_testid="edit-form-error")),
        spacing="1",
        width="100%",
        data_testid="edit-form-field",
        custom_attrs={"data-field": row.path, "data-kind": row.kind},
    )


def schema_form(
    rows: rx.Var[list[FormRow]],
    on_field: FieldEvent,
    on_add: PathEvent,
    on_remove: PathEvent,
    revision: rx.Var | str = "0",
) -> rx.Component:
    """The form for a tool call's arguments.

    Args:
        rows: ``form_rows(fields, draft, errors)`` as a state var.
        on_field: ``(path, value) -> event`` for an input's new value (text on blur; a checkbox's
            bool and a select's option text on change). Apply it with
            ``hitl_app.review.schema_form.set_value``.
        on_add: ``(path) -> event`` for "Add" on an array (``add_item``).
        on_remove: ``(path) -> event`` for "Remove" on an array item (``remove_item``).
        revision: a var to bump when the draft changed other than by typing into the form (JSON
            edit, add/remove, reload): text inputs are keyed by it and the path, so they show the
            new draft instead of the text they still hold.

    Returns:
        ``<form data-testid="edit-form">`` (submitting it does nothing).
    """
    return rx.el.form(
        rx.vstack(
            rx.foreach(
                rows,
                lambda row: rx.box(
                    rx.cond(
                        (row.kind == "object") | (row.kind == "array"),
                        _group(row, on_add, on_remove),
                        _field(row, on_field, on_remove, rx.Var.create(revision).to_string() + ":" + row.path),
                    ),
                    padding_left=(row.depth * 16).to_string() + "px",
                    border_left=rx.cond(row.depth > 0, "2px solid var(--gray-a4)", "none"),
                    width="100%",
                ),
            ),
            spacing="3",
            width="100%",
        ),
        on_submit=rx.prevent_default,
        data_testid="edit-form",
        width="100%",
    )


def edit_mode_switch(mode: rx.Var[str], on_mode: Callable[[str], Any]) -> rx.Component:
    """Two toggle buttons, ``Form`` (``edit-mode-form``) and ``JSON`` (``edit-mode-json``), over the
    same draft; ``on_mode("form" | "json")`` switches. The current one is ``aria-pressed``."""
    def button(name: str, label: str, icon: str) -> rx.Component:
        chosen = mode == name
        return rx.button(
            rx.icon(icon, size=14), label, size="1",
            variant=rx.cond(chosen, "solid", "soft"),
            on_click=on_mode(name),
            data_testid=f"edit-mode-{name}",
            custom_attrs={"aria-pressed": rx.cond(chosen, "true", "false")},
        )

    return rx.hstack(
        button("form", "Form", "list"), button("json", "JSON", "braces"), spacing="1", role="group", aria_label="Edit mode"
    )


def _diff_row(line: DiffLine) -> rx.Component:
    value = {"wordBreak": "break-word", "fontFamily": theme.MONO, "fontSize": "12px"}
    return rx.box(
        rx.hstack(
            rx.code(line.path, variant="ghost", style={"wordBreak": "break-all"}),
            rx.badge(
                line.kind, color_scheme=rx.match(line.kind, ("added", "green"), ("removed", "red"), "blue"), variant="soft",
                high_contrast=True,
            ),
            spacing="2",
            align="center",
            min_width="10rem",
        ),
        rx.box(
            rx.cond(line.kind != "added", rx.el.span(
                line.before, aria_label="proposed: " + line.before,
                style={**value, "textDecoration": "line-through", "color": "var(--red-11)"},
            )),
            rx.cond(line.kind == "changed", rx.el.span(" → ", aria_hidden="true", style={"color": theme.MUTED})),
            rx.cond(line.kind != "removed", rx.el.span(line.after, aria_label="edited: " + line.after,
                                                       style={**value, "color": "var(--green-11)"})),
            flex="1 1 14rem",
            min_width="0",
        ),
        data_testid="edit-diff-row",
        custom_attrs={"data-kind": line.kind, "data-field": line.path, "title": line.text},
        style={"display": "flex", "flexWrap": "wrap", "gap": "4px 12px", "alignItems": "baseline",
               "padding": "6px 0", "borderBottom": "1px solid var(--gray-a4)"},
    )


def edit_diff(lines: rx.Var[list[DiffLine]], stale: rx.Var[bool] | bool = False) -> rx.Component:
    """The edited arguments against the proposed ones, one row per changed, added or removed field
    (``data-testid="edit-diff"``): the field, the kind, the proposed value struck through and the
    edited one (rows wrap on narrow screens); "No changes yet" when they are equal. ``stale``: the
    text on screen cannot be read (bad JSON, too large), so the rows are of the last text that could."""
    return rx.box(
        rx.text(
            "Changes against the proposal",
            rx.cond(stale, rx.el.span(" (of the last text that could be read)", style={"fontWeight": "normal"})),
            size="1", weight="bold", color=theme.MUTED,
        ),
        rx.cond(
            lines.length() > 0,
            rx.box(rx.foreach(lines, _diff_row), width="100%"),
            rx.text("No changes yet.", size="1", color=theme.MUTED),
        ),
        data_testid="edit-diff",
        width="100%",
        aria_live="polite",
    )
