"""A schema form as a flat list of rows to render: one row per input, group headers for nested
objects and arrays (pure).

A flat list (rather than a tree) lets a UI render any nesting depth with one loop: each row says
how deep it sits (``depth``) and what to draw (``kind``). Array items are expanded from the draft,
so ``items.*.qty`` becomes ``items.0.qty``, ``items.1.qty``, ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hitl_app.review.schema_fields import FormField
from hitl_app.review.schema_form import value_at

NONE_OPTION = ""
"""The option of an optional enum's select that means "not set"."""


@dataclass
class FormRow:
    """One row of a rendered schema form.

    Attributes:
        path: the dotted path of the value (``items.0.qty``), unique in the form.
        label: the field's label; an array item is "Item 1", "Item 2", ...
        kind: a ``FormField`` kind (``object``/``array`` rows are group headers with no input).
        value: the input's text ("" when unset); a ``json`` field's value as JSON text.
        checked: a boolean field's value.
        depth: nesting level, 0 for top-level arguments.
        required: the field must have a value.
        hint: the schema's description ("" if none).
        options: an enum's options as text (an optional enum starts with ``NONE_OPTION``).
        error: the field's problem from ``args_from_form`` ("" if none).
        removable: an array item (the row offers "Remove").
        multiline: a string field with a multi-line input.
        aria_label: the label with its parents' labels ("Address › City"), for screen readers.
    """

    path: str
    label: str
    kind: str
    value: str = ""
    checked: bool = False
    depth: int = 0
    required: bool = False
    hint: str = ""
    options: list[str] = field(default_factory=list)
    error: str = ""
    removable: bool = False
    multiline: bool = False
    aria_label: str = ""


def option_text(value: Any) -> str:
    """An enum option as the text a select shows and sends back (JSON spelling for non-strings)."""
    return value if isinstance(value, str) else json.dumps(value)


def _text(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "enum":
        return option_text(value)
    if kind == "json" or not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def form_rows(fields: list[FormField], draft: dict[str, Any], errors: dict[str, str] | None = None) -> list[FormRow]:
    """The rows of a form for ``fields`` showing ``draft``.

    Args:
        fields: ``fields_from_schema`` of the tool's schema.
        draft: the edited arguments (``args_from_form`` input).
        errors: ``{path: message}`` from ``args_from_form`` (shown on the row of that path).

    Returns:
        Rows in schema order, each group header followed by its children; arrays list one row
        (or group) per item in the draft.
    """
    rows: list[FormRow] = []
    for f in fields:
        _add_rows(rows, f, f.path, f.label, value_at(draft, f.path), 0, errors or {}, ())
    return rows


def _add_rows(
    rows: list[FormRow], f: FormField, path: str, label: str, value: Any, depth: int, errors: dict[str, str],
    parents: tuple[str, ...], removable: bool = False
) -> None:
    options = [option_text(o) for o in f.options]
    if f.kind == "enum" and (f.nullable or not f.required):
        options.insert(0, NONE_OPTION)
    rows.append(
        FormRow(
            path=path,
            label=label,
            kind=f.kind,
            value="" if f.kind in ("object", "array") else _text(value, f.kind),
            checked=value is True,
            depth=depth,
            required=f.required and not removable,
            hint=f.description,
            options=options,
            error=errors.get(path, ""),
            removable=removable,
            multiline=f.multiline,
            aria_label=" › ".join((*parents, label)),
        )
    )
    if f.kind == "object" and isinstance(value, dict):
        for child in f.children:
            _add_rows(
                rows, child, f"{path}.{child.name}", child.label, value.get(child.name), depth + 1, errors, (*parents, label)
            )
    elif f.kind == "array" and isinstance(value, list) and f.item is not None:
        for i, item in enumerate(value):
            _add_rows(rows, f.item, f"{path}.{i}", f"Item {i + 1}", item, depth + 1, errors, (*parents, label), removable=True)
