"""A decided review in a few words per card: what the undo window shows while the run waits.

``decided_lines`` reads the decisions the server will resume with (``ScheduledResume.decisions``,
one payload per action request, in order) beside the action requests, and says for each card the
tool, the decision in words and what goes with it: an edit's arguments and what changed, a reject's
reason, an answer. Pure: no database, no UI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from hitl_app.review.diff import diff_args, show_value, summarize
from hitl_app.review.types import (
    DECISION_STYLES,
    AnyDecision,
    Decision,
    EditDecision,
    PendingReview,
    RejectDecision,
    RespondDecision,
)

VERBS = {kind: style.past for kind, style in DECISION_STYLES.items()}
"""A decision type -> the word a card's line shows (``DecisionStyle.past``: "approved", "answered")."""

_DECISION: TypeAdapter[AnyDecision] = TypeAdapter(Decision)


class DecidedLine(BaseModel):
    """One card of a decided review, in words.

    Attributes:
        index: the card's position (0-based, the action request's order).
        tool: the tool the card is for.
        decision: ``approve``, ``edit``, ``reject``, ``respond`` (``""``: no readable decision).
        verb: the decision in words: ``approved``, ``edited``, ``rejected``, ``answered``
            (``"decided"`` when the stored decision cannot be read).
        detail: the reject's reason (``""`` when none was given), the answer, or for an edit
            what changed (``"to: a@x.com -> b@x.com"``); ``""`` for an approval.
        args: an edit's arguments as one line of JSON; an approval's as the card showed them,
            compact (``"to: bob@example.com, subject: plans"``); ``""`` for the other decisions.
        by: who decided the card (``"Rex"``, ``"Rex and Rita"`` for a two-approval card; ``""`` unknown).
    """

    index: int
    tool: str
    decision: str = ""
    verb: str = "decided"
    detail: str = ""
    args: str = ""
    by: str = ""


def compact_args(args: Mapping[str, Any]) -> str:
    """``args`` in one short line, each value as a card row shows it (``show_value``):
    ``"amount: 500, to: Bob"``; ``""`` for none."""
    return ", ".join(f"{key}: {show_value(value)}" for key, value in args.items())


def decided_line(index: int, tool: str, proposed: Mapping[str, Any], payload: Any) -> DecidedLine:
    """Card ``index``'s line from its stored decision ``payload`` (a ``decision_payload`` dict).

    A payload that is not a valid decision gives ``verb="decided"`` and no detail (never raises).
    """
    try:
        decision = _DECISION.validate_python(payload)
    except ValidationError:
        return DecidedLine(index=index, tool=tool)
    line = DecidedLine(index=index, tool=tool, decision=decision.type, verb=VERBS[decision.type])
    if isinstance(decision, EditDecision):
        edited = decision.edited_action.args
        line.detail = summarize(diff_args(dict(proposed), edited))
        line.args = json.dumps(edited, ensure_ascii=False, default=str)
    elif isinstance(decision, RejectDecision | RespondDecision):
        line.detail = (decision.message or "").strip()
    else:
        line.args = compact_args(proposed)
    return line


def decided_lines(review: PendingReview, payloads: Sequence[Any], by: Mapping[int, str] | None = None) -> list[DecidedLine]:
    """One ``DecidedLine`` per action request of ``review``, from ``payloads`` (the decisions
    the run resumes with, in the same order); a card without a payload reads ``"decided"``.
    ``by``: card index -> who decided it (``store.reviews.reviewers_by_card``)."""
    lines = [
        decided_line(i, action.name, action.args, payloads[i] if i < len(payloads) else None)
        for i, action in enumerate(review.action_requests)
    ]
    for line in lines:
        line.by = (by or {}).get(line.index, "")
    return lines
