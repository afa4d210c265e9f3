"""Review rights: who may decide an approval card, which decisions count, and when a card is done.

Pure rules, no I/O. The policy gives each tool a ``ToolRights``: a base ``ReviewRule`` and
optional ``ConditionalRule`` s whose condition on the action request's arguments selects a stricter
rule (the first that matches applies its keys over the base). A ``ReviewRule`` says:

* ``reviewers``: who may decide, as roles (``"member"``, ``"reviewer"``, ``"admin"``), account
  emails, or ``"owner"`` (the thread's owner, i.e. the person who asked). Roles rank
  member < reviewer < admin and a higher role covers a lower one: an admin counts as a reviewer.
* ``self_approval``: whether the person who asked may approve (or edit) their own action request.
* ``approvals``: how many distinct people must approve (a two-person rule is ``approvals = 2``).

The default rule (``DEFAULT_RULE``) is today's single-user behaviour: the thread's owner decides,
may approve their own request, and one approval is enough.

Decision types split in two: ``approve`` and ``edit`` APPROVE the action; ``reject`` and
``respond`` are FINAL without running it. One final decision from someone who may decide ends the
card at once. The person who asked may always ``reject`` (withdraw) their own request when the tool
allows ``reject``, even when someone else must approve it. With ``approvals > 1`` ``edit`` is not
offered: every approver must approve the same arguments.

Use: build a ``Card`` for one action request (``Card.for_request``), ask ``may_decide`` what the
acting person may do (for the UI), ``check_decision`` before accepting a decision (the server is
the authority), ``Card.with_decision`` to record it, and ``progress`` for the card's state
("1 of 2 approvals: Dana"). Every refusal carries a plain sentence to show as is. A signed-out
or disabled session has no ``Person``: the caller refuses it before asking these rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hitl_app.review.rights_policy import (
    DEFAULT_RIGHTS,
    DEFAULT_RULE,
    OWNER,
    ROLES,
    ConditionalRule,
    ReviewRule,
    RightsPolicyError,
    ToolRights,
    parse_tool_rights,
    rights_in_force,
)
from hitl_app.review.rights_types import DecisionRights, Person, Progress, RecordedDecision, RightsRefused, Verdict
from hitl_app.review.rights_words import article, names_text, ordinal, who_else_may_decide, who_may_decide
from hitl_app.review.types import DECISION_TYPES

APPROVING: frozenset[str] = frozenset({"approve", "edit"})
"""Decision types that let the action run; they count toward ``approvals``."""

FINAL: frozenset[str] = frozenset({"reject", "respond"})
"""Decision types that end the card without running the action."""


__all__ = [
    "APPROVING", "DECISION_TYPES", "DEFAULT_RIGHTS", "DEFAULT_RULE", "FINAL", "OWNER", "ROLES", "Card",
    "ConditionalRule", "DecisionRights", "Person", "Progress", "RecordedDecision", "ReviewRule", "RightsPolicyError",
    "RightsRefused", "ToolRights", "Verdict", "check_decision", "is_listed", "may_decide", "parse_tool_rights",
    "progress", "rights_in_force", "who_else_may_decide", "who_may_decide",
]


@dataclass(frozen=True)
class Card:
    """One action request under review, with what the rules need.

    Attributes:
        tool: the action request's ``name``.
        args: its arguments as proposed (the rule is chosen from these).
        allowed_decisions: the review config's ``allowed_decisions``.
        owner_id: the thread owner's account id as text (``""`` when unknown: nobody is the asker).
        rights: the tool's ``ToolRights``.
        recorded: decisions accepted so far, oldest first.
    """

    tool: str
    args: Mapping[str, Any]
    allowed_decisions: tuple[str, ...]
    owner_id: str
    rights: ToolRights = DEFAULT_RIGHTS
    recorded: tuple[RecordedDecision, ...] = field(default=())

    @classmethod
    def for_request(
        cls,
        action_request: Mapping[str, Any],
        allowed_decisions: Sequence[str],
        *,
        owner_id: str,
        rights: ToolRights = DEFAULT_RIGHTS,
        recorded: Sequence[RecordedDecision] = (),
    ) -> Card:
        """A card from a HITL action request ``{"name", "args", ...}`` and its review config's
        ``allowed_decisions``."""
        return cls(
            tool=str(action_request.get("name", "")),
            args=dict(action_request.get("args") or {}),
            allowed_decisions=tuple(allowed_decisions),
            owner_id=str(owner_id or ""),
            rights=rights,
            recorded=tuple(recorded),
        )

    @property
    def rule(self) -> ReviewRule:
        """The rule in force for this card (chosen by its arguments)."""
        return self.rights.rule_for(self.args)

    def with_decision(self, person: Person, decision_type: str, *, edited_args: Mapping[str, Any] | None = None) -> Card:
        """This card with ``person``'s decision recorded.

        Raises:
            RightsRefused: ``check_decision`` refused it (``str()`` is the message to show).
        """
        verdict = check_decision(self, person, decision_type, edited_args=edited_args)
        if not verdict.allowed:
            raise RightsRefused(verdict.message)
        return replace(self, recorded=(*self.recorded, RecordedDecision.of(person, decision_type)))


# ---- the rules ---------------------------------------------------------------------------------

def _rank(role: object) -> int:
    text = str(role).lower()
    return ROLES.index(text) if text in ROLES else -1


def is_listed(rule: ReviewRule, person: Person, *, is_owner: bool) -> bool:
    """True when ``person`` is one of ``rule.reviewers`` (as the owner, by role, or by email)."""
    email = (person.email or "").strip().casefold()
    for entry in rule.reviewers:
        if entry == OWNER:
            if is_owner:
                return True
        elif entry in ROLES:
            if _rank(person.role) >= ROLES.index(entry):
                return True
        elif email and entry.strip().casefold() == email:
            return True
    return False


def may_decide(card: Card, person: Person) -> DecisionRights:
    """The decision types ``person`` may send on ``card`` now, and why others are closed.

    Rules, in order: a decided card takes nothing; someone not in the rule's reviewers may
    decide nothing, except that the person who asked may withdraw (reject); the person who asked
    may not approve or edit where ``self_approval`` is off; someone who already approved may not
    approve again (they may still reject); with ``approvals > 1`` nobody may edit.
    """
    state = progress(card)
    if state.complete:
        return DecisionRights((), f"This card is already decided ({state.text}).")
    rule, me = card.rule, str(person.account_id)
    is_owner = bool(card.owner_id) and me == card.owner_id
    reasons: dict[str, str] = {}
    if not is_listed(rule, person, is_owner=is_owner):
        if OWNER in rule.reviewers and len(rule.reviewers) == 1:
            refusal = f"Only the person who asked can decide {card.tool}"
        else:
            refusal = f"{card.tool} needs {who_may_decide(rule)}; you are {article(person.role)}"
        closed = [t for t in card.allowed_decisions if not (is_owner and t == "reject")]
        reasons.update(dict.fromkeys(closed, refusal))
    else:
        if is_owner and not rule.self_approval:
            reasons.update(dict.fromkeys(APPROVING, "You asked for this action; someone else must approve it"))
        if me in {r.account_id for r in _counted(card)}:
            reasons.update(dict.fromkeys(
                APPROVING, f"You already approved this; it needs a {ordinal(len(state.approvers) + 1)} reviewer"
            ))
        if rule.approvals > 1:
            reasons.setdefault(
                "edit", f"{card.tool} needs {rule.approvals} approvals of the same arguments; approve or reject it"
            )
    reasons = {t: m for t, m in reasons.items() if t in card.allowed_decisions}
    allowed = tuple(t for t in card.allowed_decisions if t in DECISION_TYPES and t not in reasons)
    note = next((reasons[t] for t in card.allowed_decisions if t in reasons), "")
    return DecisionRights(allowed, note, reasons)


def check_decision(
    card: Card, person: Person, decision_type: str, *, edited_args: Mapping[str, Any] | None = None
) -> Verdict:
    """May ``person`` send ``decision_type`` on ``card`` now?

    ``edited_args`` (for ``edit``) must select the same rule as the original arguments, so an
    edit cannot move an action request out of a stricter rule (or into one it was not reviewed
    under).

    Returns:
        ``Verdict(allowed, counts, message)``; ``message`` is the refusal to show.
    """
    if decision_type not in DECISION_TYPES:
        return Verdict(False, message=f"Unknown decision {decision_type!r}")
    if decision_type not in card.allowed_decisions:
        options = " or ".join(card.allowed_decisions) or "nothing"
        return Verdict(False, message=f"{card.tool} can only be decided with {options}, not {decision_type}")
    rights = may_decide(card, person)
    if decision_type not in rights.allowed:
        return Verdict(False, message=rights.reasons.get(decision_type) or rights.note)
    if decision_type == "edit" and edited_args is not None and card.rights.rule_for(edited_args) != card.rule:
        return Verdict(False, message=(
            f"This edit changes the review rule for {card.tool} (who must approve it); reject it and ask again instead"
        ))
    return Verdict(True, counts=decision_type in APPROVING)


def _counted(card: Card) -> list[RecordedDecision]:
    """The approvals that count: approving, one per person, not the asker's where self-approval is off."""
    rule, seen, out = card.rule, set(), []
    for rec in card.recorded:
        if rec.type not in APPROVING or rec.account_id in seen:
            continue
        if not rule.self_approval and card.owner_id and rec.account_id == card.owner_id:
            continue
        seen.add(rec.account_id)
        out.append(rec)
    return out


def progress(card: Card) -> Progress:
    """The card's state from its recorded decisions (recounted under the card's rule)."""
    needed = card.rule.approvals
    counted = _counted(card)
    names = tuple(r.display_name for r in counted)
    unit = "approval" if needed == 1 else "approvals"
    final = next((r for r in card.recorded if r.type in FINAL), None)
    if final is not None:
        verb = "Rejected" if final.type == "reject" else "Answered"
        return Progress(needed, names, True, final, f"{verb} by {final.display_name}")
    if len(counted) >= needed:
        text = f"Approved by {names_text(names)}" if needed == 1 else f"{needed} of {needed} approvals: {names_text(names)}"
        return Progress(needed, names, True, counted[needed - 1], text)
    text = f"{len(counted)} of {needed} {unit}" + (f": {names_text(names)}" if names else "")
    return Progress(needed, names, False, None, text)
