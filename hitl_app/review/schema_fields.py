"""A tool's JSON schema read as form fields (pure).

The input is the JSON schema of a tool's arguments as pydantic writes it
(``Model.model_json_schema()``): ``properties`` with ``required``, ``$defs``/``$ref`` for nested
models and enums, ``anyOf: [X, {"type": "null"}]`` for ``X | None``. Paths as in
``hitl_app.review.schema_form`` (``address.city``; an array's item field uses ``*``:
``items.*.qty``).
"""

from __future__ import annotations

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
