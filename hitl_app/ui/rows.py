"""Small typed rows the UI renders (built from threads/ and review/ views; never table models)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hitl_app.review.diff import diff_args, summarize
from hitl_app.review.shown import shown_controls
from hitl_app.review.types import DECISION_STYLES
from hitl_app.review.via import by_machine
from hitl_app.threads.service import AuditEntry
from hitl_app.threads.views import MessageView
from hitl_app.ui.review_text import DECIDE_ALL

MESSAGE_PAGE = 50
"""How many of the most recent rows a thread shows at first (a 1,000-message thread would otherwise send
every row on load); scrolling up adds ``earlier_step`` rows at a time."""
EARLIER_STEP_MAX = 500
"""The most rows one step up (or down) adds to what the tab holds."""
WINDOW_ROWS = 1000
"""The most rows a tab holds after a step up (its window of the thread): every step resends the whole window
(Reflex sends a changed list whole), which the page parses and maps to one element per row, so a window
that grew with the thread made each step of a 10,000-message thread a main-thread task of 80-175 ms
(bench/README.md rounds 13-15). Rows that fall out of the window stay on the server and come back as the
reader scrolls to them."""


def earlier_step(shown: int) -> int:
    """How many rows the next step up (or down) adds to a tab that shows ``shown`` rows: as many again,
    at least ``MESSAGE_PAGE`` and at most ``EARLIER_STEP_MAX``.

    Each step reads the whole thread again (the checkpoint holds its messages as one value: ~0.45 s at
    10,000 messages on this 2-core machine, bench/README.md round 13), so fixed 50-row steps made a
    reader scrolling to the top of 10,000 messages wait through 200 reads (~95 s); growing steps take
    ~24. The list is virtualized, so the DOM does not grow with the rows a tab holds."""
    return min(EARLIER_STEP_MAX, max(MESSAGE_PAGE, shown))


def shown_range(start: int, end: int, total: int) -> tuple[int, int]:
    """The rows ``[first, stop)`` of a thread of ``total`` rows that a tab's window ``(start, end)`` shows.

    ``start`` < 0: not chosen yet (the last ``MESSAGE_PAGE`` rows); ``end`` < 0: the window follows the
    thread's end (new rows append to it). A window is never shorter than ``MESSAGE_PAGE`` rows where the
    thread has them."""
    stop = total if end < 0 else min(end, total)
    first = max(0, total - MESSAGE_PAGE) if start < 0 else start
    return min(first, max(0, stop - MESSAGE_PAGE)), stop


def step_up(start: int, end: int, total: int) -> tuple[int, int]:
    """The window ``(start, end)`` after one step up (the reader reached its first row) in a thread of
    ``total`` rows: ``earlier_step`` earlier rows join it, and rows past ``WINDOW_ROWS`` leave it at its
    bottom (it no longer follows the end then)."""
    first, stop = shown_range(start, end, total)
    first = max(0, first - earlier_step(stop - first))
    if stop - first > WINDOW_ROWS:
        return first, first + WINDOW_ROWS
    return first, end


def step_down(start: int, end: int, total: int) -> tuple[int, int]:
    """The window ``(start, end)`` after one step down (the reader reached its last row while later rows
    exist): ``earlier_step`` later rows join it (at most ``EARLIER_STEP_MAX``), and it follows the end again
    once it reaches it (``end`` -1). No row leaves its top: react-virtuoso lost the reader's place when
    rows left above them (a new user's pass, scrolling down fast, saw a blank band and ~100 rows skipped),
    so on the way back down the window grows; it is bounded again on the next open."""
    first, stop = shown_range(start, end, total)
    stop += earlier_step(stop - first)
    return first, (-1 if stop >= total else stop)


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
    cut: str = ""


@dataclass
class ThreadRow:
    """A sidebar entry: ``pending`` a review waits; ``undo``: it is decided and waits out its undo window;
    ``lost``: the agent deployment lost the thread while its review waited (``threads/lost.py``)."""

    thread_id: str
    title: str
    when: str
    pending: bool
    undo: bool = False
    lost: bool = False


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
    if by_machine(entry.via) and entry.message:
        return entry.message
    verbs: dict[str, str] = {kind: style.past for kind, style in DECISION_STYLES.items()}
    verb = verbs.get(entry.decision_type, entry.decision_type)
    at = entry.decided_at if entry.decided_at.tzinfo else entry.decided_at.replace(tzinfo=UTC)
    when = f"{at:%H:%M} UTC, waited {humanize_wait(entry.waited_seconds)}"
    if entry.decision_type == "edit" and entry.args_executed is not None and entry.args_proposed is not None:
        return f"{verb} by {entry.reviewer}: {summarize(diff_args(entry.args_proposed, entry.args_executed))} · {when}"
    if entry.decision_type == "reject" and entry.message:  # the row says why, as an edit says what changed (QA C5)
        reason = " ".join(entry.message.split())
        return f"{verb} by {entry.reviewer}: “{reason[:300]}{'…' if len(reason) > 300 else ''}” · {when}"
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
                    text=shown_controls(v.text),
                    tool_name=v.tool_name or "tool",
                    outcome=v.outcome or "executed",
                    args_json=shown_controls(pretty(v.args)) if v.args is not None else "",
                    result=shown_controls(v.result or ""),
                    audit=entry if isinstance(entry, str) else audit_line(entry) if entry else "",
                    proposed_json=shown_controls(pretty(v.proposed_args)) if v.proposed_args is not None else "",
                )
            )
        elif v.text.strip() or v.role == "user":
            rows.append(MessageRow(key=v.key, role=v.role, text=v.text, cut=CUT_LABELS.get(v.cut, "")))
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


CUT_LABELS = {
    "stopped": "Stopped: the reply ends here.",
    "time_limit": "Cut off: the run reached its time limit.",
    "failed": "Cut off by an error (see below).",
}
"""The line under an assistant reply that ended early, by ``MessageView.cut``."""


def running_label(views: list[MessageView]) -> str:
    """``"Running slow_task…"`` while the last assistant message's tool calls have no result yet (a
    live run is in its tools step); ``""`` otherwise. Names each tool once, in call order."""
    last = next((i for i in range(len(views) - 1, -1, -1) if views[i].role != "tool"), None)
    if last is None or views[last].role != "assistant" or not views[last].tool_calls:
        return ""
    answered = {v.tool_call_id for v in views[last + 1 :]}
    names = list(dict.fromkeys(c.name for c in views[last].tool_calls if c.id not in answered))
    return f"Running {', '.join(names)}…" if names else ""


def retried(error: str, retries: int) -> str:
    """A run error as shown after ``retries`` Retries in a row (0: as it is): says the Retry happened."""
    if retries <= 0:
        return error
    times = "" if retries == 1 else f" ({retries} times)"
    return f"Retried{times}; it failed again. {error}"


def stopped_notice(status: str) -> str:
    """The notice after Stop: what was kept and how to go on (``status``: the thread's, as shown)."""
    if status == "incomplete":
        return "Stopped before it finished; what ran is shown above. Press Continue or send a new message."
    return "Stopped. What the agent wrote so far is kept above; send a new message to go on."


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
