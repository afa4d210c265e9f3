"""A tool's JSON schema as form fields, and form values back into tool call arguments (pure).

The input is the JSON schema of a tool's arguments as pydantic writes it
(``Model.model_json_schema()``): ``properties`` with ``required``, ``$defs``/``$ref`` for nested
models and enums, ``anyOf: [X, {"type": "null"}]`` for ``X | None``.

Paths name a value inside the arguments with dots, list positions as numbers: ``to``,
``address.city``, ``items.0.qty``. An array's item field uses ``*`` in place of the position
(``items.*.qty``); ``hitl_app.review.form_rows`` expands it per item for display.

The form's values are the edited arguments (the "draft"), whose leaves may still be text typed
into a number field; ``args_from_form`` turns a draft into arguments and reports problems per path.
The browser's checks are a help only: the server validates the submitted arguments again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["string", "number", "integer", "boolean", "enum", "object", "array", "json"]
"""What a field holds. ``json``: a value the form cannot type (a union of types, a free-form
object); it is edited as JSON text."""

MULTILINE_NAMES = frozenset({"body", "content", "text", "message", "query", "description"})
"""Argument names whose string values get a multi-line input."""


@dataclass(frozen=True)
class FormField:
    """One field of a form generated from a JSON schema.

    Attributes:
        path: dotted path in the arguments (``*`` for an array's item position).
        name: the last path segment (the property name; ``*`` for an array item).
        label: human label (the schema's ``title`` or the name with ``_`` as spaces).
        kind: see ``Kind``.
        required: listed in the parent object's ``required``.
        nullable: ``null`` is allowed (``X | None``).
        description: the schema's ``description`` (a hint under the input), or ``""``.
        options: the allowed values of an ``enum`` field (strings, numbers or booleans).
        default: the schema's ``default`` (``None`` when it has none).
        multiline: a string field that gets a multi-line input.
        children: an object's properties, in schema order; an array's single item field.
    """

    path: str
    name: str
    label: str
    kind: Kind
    required: bool = False
    nullable: bool = False
    description: str = ""
    options: tuple[Any, ...] = ()
    default: Any = None
    multiline: bool = False
    children: tuple[FormField, ...] = field(default=())

    @property
    def item(self) -> FormField | None:
        """An array field's item field (``None`` for other kinds)."""
        return self.children[0] if self.kind == "array" and self.children else None


class SchemaError(ValueError):
    """The schema cannot be read (a ``$ref`` that points nowhere, a reference cycle)."""

def fields_from_schema(schema: dict[str, Any]) -> list[FormField]:
    """The top-level fields of an object schema, in ``properties`` order.

    Args:
        schema: a JSON schema of an object (pydantic ``model_json_schema()`` output); ``$ref``
            targets are looked up in its ``$defs`` (or ``definitions``).

    Returns:
        One ``FormField`` per property; nested objects and arrays carry their ``children``.
        A schema without ``properties`` gives ``[]``.

    Raises:
        SchemaError: a ``$ref`` not into this schema's ``$defs``/``definitions``, or nesting deeper
            than 12 levels (a recursive model).
    """
    return list(_object_children(schema, schema, "", 0))


def _resolve(root: dict[str, Any], node: dict[str, Any], depth: int) -> dict[str, Any]:
    """``node`` with a ``$ref`` (or a one-element ``allOf``) replaced by its target; the node's
    own ``description``/``default``/``title`` win over the target's."""
    if depth > 12:
        raise SchemaError("the schema nests too deeply (a recursive model?)")
    if "allOf" in node and len(node["allOf"]) == 1:
        extra = {k: v for k, v in node.items() if k != "allOf"}
        return _resolve(root, {**node["allOf"][0], **extra}, depth + 1)
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    for prefix, key in (("#/$defs/", "$defs"), ("#/definitions/", "definitions")):
        if ref.startswith(prefix) and ref[len(prefix):] in root.get(key, {}):
            target = root[key][ref[len(prefix):]]
            extra = {k: v for k, v in node.items() if k != "$ref"}
            return _resolve(root, {**target, **extra}, depth + 1)
    raise SchemaError(f"unknown reference {ref!r}")


def _split_nullable(root: dict[str, Any], node: dict[str, Any], depth: int) -> tuple[dict[str, Any], bool]:
    """(the non-null part of ``node``, whether ``null`` is allowed)."""
    node = _resolve(root, node, depth)
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if isinstance(options, list):
            rest = [o for o in options if o.get("type") != "null"]
            if len(rest) == 1 and len(rest) < len(options):
                extra = {k: v for k, v in node.items() if k != key}
                inner = _resolve(root, rest[0], depth + 1)
                return {**inner, **{k: v for k, v in extra.items() if k in ("title", "description", "default")}}, True
    types = node.get("type")
    if isinstance(types, list) and "null" in types:
        rest = [t for t in types if t != "null"]
        return {**node, "type": rest[0] if len(rest) == 1 else rest}, True
    return node, False


def _kind(node: dict[str, Any]) -> Kind:
    if "enum" in node or "const" in node:
        return "enum"
    kind = node.get("type")
    if kind in ("string", "number", "integer", "boolean", "array"):
        return kind
    if kind == "object" and "properties" in node:
        return "object"
    return "json"


def _label(name: str, node: dict[str, Any]) -> str:
    title = node.get("title")
    return title if isinstance(title, str) and title else name.replace("_", " ").capitalize()


def _field(root: dict[str, Any], raw: dict[str, Any], path: str, name: str, required: bool, depth: int) -> FormField:
    node, nullable = _split_nullable(root, raw, depth)
    kind = _kind(node)
    options = tuple(node["enum"]) if "enum" in node else ((node["const"],) if "const" in node else ())
    if kind == "object":
        children = tuple(_object_children(root, node, path, depth + 1))
    elif kind == "array":
        children = (_field(root, node.get("items") or {}, f"{path}.*", "*", True, depth + 1),)
    else:
        children = ()
    return FormField(
        path=path,
        name=name,
        label="Item" if name == "*" else _label(name, raw),
        kind=kind,
        required=required,
        nullable=nullable,
        description=str(raw.get("description") or node.get("description") or ""),
        options=options,
        default=node.get("default", raw.get("default")),
        multiline=kind == "string" and (
            node.get("format") == "textarea" or node.get("maxLength", 0) > 200 or name in MULTILINE_NAMES
        ),
        children=children,
    )


def _object_children(root: dict[str, Any], node: dict[str, Any], prefix: str, depth: int):
    node = _resolve(root, node, depth)
    required = set(node.get("required") or ())
    for name, sub in (node.get("properties") or {}).items():
        yield _field(root, sub, f"{prefix}.{name}" if prefix else name, name, name in required, depth)


# ----- the draft: edited arguments whose leaves may still be typed text -----


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
