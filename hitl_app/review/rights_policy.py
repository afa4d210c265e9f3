"""The review-rights part of the policy: the rule types and their reading from a policy table.

In the policy file (TOML) a tool's table may carry, beside its review config keys::

    [tools.transfer_funds]
    reviewers = ["reviewer", "dana@example.com"]  # roles, account emails, or "owner"
    self_approval = false                        # the person who asked may not approve
    approvals = 1                                # distinct approvals needed

    [[tools.transfer_funds.rules]]               # stricter rules, first match wins
    when = "amount > 1000"                       # a condition on the arguments
    approvals = 2                                # keys set here override the tool's

Unset keys keep today's single-user behaviour: ``reviewers = ["owner"]`` (the thread's owner),
``self_approval = true``, ``approvals = 1``. ``parse_tool_rights`` reads these keys from one tool's
table (already decoded from TOML) and refuses anything it does not understand, with one plain
line per mistake. Pure: no I/O, nothing of the app imported.
"""

# Tested by: tests/unit/agent/test_policy_rights.py - through the policy file's rights rules

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from hitl_app.review.conditions import Condition, ConditionError, parse_condition

OWNER = "owner"
"""The ``reviewers`` entry meaning the thread's owner (the person who asked)."""

ROLES: tuple[str, ...] = ("member", "reviewer", "admin")
"""The roles, lowest first; a role covers every role before it."""

RIGHTS_KEYS: frozenset[str] = frozenset({"reviewers", "self_approval", "approvals", "rules"})
"""The keys of a tool's table read by ``parse_tool_rights``."""

MAX_APPROVALS = 10
"""The largest ``approvals`` accepted."""

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_RULE_ENTRY_KEYS = frozenset({"when", "reviewers", "self_approval", "approvals"})


class RightsPolicyError(ValueError):
    """A review-rights key that cannot be used; ``str()`` is one line starting with the key."""


@dataclass(frozen=True)
class ReviewRule:
    """Who may decide one action request and how many approvals it needs.

    Attributes:
        reviewers: non-empty; each entry is ``"owner"``, a role in ``ROLES`` or an email.
        self_approval: False = the person who asked may not approve or edit it.
        approvals: distinct approvals needed, >= 1.
    """

    reviewers: tuple[str, ...] = (OWNER,)
    self_approval: bool = True
    approvals: int = 1


DEFAULT_RULE = ReviewRule()
"""The thread's owner decides, self-approval allowed, one approval."""


@dataclass(frozen=True)
class ConditionalRule:
    """A stricter rule for the action requests whose arguments match ``when``.

    Attributes:
        when: the condition on the arguments (see ``hitl_app.review.conditions``).
        reviewers / self_approval / approvals: the keys it overrides; None keeps the base value.
    """

    when: Condition
    reviewers: tuple[str, ...] | None = None
    self_approval: bool | None = None
    approvals: int | None = None

    def apply(self, base: ReviewRule) -> ReviewRule:
        """``base`` with this rule's keys set over it."""
        return ReviewRule(
            reviewers=base.reviewers if self.reviewers is None else self.reviewers,
            self_approval=base.self_approval if self.self_approval is None else self.self_approval,
            approvals=base.approvals if self.approvals is None else self.approvals,
        )


@dataclass(frozen=True)
class ToolRights:
    """One tool's review rights: a base rule and conditional rules, first match wins."""

    base: ReviewRule = DEFAULT_RULE
    rules: tuple[ConditionalRule, ...] = ()

    def rule_for(self, args: Mapping[str, Any]) -> ReviewRule:
        """The rule for an action request with ``args``: the first matching conditional rule
        applied over ``base``, else ``base``."""
        for rule in self.rules:
            if rule.when.matches(args or {}):
                return rule.apply(self.base)
        return self.base

    def escalated(self, role: str) -> ToolRights:
        """These rights once a deadline escalated the review to ``role`` (one of ``ROLES``):
        ``role`` is added to the reviewers of the base rule and of every rule that names its own
        (the other keys stay: approvals and self-approval still hold)."""
        if not role:
            return self
        def widen(reviewers: tuple[str, ...]) -> tuple[str, ...]:
            return reviewers if role in reviewers else (*reviewers, role)
        rules = tuple(replace(r, reviewers=widen(r.reviewers)) if r.reviewers is not None else r for r in self.rules)
        return ToolRights(base=replace(self.base, reviewers=widen(self.base.reviewers)), rules=rules)

    def describe(self) -> dict[str, Any]:
        """Plain data: ``{"reviewers", "self_approval", "approvals", "rules": [{"when", ...}]}``."""
        rules = []
        for r in self.rules:
            entry: dict[str, Any] = {"when": r.when.text}
            if r.reviewers is not None:
                entry["reviewers"] = list(r.reviewers)
            if r.self_approval is not None:
                entry["self_approval"] = r.self_approval
            if r.approvals is not None:
                entry["approvals"] = r.approvals
            rules.append(entry)
        base = self.base
        return {"reviewers": list(base.reviewers), "self_approval": base.self_approval,
                "approvals": base.approvals, "rules": rules}


