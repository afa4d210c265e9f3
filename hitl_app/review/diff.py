"""Field-by-field differences between a tool call's proposed and edited arguments (pure).

Used on the approval card before submit ("what will change") and in the thread after the run
("edited by Dana: to: alice@example.com -> bob@example.com"). Nested objects are compared key by
key and lists position by position, so a change deep inside shows as ``items.1.qty: 2 -> 3``
rather than as the whole list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

ChangeKind = Literal["changed", "added", "removed"]
MAX_VALUE_CHARS = 60
"""Longer values are cut with "…" in the human texts (the ``FieldChange`` keeps them whole)."""


@dataclass(frozen=True)
class FieldChange:
    """One difference between proposed and edited arguments.

    Attributes:
        path: dotted path (``to``, ``address.city``, ``items.0``), list positions as numbers.
        kind: ``changed`` (both have it, values differ), ``added`` (only the edit has it),
            ``removed`` (only the proposal has it).
        before: the proposed value (``None`` for ``added``).
        after: the edited value (``None`` for ``removed``).
    """

    path: str
    kind: ChangeKind
    before: Any = None
    after: Any = None

    @property
    def text(self) -> str:
        """One line for people: ``to: a@x.com -> b@x.com``, ``cc: added b@x.com``,
        ``priority: removed "high"``... values cut to ``MAX_VALUE_CHARS``."""
        if self.kind == "added":
            return f"{self.path}: added {show_value(self.after)}"
        if self.kind == "removed":
            return f"{self.path}: removed {show_value(self.before)}"
        quote = _needs_quotes(self.before) or _needs_quotes(self.after)  # both sides alike
        return f"{self.path}: {show_value(self.before, quote=quote)} -> {show_value(self.after, quote=quote)}"


def _needs_quotes(value: Any) -> bool:
    """A string that would not read right bare: empty, padded with spaces, or on several lines."""
    return isinstance(value, str) and (not value or value.strip() != value or "\n" in value)


def show_value(value: Any, *, quote: bool = False) -> str:
    """``value`` as short text: a non-empty one-line string as is (in JSON quotes with ``quote``,
    e.g. when the other side of a change needs them), anything else as JSON; cut to
    ``MAX_VALUE_CHARS`` characters with "…", inside its closing quote."""
    if isinstance(value, str) and not quote and not _needs_quotes(value):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
    if len(text) <= MAX_VALUE_CHARS:
        return text
    if isinstance(value, str) and text.startswith('"'):
        return text[: MAX_VALUE_CHARS - 2] + '…"'
    return text[: MAX_VALUE_CHARS - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1`` and ``True`` differ, ``1`` and ``1.0`` do not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def diff_args(proposed: Any, edited: Any) -> list[FieldChange]:
    """The differences from ``proposed`` to ``edited`` arguments, field by field.

    Args:
        proposed: the arguments the model proposed (usually a dict).
        edited: the arguments after the reviewer's edit.

    Returns:
        Changes in a stable order: the proposal's keys in their order (each with its nested
        changes), then keys only the edit has, in the edit's order; list items by position.
        Two objects or two lists are compared inside; any other pair of unequal values (also a
        string replaced by an object) is one ``changed`` entry. Equal arguments give ``[]``.
    """
    changes: list[FieldChange] = []
    _walk(proposed, edited, "", changes)
    return changes


def _join(prefix: str, key: str | int) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _walk(before: Any, after: Any, path: str, out: list[FieldChange]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            if key in after:
                _walk(value, after[key], _join(path, key), out)
            else:
                out.append(FieldChange(_join(path, key), "removed", before=value))
        out.extend(FieldChange(_join(path, k), "added", after=v) for k, v in after.items() if k not in before)
    elif isinstance(before, list) and isinstance(after, list):
        for i in range(max(len(before), len(after))):
            if i >= len(after):
                out.append(FieldChange(_join(path, i), "removed", before=before[i]))
            elif i >= len(before):
                out.append(FieldChange(_join(path, i), "added", after=after[i]))
            else:
                _walk(before[i], after[i], _join(path, i), out)
    elif not _same(before, after):
        out.append(FieldChange(path or "arguments", "changed", before=before, after=after))


def summarize(changes: list[FieldChange], limit: int = 3) -> str:
    """One line for a thread or a log: the first ``limit`` changes joined with "; ", then
    "(+N more)"; ``"no changes"`` for ``[]``.

    Example: ``"to: alice@example.com -> bob@example.com; cc: added carol@example.com"``.
    """
    if not changes:
        return "no changes"
    head = "; ".join(c.text for c in changes[:limit])
    more = len(changes) - limit
    return f"{head} (+{more} more)" if more > 0 else head


@dataclass
class DiffLine:
    """A ``FieldChange`` as texts for a UI table: ``path``, ``kind``, the ``before`` and ``after``
    values (``show_value``, ``""`` where there is none) and the one-line ``text``."""

    path: str
    kind: str
    before: str
    after: str
    text: str


def diff_lines(changes: list[FieldChange]) -> list[DiffLine]:
    """``changes`` as ``DiffLine`` rows, same order."""
    return [
        DiffLine(
            path=c.path,
            kind=c.kind,
            before="" if c.kind == "added" else show_value(c.before),
            after="" if c.kind == "removed" else show_value(c.after),
            text=c.text,
        )
        for c in changes
    ]
