"""Form values back into tool call arguments, and the edits a form makes to its draft (pure).

The fields come from the tool's JSON schema (``hitl_app.review.schema_fields``).

Paths name a value inside the arguments with dots, list positions as numbers: ``to``,
``address.city``, ``items.0.qty``. An array's item field uses ``*`` in place of the position
(``items.*.qty``); ``hitl_app.review.form_rows`` expands it per item for display.

The form's values are the edited arguments (the "draft"), whose leaves may still be text typed
into a number field; ``args_from_form`` turns a draft into arguments and reports problems per path.
The browser's checks are a help only: the server validates the submitted arguments again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hitl_app.review.schema_fields import FormField, Kind


@dataclass(frozen=True)
class FormResult:
    """``args_from_form``'s answer.

    Attributes:
        args: the arguments with types coerced and empty optional fields dropped.
        errors: ``{path: message}`` for each field that is missing or cannot be read, in field order.
    """

    args: dict[str, Any]
    errors: dict[str, str]


def split_path(path: str) -> list[str | int]:
    """``"items.0.qty"`` -> ``["items", 0, "qty"]`` (all-digit segments are list positions)."""
    return [int(p) if p.isdigit() else p for p in path.split(".")] if path else []


def field_at(fields: list[FormField], path: str) -> FormField | None:
    """The field describing ``path`` (list positions match an array's ``*``), or ``None``."""
    level: tuple[FormField, ...] | list[FormField] = fields
    found: FormField | None = None
    for seg in split_path(path):
        name = "*" if isinstance(seg, int) else seg
        found = next((f for f in level if f.name == name), None)
        if found is None:
            return None
        level = found.children
    return found


def value_at(draft: Any, path: str, missing: Any = None) -> Any:
    """The value at ``path`` in ``draft`` (nested dicts and lists), or ``missing``."""
    node = draft
    for seg in split_path(path):
        if isinstance(seg, int) and isinstance(node, list) and 0 <= seg < len(node):
            node = node[seg]
        elif isinstance(seg, str) and isinstance(node, dict) and seg in node:
            node = node[seg]
        else:
            return missing
    return node


_DELETE = object()


def _replace(node: Any, segs: list[str | int], value: Any) -> Any:
    """A copy of ``node`` with ``value`` at ``segs`` (``_DELETE`` removes it); missing objects on
    the way are created."""
    if not segs:
        return value
    head, rest = segs[0], segs[1:]
    if isinstance(head, int):
        items = list(node) if isinstance(node, list) else []
        if head >= len(items):
            if value is _DELETE:
                return items
            items += [None] * (head + 1 - len(items))
        if value is _DELETE and not rest:
            del items[head]
        else:
            items[head] = _replace(items[head], rest, value)
        return items
    obj = dict(node) if isinstance(node, dict) else {}
    if value is _DELETE and not rest:
        obj.pop(head, None)
    else:
        obj[head] = _replace(obj.get(head), rest, value)
    return obj


def _read_number(kind: Kind, raw: Any) -> Any:
    """``raw`` as an int/float for a number field, or ``raw`` unchanged when it is not one."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        return raw
    text = str(raw).strip()
    try:
        number: int | float = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return raw
    if isinstance(number, float) and (not math.isfinite(number) or (kind == "integer" and not number.is_integer())):
        return raw
    return int(number) if kind == "integer" else number


def read_input(f: FormField, raw: Any) -> Any:
    """What a form input's ``raw`` value (text, or a checkbox's bool) means for field ``f``:
    a number for a number field that parses (else the text, reported by ``args_from_form``), the
    option whose text is ``raw`` for an enum, ``raw`` otherwise. Empty text is ``None`` for
    every kind but a required string."""
    if raw == "" and not (f.kind == "string" and f.required and not f.nullable):
        return None
    if f.kind in ("number", "integer"):
        return _read_number(f.kind, raw)
    if f.kind == "enum":
        return next((o for o in f.options if str(o) == str(raw) or _json_text(o) == str(raw)), raw)
    if f.kind == "boolean" and isinstance(raw, str):
        return {"true": True, "false": False}.get(raw.lower(), raw)
    return raw


def _json_text(value: Any) -> str:
    return "true" if value is True else "false" if value is False else "null" if value is None else str(value)


def set_value(fields: list[FormField], draft: dict[str, Any], path: str, raw: Any) -> dict[str, Any]:
    """A copy of ``draft`` with the form input at ``path`` set to ``raw`` (read with
    ``read_input``); an empty optional field is removed. A path no field describes is set as is."""
    f = field_at(fields, path)
    value = read_input(f, raw) if f is not None else raw
    segs = split_path(path)
    if value is None and f is not None and not f.required and not isinstance(segs[-1], int):
        return _replace(draft, segs, _DELETE)
    return _replace(draft, segs, value)


def blank_value(f: FormField) -> Any:
    """A new value for ``f`` (a new array item): its default, else ``""``/``0``/``False``/the
    first option/an object of its required and defaulted fields/``[]``."""
    if f.default is not None:
        return f.default
    if f.kind == "object":
        return {c.name: blank_value(c) for c in f.children if c.required or c.default is not None}
    return {"string": "", "number": 0, "integer": 0, "boolean": False, "array": []}.get(
        f.kind, f.options[0] if f.options else None
    )


def add_item(fields: list[FormField], draft: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``draft`` with a blank item appended to the array at ``path``.

    Raises:
        KeyError: ``path`` is not an array field.
    """
    f = field_at(fields, path)
    if f is None or f.item is None:
        raise KeyError(path)
    items = value_at(draft, path)
    items = list(items) if isinstance(items, list) else []
    return _replace(draft, split_path(path), [*items, blank_value(f.item)])


