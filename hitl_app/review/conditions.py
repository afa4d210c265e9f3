"""Conditions on an action request's arguments, written as text in the policy file (no ``eval``).

A condition is one or more comparisons joined by ``and``::

    amount > 1000
    amount >= 500 and to != "petty cash"

Each comparison is ``<argument name> <op> <literal>`` with ``op`` one of ``> >= < <= == !=`` and
the literal a number (``1000``, ``-2.5``, ``1e3``) or a quoted string (``"x"`` or ``'x'``, no
escapes). Strings compare only with ``==`` / ``!=``. Nothing else is accepted: no calls, no
attribute access, no arithmetic, so a policy file cannot run code.

Evaluation fails CLOSED: a condition selects a stricter review rule, so when an argument is
missing or cannot be compared (text where a number is expected, NaN, infinity, a list, ...) the
comparison counts as true and the stricter rule applies. A number may arrive as text (a model
may send ``"1500"``); text that reads as a finite number is compared as that number.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"[^"]*"|'[^']*')
      | (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
      | (?P<op>>=|<=|==|!=|>|<)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)

MAX_CONDITION_CHARS = 500
"""Longest condition text accepted."""


class ConditionError(ValueError):
    """A condition text that does not parse; ``str()`` is one plain line saying what is wrong."""


@dataclass(frozen=True)
class Comparison:
    """One ``field op value`` test.

    Attributes:
        field: the argument name, e.g. ``"amount"``.
        op: one of ``> >= < <= == !=``.
        value: a finite float, or a str (then ``op`` is ``==`` or ``!=``).
    """

    field: str
    op: str
    value: float | str

    def holds(self, args: Mapping[str, Any]) -> bool:
        """True when ``args[field] op value`` holds, or cannot be decided (fail closed)."""
        if self.field not in args:
            return True
        actual = args[self.field]
        if isinstance(self.value, str):
            return _OPS[self.op](actual, self.value) if isinstance(actual, str) else True
        number = _as_number(actual)
        return True if number is None else _OPS[self.op](number, self.value)

    def __str__(self) -> str:
        value = f'"{self.value}"' if isinstance(self.value, str) else f"{self.value:g}"
        return f"{self.field} {self.op} {value}"


@dataclass(frozen=True)
class Condition:
    """A parsed condition: all ``comparisons`` must hold (``and``).

    Attributes:
        text: the condition as written in the policy file (for messages).
        comparisons: at least one ``Comparison``.
    """

    text: str
    comparisons: tuple[Comparison, ...]

    def matches(self, args: Mapping[str, Any]) -> bool:
        """True when every comparison holds for ``args`` (a tool call's arguments)."""
        return all(c.holds(args) for c in self.comparisons)

    @property
    def fields(self) -> tuple[str, ...]:
        """The argument names the condition reads, in order, without repeats."""
        return tuple(dict.fromkeys(c.field for c in self.comparisons))


def _as_number(value: Any) -> float | None:
    """``value`` as a finite float, or None (bools, NaN, infinity, non-numeric text, other types)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip().replace(",", ""))
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def parse_condition(text: str) -> Condition:
    """Parse ``text`` (grammar in the module docstring) into a ``Condition``.

    Raises:
        ConditionError: not a string, empty, over 500 characters, an unknown token, a comparison
            that is not ``name op literal``, a string compared with ``<``/``>``, a non-finite
            number, or a dangling ``and``.
    """
    if not isinstance(text, str):
        raise ConditionError("must be a string like \"amount > 1000\"")
    if not text.strip():
        raise ConditionError("is empty; write a comparison like \"amount > 1000\"")
    if len(text) > MAX_CONDITION_CHARS:
        raise ConditionError(f"is longer than {MAX_CONDITION_CHARS} characters")
    tokens = _tokens(text)
    comparisons: list[Comparison] = []
    i = 0
    while True:
        comparisons.append(_comparison(tokens[i : i + 3], text))
        i += 3
        if i == len(tokens):
            return Condition(text=text.strip(), comparisons=tuple(comparisons))
        if tokens[i] != ("name", "and") or i + 1 == len(tokens):
            raise ConditionError(f"{text.strip()!r}: expected 'and' and another comparison after {tokens[i - 1][1]!r}")
        i += 1


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    stripped_end = len(text.rstrip())
    while pos < stripped_end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            bad = text[pos:].strip()[:20]
            raise ConditionError(
                f"{text.strip()!r}: cannot read {bad!r}; use name op value with op one of > >= < <= == !="
            )
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


def _comparison(part: list[tuple[str, str]], text: str) -> Comparison:
    kinds = [k for k, _ in part]
    where = text.strip()
    if len(part) < 3 or kinds[0] != "name" or kinds[1] != "op" or kinds[2] not in ("number", "string"):
        raise ConditionError(
            f"{where!r}: each comparison must be <argument> <op> <number or \"text\">, e.g. amount > 1000"
        )
    (_, field), (_, op), (kind, raw) = part
    if field == "and":
        raise ConditionError(f"{where!r}: 'and' is not an argument name")
    if kind == "string":
        if op not in ("==", "!="):
            raise ConditionError(f"{where!r}: text can only be compared with == or != (not {op})")
        return Comparison(field, op, raw[1:-1])
    value = float(raw)
    if not math.isfinite(value):
        raise ConditionError(f"{where!r}: {raw} is not a finite number")
    return Comparison(field, op, value)