DEFAULT_RIGHTS = ToolRights()
"""Rights of a tool the policy says nothing about: ``DEFAULT_RULE`` for every action request."""


def rights_in_force(rights: Mapping[str, ToolRights], tool: str, escalated_to: str | None = None) -> ToolRights:
    """The review rights of ``tool`` on one review: the policy's (``rights``: tool name -> rights; a
    tool not named gets ``DEFAULT_RIGHTS``), widened to the role ``escalated_to`` once the review's
    deadline escalated it (``ToolRights.escalated``; None or ``""``: not escalated)."""
    base = rights.get(tool, DEFAULT_RIGHTS)
    return base.escalated(escalated_to) if escalated_to else base


def parse_tool_rights(table: Mapping[str, Any]) -> ToolRights:
    """Read ``reviewers``, ``self_approval``, ``approvals`` and ``rules`` from a tool's table.

    Other keys of ``table`` are ignored (the caller checks them).

    Raises:
        RightsPolicyError: wrong types, an unknown role, a malformed email, ``approvals`` outside
            1..10, a rule without ``when`` or without a key to set, an unknown key in a rule, a
            ``when`` that does not parse, or a rule nobody could satisfy (e.g. two approvals when
            only the person who asked may decide). The message starts with the key, e.g.
            ``rules[1] when: ...``.
    """
    base = ReviewRule(
        reviewers=_reviewers(table, "reviewers") or DEFAULT_RULE.reviewers,
        self_approval=_flag(table, "self_approval", DEFAULT_RULE.self_approval),
        approvals=_count(table, "approvals") or DEFAULT_RULE.approvals,
    )
    _check_reachable(base, "")
    raw_rules = table.get("rules", [])
    if not isinstance(raw_rules, list) or not all(isinstance(r, Mapping) for r in raw_rules):
        raise RightsPolicyError("rules: must be an array of tables ([[tools.<name>.rules]])")
    rules = tuple(_conditional(entry, f"rules[{i}] ", base) for i, entry in enumerate(raw_rules))
    return ToolRights(base=base, rules=rules)


def _conditional(entry: Mapping[str, Any], where: str, base: ReviewRule) -> ConditionalRule:
    unknown = sorted(set(entry) - _RULE_ENTRY_KEYS)
    if unknown:
        raise RightsPolicyError(f"{where.strip()}: unknown key(s) {unknown}; allowed: {sorted(_RULE_ENTRY_KEYS)}")
    if "when" not in entry:
        raise RightsPolicyError(f"{where}when: missing; write the condition, e.g. when = \"amount > 1000\"")
    try:
        when = parse_condition(entry["when"])
    except ConditionError as exc:
        raise RightsPolicyError(f"{where}when: {exc}") from None
    if not set(entry) & {"reviewers", "self_approval", "approvals"}:
        raise RightsPolicyError(f"{where.strip()}: sets nothing; add reviewers, self_approval or approvals")
    rule = ConditionalRule(
        when=when,
        reviewers=_reviewers(entry, "reviewers", where),
        self_approval=_flag(entry, "self_approval", None, where),
        approvals=_count(entry, "approvals", where),
    )
    _check_reachable(rule.apply(base), where)
    return rule


def _reviewers(table: Mapping[str, Any], key: str, where: str = "") -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise RightsPolicyError(f"{where}{key}: must be a non-empty list of roles or emails, e.g. [\"reviewer\"]")
    out: list[str] = []
    for raw in value:
        entry = raw.strip()
        if entry.lower() in (*ROLES, OWNER):
            entry = entry.lower()
        elif not _EMAIL.match(entry):
            raise RightsPolicyError(
                f"{where}{key}: {raw!r} is not a role ({', '.join(ROLES)}), \"owner\" or an email address"
            )
        if entry not in out:
            out.append(entry)
    return tuple(out)


def _flag(table: Mapping[str, Any], key: str, default: bool | None, where: str = "") -> Any:
    if key not in table:
        return default
    if not isinstance(table[key], bool):
        raise RightsPolicyError(f"{where}{key}: must be true or false (without quotes)")
    return table[key]


def _count(table: Mapping[str, Any], key: str, where: str = "") -> int | None:
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_APPROVALS:
        raise RightsPolicyError(f"{where}{key}: must be a whole number from 1 to {MAX_APPROVALS}")
    return value


def _check_reachable(rule: ReviewRule, where: str) -> None:
    """Refuse a rule no set of people can complete (few named approvers, owner-only without self-approval)."""
    if any(r in ROLES for r in rule.reviewers):
        return  # a role may hold any number of accounts
    people = len([r for r in rule.reviewers if r != OWNER]) + (OWNER in rule.reviewers and rule.self_approval)
    if people < rule.approvals:
        who = "nobody" if people == 0 else f"only {people} {'person' if people == 1 else 'people'}"
        raise RightsPolicyError(
            f"{where}approvals: {rule.approvals} needed but {who} may approve "
            f"(reviewers = {list(rule.reviewers)}, self_approval = {str(rule.self_approval).lower()})"
        )
