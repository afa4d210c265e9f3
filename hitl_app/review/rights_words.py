"""Review rights in words: who may decide a rule, a role with its article, names in a list.

The sentences ``hitl_app.review.rights`` builds its refusals and progress lines from.
"""

# Tested by: tests/unit/review/test_rights.py

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hitl_app.review.rights_policy import OWNER, ROLES, ReviewRule


def who_may_decide(rule: ReviewRule) -> str:
    """``rule.reviewers`` in words, e.g. ``"a reviewer or dana@example.com"``."""
    roles = [r for r in rule.reviewers if r in ROLES]
    parts = []
    if OWNER in rule.reviewers:
        parts.append("the person who asked")
    if roles:
        lowest = min(roles, key=ROLES.index)
        parts.append(("an " if lowest == "admin" else "a ") + lowest)
    parts += [r for r in rule.reviewers if r != OWNER and r not in ROLES]
    return " or ".join(parts)


def who_else_may_decide(rule: ReviewRule) -> str:
    """Who besides the person who asked may decide under ``rule``, in words (``"a reviewer"``);
    ``""`` when only the person who asked may."""
    others = tuple(r for r in rule.reviewers if r != OWNER)
    return who_may_decide(replace(rule, reviewers=others)) if others else ""


def ordinal(n: int) -> str:
    """``2`` -> ``"second"`` (``"6th"`` past five)."""
    words = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}
    return words.get(n, f"{n}th")


def article(role: object) -> str:
    """A role with its article: ``"a reviewer"``, ``"an admin"`` (``"a signed out"`` for none)."""
    text = str(role) or "signed out"
    return ("an " if text[:1].lower() in "aeiou" else "a ") + text


def names_text(names: Sequence[str]) -> str:
    """``["Ann", "Bo", "Cy"]`` -> ``"Ann, Bo and Cy"``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
