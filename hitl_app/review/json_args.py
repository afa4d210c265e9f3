"""Edited arguments checked against a JSON schema (an MCP tool's ``inputSchema``); ``ArgsError`` and
``ArgsValidator``, the words every arguments check uses (``hitl_app.review.validate`` re-exports them).

``json_schema_args_validator(schema)`` is an ``ArgsValidator`` (``hitl_app.review.validate``): the
card's form and JSON editor are built from the same schema (``check.json_schema``), and the server
checks every edit with it before anything resumes, so an edit the MCP server would refuse is refused
on the card first. Unknown fields are refused when the schema lists its properties (a server built
on pydantic drops them silently). Uses ``jsonschema`` (a dependency of the ``mcp`` SDK).
"""

# Tested by: tests/unit/agent/test_mcp_policy.py

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.exceptions import best_match as best_error

ArgsValidator = Callable[[dict[str, Any]], None]
"""Checks edited tool arguments; raises ``ArgsError`` with a readable message when they do not fit."""


class ArgsError(ValueError):
    """Edited arguments do not fit the tool's argument schema (message names the field)."""


def json_schema_args_validator(schema: Mapping[str, Any]) -> ArgsValidator:
    """An ``ArgsValidator`` for ``schema`` (a JSON schema of an object).

    Raises (from the returned check) ``ArgsError`` naming the field: "field `title` must be
    string (got 5)", "field `title` is required", "unknown field `x` (this tool takes: ...)".
    A schema that is itself invalid checks only that the arguments are an object.
    """
    schema = dict(schema)
    try:
        Draft202012Validator.check_schema(schema)
        validator: Draft202012Validator | None = Draft202012Validator(schema)
    except SchemaError:
        validator = None
    props = schema.get("properties")
    known = set(props) if isinstance(props, dict) else None

    def check(args: dict[str, Any]) -> None:
        if known is not None and schema.get("additionalProperties") is not True:
            unknown = sorted(set(args) - known)
            if unknown:
                raise ArgsError(
                    f"unknown field `{unknown[0]}` (this tool takes: {', '.join(sorted(known)) or 'no arguments'})"
                )
        if validator is None:
            return
        error = best_error(validator.iter_errors(args))
        if error is None:
            return
        field = ".".join(str(p) for p in error.absolute_path) or "arguments"
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else "?"
            raise ArgsError(f"field `{missing}` is required")
        if error.validator == "type":
            raise ArgsError(f"field `{field}` must be {error.validator_value} (got {error.instance!r:.60})")
        raise ArgsError(f"field `{field}`: {error.message[:200]}")

    check.json_schema = schema  # type: ignore[attr-defined]
    return check
