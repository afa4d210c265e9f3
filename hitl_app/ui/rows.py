"""Small typed rows the UI renders (built from threads/ and review/ views; never table models)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hitl_app.review.diff import DiffLine, diff_args, summarize
from hitl_app.review.draft import DECIDE_ALL
from hitl_app.review.form_rows import FormRow
from hitl_app.review.types import PendingReview
from hitl_app.threads.service import AuditEntry
from hitl_app.threads.views import CardStatus, MessageView

MESSAGE_PAGE = 50
"""How many of the most recent rows a thread shows at first; "Show earlier messages" adds this many
more (a 1,000-message thread would otherwise render every row, with a markdown parse each, on load)."""


@dataclass
class MessageRow:
    """One bubble or tool row. ``role``: user, assistant or tool; ``outcome`` for tool rows."""

    key: str
    role: str
    text: str
    tool_name: str = ""
    outcome: str = ""
    args_json: str = ""
    result: str = ""
    audit: str = ""
    proposed_json: str = ""


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
    or all buttons are missing; ``shared`` whether someone other than this person may decide it
    (then it may be left for them); ``standing`` the server's word on the card for this person
    (``open``, ``waiting`` for someone else, ``complete``: ``review.draft``); ``remaining``,
    ``yours`` and ``others`` the server's approvals still needed, whether this person's decision
    is in, and who else may decide, ``asks`` whether the review config allows approve or edit (False:
    a question; for the composer line, ``draft.composer_line``). ``risk``/``risk_note``:
    the policy's level and line.

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
    shared: bool = False
    standing: str = "open"
    remaining: int = 0
    yours: bool = False
    others: str = ""
    asks: bool = True
    risk: str = ""
    risk_note: str = ""
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


@dataclass
class ThreadRow:
    """A sidebar entry: ``pending`` a review waits; ``undo``: it is decided and waits out its undo window."""

    thread_id: str
    title: str
    when: str
    pending: bool
    undo: bool = False


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


def pretty(value: Any) -> str:
    """Indented JSON for display (non-ASCII kept)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def humanize_wait(seconds: float) -> str:
    """``"12 s"``, ``"3 min"``, ``"2 h"``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def audit_line(entry: AuditEntry) -> str:
    """E.g. ``"approved by Dana, 14:03 UTC, waited 2 min"``; an edit names what changed
    (``"edited by Dana: to: alice@example.com -> bob@example.com · 14:03 UTC, waited 2 min"``); a
    grant's or a deadline's own line (``"approved by grant: this tool in this thread, by Dana, until
    15:00 UTC"``)."""
    if entry.via and entry.message:
        return entry.message
    verb = {"approve": "approved", "edit": "edited", "reject": "rejected", "respond": "answered"}.get(
        entry.decision_type, entry.decision_type
    )
    at = entry.decided_at if entry.decided_at.tzinfo else entry.decided_at.replace(tzinfo=UTC)
    when = f"{at:%H:%M} UTC, waited {humanize_wait(entry.waited_seconds)}"
    if entry.decision_type == "edit" and entry.args_executed is not None and entry.args_proposed is not None:
        return f"{verb} by {entry.reviewer}: {summarize(diff_args(entry.args_proposed, entry.args_executed))} · {when}"
    return f"{verb} by {entry.reviewer}, {when}"


def message_rows(views: list[MessageView], audit: Mapping[str, AuditEntry | str]) -> list[MessageRow]:
    """Rows for the chat: user/assistant bubbles and compact tool rows with their outcome.

    ``audit`` maps a tool call id to its decision (an ``AuditEntry``, or its ``audit_line`` text).

    Tool rows answering one assistant message are shown in the order of its tool calls (the order
    of the approval cards), not in checkpoint order: HumanInTheLoopMiddleware writes rejected and
    answered results before the tool node writes the executed ones.
    """
    rows: list[MessageRow] = []
    for v in _tool_results_in_call_order(views):
        if v.role == "tool":
            entry = audit.get(v.tool_call_id or "")
            rows.append(
                MessageRow(
                    key=v.key,
                    role="tool",
                    text=v.text,
                    tool_name=v.tool_name or "tool",
                    outcome=v.outcome or "executed",
                    args_json=pretty(v.args) if v.args is not None else "",
                    result=v.result or "",
                    audit=entry if isinstance(entry, str) else audit_line(entry) if entry else "",
                    proposed_json=pretty(v.proposed_args) if v.proposed_args is not None else "",
                )
            )
        elif v.text.strip() or v.role == "user":
            rows.append(MessageRow(key=v.key, role=v.role, text=v.text))
    return rows


def _tool_results_in_call_order(views: list[MessageView]) -> list[MessageView]:
    """``views`` with each run of tool messages sorted by its assistant message's tool-call order."""
    out: list[MessageView] = []
    order: dict[str, int] = {}
    run: list[MessageView] = []

    def flush() -> None:
        run.sort(key=lambda t: order.get(t.tool_call_id or "", len(order)))
        out.extend(run)
        run.clear()

    for v in views:
        if v.role == "tool":
            run.append(v)
            continue
        flush()
        if v.role == "assistant":
            order = {tc.id: i for i, tc in enumerate(v.tool_calls)}
        out.append(v)
    flush()
    return out


def card_rows(
    review: PendingReview | None,
    statuses: list[CardStatus] | None = None,
    *,
    schemas: Mapping[str, dict[str, Any] | None] | None = None,
    risks: Mapping[str, Any] | None = None,
) -> list[CardRow]:
    """One card per action request of the pending review (empty when nothing is pending), with
    each card's status for the viewer (``ThreadView.cards``; without it, every allowed decision).

    ``schemas``: tool name -> args JSON schema (the editor's form and checks; a tool without one
    is edited as JSON only). ``risks``: tool name -> ``ToolRisk`` (``level``, ``note``).
    """
    if review is None:
        return []
    rows = []
    for i, (action, config) in enumerate(zip(review.action_requests, review.review_configs, strict=True)):
        schema = (schemas or {}).get(action.name) or {}
        risk = (risks or {}).get(action.name)
        rows.append(CardRow(
            index=i,
            tool_name=action.name,
            description=action.description,
            args=[ArgRow(key=k, value=json.dumps(v, ensure_ascii=False), type_name=json_type(v)) for k, v in action.args.items()],
            args_json=pretty(action.args),
            allowed=list(config.allowed_decisions),
            asks=bool({"approve", "edit"} & set(config.allowed_decisions)),
            risk=getattr(risk, "level", "") or "",
            risk_note=getattr(risk, "note", "") or "",
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
    row.shared = status.who != "the person who asked"
    row.standing = status.standing
    row.remaining, row.yours, row.others = status.remaining, status.yours, status.others
    if row.choice and row.choice not in row.allowed:
        row.choice, row.editing = "", False


def relative_time(when: datetime, now: datetime | None = None) -> str:
    """``"just now"``, ``"5 min ago"``, ``"3 h ago"``, or the date."""
    now = now or datetime.now(UTC)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    delta = (now - when).total_seconds()
    if delta < 60:
        return "just now"
    if delta < 3600:
        return f"{delta / 60:.0f} min ago"
    if delta < 86400:
        return f"{delta / 3600:.0f} h ago"
    return f"{when:%Y-%m-%d}"


def row_keys(rows: Any) -> list[tuple[str, ...]]:
    """What identifies the look of message rows (equal keys: nothing to resend to the browser)."""
    return [(r.key, r.role, r.text, r.tool_name, r.outcome, r.args_json, r.result, r.audit, r.proposed_json) for r in rows]


def first_line(error: str | None) -> str:
    """A run error as shown: its first line, at most 500 characters."""
    return (error or "The run failed.").splitlines()[0][:500]


def lock_reason(load_error: str, streaming: bool, status: str) -> str:
    """Why the composer is locked, in plain words ("" when it is not)."""
    if load_error:
        return load_error
    if streaming:
        return "The agent is answering. Press Stop to end the run."
    if status == "review":
        return DECIDE_ALL
    return ""


def thread_id_of(path: Any) -> str:
    """The thread id of a page path (``/thread/<id>``, trailing slash allowed); "" for any other page."""
    path = str(path).rstrip("/")
    return path.rsplit("/", 1)[-1] if path.startswith("/thread/") else ""