def remove_item(draft: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``draft`` without the list item at ``path`` (e.g. ``"items.1"``)."""
    return _replace(draft, split_path(path), _DELETE)


def args_from_form(fields: list[FormField], draft: dict[str, Any]) -> FormResult:
    """Arguments from a form's draft, checked against ``fields``.

    Args:
        fields: ``fields_from_schema`` of the tool's schema.
        draft: the edited arguments; leaves may be typed text (``"12"`` for a number).

    Returns:
        ``FormResult``: numbers parsed, ``"true"``/``"false"`` read as booleans, enum options
        matched by their text, empty optional fields (``None``/``""``) dropped, an empty required
        string kept as ``""`` (a value the schema accepts; only a missing one is "required"), arguments the
        schema does not know kept as they are (the server refuses them on submit); ``errors``
        holds "required", "must be a number", "must be a whole number", "must be true or
        false", "must be one of ...", "must be a list", "must be an object" per path.
    """
    errors: dict[str, str] = {}
    args = _coerce_object(fields, draft if isinstance(draft, dict) else {}, errors)
    return FormResult(args, errors)


def _coerce_object(
    fields: tuple[FormField, ...] | list[FormField], obj: dict[str, Any], errors: dict[str, str], prefix: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    known = set()
    for f in fields:
        known.add(f.name)
        path = f"{prefix}.{f.name}" if prefix else f.name
        value = obj.get(f.name)
        if value == "" and f.kind == "string" and f.required and not f.nullable:
            out[f.name] = ""  # empty text is a value of a required string (the schema takes it, as JSON mode sends it)
            continue
        if value is None or value == "":
            if f.name in obj and value is None and f.nullable and f.required:
                out[f.name] = None
            elif f.required:
                errors[path] = "required"
            continue
        out[f.name] = _coerce(f, value, errors, path)
    out.update({k: v for k, v in obj.items() if k not in known})
    return out


def _coerce(f: FormField, value: Any, errors: dict[str, str], path: str) -> Any:
    if f.kind in ("number", "integer"):
        number = _read_number(f.kind, value)
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            errors[path] = "must be a whole number" if f.kind == "integer" else "must be a number"
        return number
    if f.kind == "boolean":
        read = read_input(f, value)
        if not isinstance(read, bool):
            errors[path] = "must be true or false"
        return read
    if f.kind == "enum":
        read = read_input(f, value)
        if read not in f.options:
            errors[path] = "must be one of " + ", ".join(_json_text(o) for o in f.options)
        return read
    if f.kind == "object":
        if not isinstance(value, dict):
            errors[path] = "must be an object"
            return value
        return _coerce_object(f.children, value, errors, path)
    if f.kind == "array":
        if not isinstance(value, list):
            errors[path] = "must be a list"
            return value
        item = f.item
        return [_coerce(item, v, errors, f"{path}.{i}") if item else v for i, v in enumerate(value)]
    if f.kind == "string" and not isinstance(value, str):
        errors[path] = "must be text"
    return value
