"""The approval cards' rows the UI renders: one ``CardRow`` per action request of a pending review,
its typed argument rows, its status for the viewer, and a decided card while its undo window is open
(built from review/ and threads/ views; never table models)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hitl_app.review.diff import DiffLine
from hitl_app.review.draft import WAITING
from hitl_app.review.form_rows import FormRow
from hitl_app.review.shown import shown_controls
from hitl_app.review.types import QUESTION_SUFFIX, PendingReview
from hitl_app.threads.views import CardStatus
from hitl_app.ui.review_text import waiting_for
from hitl_app.ui.rows import pretty


@dataclass
class ArgRow:
    """One argument on a card: ``key``, its JSON ``value`` and the JSON ``type_name``."""

    key: str
    value: str
    type_name: str


@dataclass
class CardRow:
    """One approval card. ``choice`` is the decision picked so far ("" when undecided).

    ``allowed`` are the decisions the signed-in person may send (the buttons shown); ``progress``
    the card's line ("1 of 2 approvals: Dana"), shown when ``show_progress``; ``note`` why some
    or all buttons are missing; ``others_may_decide`` whether someone other than this person may decide it
    (then it may be left for them); ``standing`` the server's word on the card for this person
    (``open``, ``waiting`` for someone else, ``complete``: ``review.draft``); ``remaining``,
    ``my_decision_in`` and ``others_who_decide`` the server's approvals still needed, whether this person's decision
    is in, and who else may decide, ``asks_approval`` whether the review config allows approve or edit (False:
    a question; for the composer line, ``review_text.composer_line``); ``waits_for`` whom a waiting
    card waits for, in words (``review_text.waiting_for``, "" on a card not waiting). ``risk``/``risk_note``:
    the policy's level and line; ``reject_stop``: a reject ends the run ("reject and stop"; default
    from the policy's ``on_reject``, switched on the card). ``question``: an MCP server's question
    (Accept / Decline / Cancel); ``reject_cancel``: its refusal is "cancel", not "decline".
    ``server``/``server_tool``/``hints``/``server_trusted``: an MCP tool's server, its own name there,
    the server's hint badges in words and whether the policy trusts them
    (``hitl_app.review.tool_origin``; ``server`` is "" for a built-in tool).

    The editor (``hitl_app.ui.card_edit``): ``mode`` ``form`` or ``json`` over one draft;
    ``schema`` the tool's args JSON schema (``{}``: JSON mode only; ``has_form`` when it has
    properties); ``draft_json`` the draft as
    JSON text; ``form`` its rows; ``diff`` edited against proposed; ``revision`` bumped when the
    draft changed other than by typing into the form; ``json_note`` why the form lags the text.
    The effect preview (``preview_kind``: ``diff`` or ``sql``, ``""`` none): a title, a body
    (unified diff or formatted SQL) and a note ("Would change 3 rows").
    """

    index: int
    tool_name: str
    description: str
    args: list[ArgRow] = field(default_factory=list)
    args_json: str = ""
    allowed: list[str] = field(default_factory=list)
    choice: str = ""
    editing: bool = False
    edit_error: str = ""
    error: str = ""
    reason: str = ""
    answer: str = ""
    progress: str = ""
    show_progress: bool = False
    note: str = ""
    others_may_decide: bool = False
    standing: str = "open"
    remaining: int = 0
    my_decision_in: bool = False
    others_who_decide: str = ""
    asks_approval: bool = True
    waits_for: str = ""
    risk: str = ""
    risk_note: str = ""
    reject_stop: bool = False
    question: bool = False
    reject_cancel: bool = False
    server: str = ""
    server_tool: str = ""
    hints: list[str] = field(default_factory=list)
    server_trusted: bool = False
    mode: str = "form"
    has_form: bool = False
    schema: dict[str, Any] = field(default_factory=dict)
    draft_json: str = ""
    form: list[FormRow] = field(default_factory=list)
    diff: list[DiffLine] = field(default_factory=list)
    revision: int = 0
    json_note: str = ""
    preview_kind: str = ""
    preview_title: str = ""
    preview_body: str = ""
    preview_note: str = ""


@dataclass
class DecidedRow:
    """One card of a submitted review while its undo window is open (``review.decided.DecidedLine``):
    ``tool``, ``decision`` (``approve``...; ``""`` unreadable), ``verb`` (``approved``...), ``detail``
    (reason, answer, or an edit's changes), ``args`` (an edit's as one line of JSON, an
    approval's compact) and ``by`` (who decided the card)."""

    index: int
    tool: str
    decision: str
    verb: str
    detail: str
    args: str
    by: str = ""


def json_type(value: Any) -> str:
    """The JSON type name of ``value``: string, number, boolean, null, list or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    return "object"


def _arg_rows(args: Mapping[str, Any], description: str, allowed: list[str]) -> list[ArgRow]:
    """A card's typed argument rows. A question (a card that only allows ``respond``) leaves out a
    text argument its description already shows in full ("Question for you: which region?" above a
    ``question`` row with the same words: QA C3); every other card shows every argument (C13)."""
    question = allowed == ["respond"]
    return [
        ArgRow(key=k, value=shown_controls(json.dumps(v, ensure_ascii=False)), type_name=json_type(v))
        for k, v in args.items()
        if not (question and isinstance(v, str) and v.strip() and v.strip() in description)
    ]


def card_rows(
    review: PendingReview | None,
    statuses: list[CardStatus] | None = None,
    *,
    schemas: Mapping[str, dict[str, Any] | None] | None = None,
    risks: Mapping[str, Any] | None = None,
    origins: Mapping[str, Any] | None = None,
) -> list[CardRow]:
    """One card per action request of the pending review (empty when nothing is pending), with
    each card's status for the viewer (``ThreadView.cards``; without it, every allowed decision).

    ``schemas``: tool name -> args JSON schema (the editor's form and checks; a tool without one
    is edited as JSON only). ``risks``: tool name -> ``ToolRisk`` (``level``, ``note``). ``origins``:
    tool name -> ``ToolOrigin`` (an MCP tool's server and hints).
    """
    if review is None:
        return []
    rows = []
    for i, (action, config) in enumerate(zip(review.action_requests, review.review_configs, strict=True)):
        schema = (schemas or {}).get(action.name) or {}
        risk = (risks or {}).get(action.name)
        origin = (origins or {}).get(action.name)
        rows.append(CardRow(
            index=i,
            tool_name=action.name,
            description=shown_controls(action.description),
            args=_arg_rows(action.args, action.description, list(config.allowed_decisions)),
            args_json=pretty(action.args),
            allowed=list(config.allowed_decisions),
            asks_approval=bool({"approve", "edit"} & set(config.allowed_decisions)),
            risk=getattr(risk, "level", "") or "",
            risk_note=getattr(risk, "note", "") or "",
            reject_stop=bool(getattr(risk, "reject_stops", False)),
            question=action.name.endswith(QUESTION_SUFFIX),
            server=getattr(origin, "server", "") or "",
            server_tool=getattr(origin, "tool", "") or "",
            hints=list(getattr(origin, "hints", ()) or ()),
            server_trusted=bool(getattr(origin, "trusted", False)),
            schema=schema,
            has_form=bool(schema.get("properties")),
            mode="form" if schema.get("properties") else "json",
        ))
    for row in rows:
        apply_status(row, statuses)
    return rows


def apply_status(row: CardRow, statuses: list[CardStatus] | None) -> None:
    """Set ``row``'s buttons, progress and note from its ``CardStatus`` (a choice no longer open goes)."""
    status = next((s for s in statuses or [] if s.index == row.index), None)
    if status is None:
        return
    row.allowed = list(status.allowed)
    row.progress, row.show_progress, row.note = status.progress, status.show_progress, status.note
    row.others_may_decide = status.who != "the person who asked"
    row.standing = status.standing
    row.remaining, row.my_decision_in, row.others_who_decide = status.remaining, status.yours, status.others
    row.waits_for = waiting_for([row]) if row.standing == WAITING else ""
    if row.choice and row.choice not in row.allowed:
        row.choice, row.editing = "", False
