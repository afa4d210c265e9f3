"""Queries over the audit trail (``AuditRecord``) for the audit page and its exports.

Small keyword-only functions taking the async engine. Who sees what (``list_decisions``): admins
every decision; everyone the decisions on their own threads and on the cards they decided;
reviewers also the cards the policy asked their role or email to decide. Exports are the same
query, so they follow the same filter; CSV cells that a spreadsheet would run as a formula start
with ``'``.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, exists, func, or_, true
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.rights import Person
from hitl_app.review.shown import shown_controls
from hitl_app.review.types import DECISION_STYLES
from hitl_app.review.via import PAGE, via_label
from hitl_app.store.tables import AuditRecord, DecisionDraft, ThreadRecord

EXPORT_FIELDS = (
    "thread_id", "interrupt_id", "action_index", "tool_call_id", "tool_name", "decision_type",
    "args_proposed", "args_executed", "message", "reviewer", "reviewer_id", "reviewer_role", "deciders",
    "requested_at", "decided_at",
    "waited_seconds", "checkpoint_id", "via",
)
"""Columns of the CSV/JSON exports, in order (every field the audit record keeps)."""


@dataclass
class AuditRow:
    """One decision as exported and shown. Times are ISO 8601 UTC strings; args are JSON text.

    ``reviewer`` is the display name(s) at the time (``"Dana and Ada"`` for two approvals),
    ``reviewer_id`` / ``reviewer_role`` the account and role that decided the card, ``deciders``
    everyone who decided on it, e.g. ``"Dana (reviewer, #3) approved; Ada (admin, #5) approved by API token"``
    (empty for records made before accounts; a door other than the page is named); ``via`` how the
    deciding decision arrived (``""``: before it was kept, a person on the page).
    """

    thread_id: str
    thread_title: str
    interrupt_id: str
    action_index: int
    tool_call_id: str
    tool_name: str
    decision_type: str
    args_proposed: str
    args_executed: str
    message: str
    reviewer: str
    requested_at: str
    decided_at: str
    waited_seconds: float
    checkpoint_id: str
    reviewer_id: str = ""
    reviewer_role: str = ""
    deciders: str = ""
    via: str = ""  # how the decision arrived: "page", "api", "mail", "deadline", "grant:<id>" (hitl_app.review.via)
    via_label: str = ""  # the same as the page says it ("API token", "mail link", "grant #3")
    waited: str = ""  # the wait as the page shows it ("14 s", "1 min"; filled by the audit page, not exported)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="seconds")


def _visible(viewer: Person | None, owner: str) -> ColumnElement[bool] | None:
    """The audit filter for ``viewer`` (None: they see nothing).

    Admins see every decision; everyone sees the decisions on their own threads and the cards
    they decided on themselves; reviewers also see the cards the policy asked their role or their
    email to decide. Without a viewer, ``owner`` (a browser id) sees its own threads.
    """
    if viewer is None:
        return col(ThreadRecord.owner) == owner if owner else None
    if str(viewer.role) == "admin":
        return true()
    me = str(viewer.account_id)
    took_part = exists().where(
        col(DecisionDraft.interrupt_id) == col(AuditRecord.interrupt_id),
        col(DecisionDraft.action_index) == col(AuditRecord.action_index),
        col(DecisionDraft.account_id) == me,
    )
    shown = [col(ThreadRecord.owner) == me, col(AuditRecord.reviewer_id) == me, took_part]
    if str(viewer.role) == "reviewer":
        shown.append(col(AuditRecord.asked).contains("|reviewer|", autoescape=True))
        if viewer.email:
            shown.append(col(AuditRecord.asked).contains(f"|{viewer.email.strip().casefold()}|", autoescape=True))
    return or_(*shown)


def _deciders(value: list[dict[str, str]] | None) -> str:
    parts = []
    for d in value or []:
        style = DECISION_STYLES.get(d.get("type", ""))  # type: ignore[call-overload]
        verb = style.past if style is not None else ""
        how = f" by {via_label(d['via'])}" if d.get("via") not in (None, "", PAGE) else ""  # the page goes unsaid
        parts.append(f"{d.get('display_name', '')} ({d.get('role', '')}, #{d.get('account_id', '')}) {verb}{how}".strip())
    return "; ".join(parts)


def _audit_row(r: AuditRecord, title: str | None) -> AuditRow:
    """One audit record as a row of the Audit page (times ISO text, arguments JSON text)."""
    return AuditRow(
        thread_id=r.thread_id,
        thread_title=title or "",
        interrupt_id=r.interrupt_id,
        action_index=r.action_index,
        tool_call_id=r.tool_call_id or "",
        tool_name=r.tool_name,
        decision_type=r.decision_type,
        args_proposed=shown_controls(json.dumps(r.args_proposed, ensure_ascii=False, sort_keys=True)),
        args_executed="" if r.args_executed is None else shown_controls(
            json.dumps(r.args_executed, ensure_ascii=False, sort_keys=True)),
        message=r.message or "",
        reviewer=r.reviewer,
        requested_at=_iso(r.requested_at),
        decided_at=_iso(r.decided_at),
        waited_seconds=round(r.waited_seconds, 3),
        checkpoint_id=r.checkpoint_id or "",
        reviewer_id=r.reviewer_id or "",
        reviewer_role=r.reviewer_role or "",
        deciders=_deciders(r.deciders),
        via=r.via or "",
        via_label=via_label(r.via),
    )


def _filtered(stmt, visible, thread_id: str, tool_name: str, decision_type: str):  # noqa: ANN001, ANN202 - a select
    """``stmt`` (over AuditRecord joined with its ThreadRecord) restricted to what is visible and the filters."""
    stmt = stmt.join(ThreadRecord, col(ThreadRecord.thread_id) == col(AuditRecord.thread_id)).where(visible)
    if thread_id:
        stmt = stmt.where(AuditRecord.thread_id == thread_id)
    if tool_name:
        stmt = stmt.where(AuditRecord.tool_name == tool_name)
    if decision_type:
        stmt = stmt.where(AuditRecord.decision_type == decision_type)
    return stmt


async def list_decisions(
    *,
    engine: AsyncEngine,
    viewer: Person | None = None,
    owner: str = "",
    thread_id: str = "",
    tool_name: str = "",
    decision_type: str = "",
    limit: int = 1000,
    offset: int = 0,
) -> list[AuditRow]:
    """The decisions ``viewer`` may see, newest first, optionally filtered ("" = any).

    Args:
        engine: the app database's async engine.
        viewer: the signed-in person (see ``_visible``: admins everything, reviewers what they
            decided or were asked to, members their own threads and their own decisions).
        owner: without ``viewer``, the browser id owning the threads (no owner, no rows).
        thread_id: only this thread's decisions.
        tool_name: only decisions on this tool.
        decision_type: only this type (``approve``, ``edit``, ``reject``, ``respond``).
        limit: at most this many rows.
        offset: skip this many of the newest first (a page: ``offset``, ``limit``).
    """
    visible = _visible(viewer, owner)
    if visible is None:
        return []
    stmt = _filtered(select(AuditRecord, ThreadRecord.title), visible, thread_id, tool_name, decision_type)
    stmt = stmt.order_by(col(AuditRecord.decided_at).desc(), col(AuditRecord.id).desc()).offset(offset).limit(limit)
    async with AsyncSession(engine) as session:
        rows = (await session.exec(stmt)).all()
    return [_audit_row(r, title) for r, title in rows]


async def count_decisions(
    *, engine: AsyncEngine, viewer: Person | None = None, owner: str = "", thread_id: str = "", tool_name: str = "",
    decision_type: str = "",
) -> int:
    """How many decisions ``list_decisions`` with the same arguments would list without a limit (one COUNT)."""
    visible = _visible(viewer, owner)
    if visible is None:
        return 0
    stmt = _filtered(select(func.count()).select_from(AuditRecord), visible, thread_id, tool_name, decision_type)
    async with AsyncSession(engine) as session:
        return int((await session.exec(stmt)).one())


THREAD_CHOICES = 100
"""The Thread filter offers the threads of the newest decisions, at most this many (10,000 options made the
audit page take half a second longer to open; an older thread is filtered by ``/audit?thread=<id>``)."""


async def decision_options(
    *, engine: AsyncEngine, viewer: Person | None = None, owner: str = "", threads: int = THREAD_CHOICES,
) -> tuple[list[tuple[str, str]], list[str], int]:
    """The filters' choices over the decisions ``viewer`` may see: ``(thread_id, title)`` pairs of the ``threads``
    threads decided on most recently (newest first), the tool names (each once, sorted), and how many threads
    have decisions in all (GROUP BY / SELECT DISTINCT over the visible decisions: only the grouped values come back)."""
    visible = _visible(viewer, owner)
    if visible is None:
        return [], [], 0
    newest = func.max(AuditRecord.decided_at)
    recent = (
        _filtered(select(AuditRecord.thread_id, ThreadRecord.title), visible, "", "", "")
        .group_by(col(AuditRecord.thread_id), col(ThreadRecord.title))
        .order_by(newest.desc(), col(AuditRecord.thread_id))
        .limit(threads)
    )
    every = _filtered(select(func.count(func.distinct(AuditRecord.thread_id))).select_from(AuditRecord), visible, "", "", "")
    tools = _filtered(select(AuditRecord.tool_name), visible, "", "", "").distinct().order_by(col(AuditRecord.tool_name))
    async with AsyncSession(engine) as session:
        pairs = [(t, title or "") for t, title in (await session.exec(recent)).all()]
        names = list((await session.exec(tools)).all())
        count = int((await session.exec(every)).one()) if len(pairs) >= threads else len(pairs)
    return pairs, names, count


async def thread_title(*, engine: AsyncEngine, viewer: Person | None, thread_id: str, owner: str = "") -> str | None:
    """The title of ``thread_id`` when ``viewer`` may see at least one of its decisions ("" untitled), else None
    (no such thread, or none of its decisions is theirs to see)."""
    visible = _visible(viewer, owner)
    if visible is None or not thread_id:
        return None
    stmt = _filtered(select(ThreadRecord.title).select_from(AuditRecord), visible, thread_id, "", "").limit(1)
    async with AsyncSession(engine) as session:
        found = (await session.exec(stmt)).first()
    return None if found is None else (found or "")


def to_json(*, rows: list[AuditRow]) -> str:
    """The rows as a JSON array of objects (``EXPORT_FIELDS``; args as JSON values, not text)."""
    out = []
    for row in rows:
        d = asdict(row)
        item = {k: d[k] for k in EXPORT_FIELDS}
        item["args_proposed"] = json.loads(row.args_proposed)
        item["args_executed"] = json.loads(row.args_executed) if row.args_executed else None
        out.append(item)
    return json.dumps(out, ensure_ascii=False, indent=2)


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""A text cell starting with one of these is a formula to spreadsheet programs (OWASP CSV injection)."""


def _csv_cell(value: object) -> object:
    """``value`` for a CSV cell: text that a spreadsheet would run as a formula gets a leading ``'``
    (shown as text, e.g. ``'=HYPERLINK(...)``); numbers the app wrote stay numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def to_csv(*, rows: list[AuditRow]) -> str:
    """The rows as CSV with a header row (``EXPORT_FIELDS``; args as JSON text). Text cells that
    start with ``= + - @``, tab or CR are prefixed with ``'`` so spreadsheets do not evaluate them."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(EXPORT_FIELDS)
    for row in rows:
        d = asdict(row)
        writer.writerow([_csv_cell(d[k]) for k in EXPORT_FIELDS])
    return buf.getvalue()
