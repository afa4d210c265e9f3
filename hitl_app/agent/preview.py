"""Previews of what a demo tool call would do, shown on its approval card before anyone decides.

Only where a preview is cheap and safe:

* ``write_file``: the current file beside the new content, as a unified diff (``difflib``); a
  new file shows every line added. Nothing is written; a path the sandbox refuses says so.
* ``execute_sql``: the statement formatted (``sqlparse``) and, for a write, how many rows it
  would touch: the statement runs on the owner's demo database inside a transaction that is
  ALWAYS rolled back, under the same guards as an approved write (``write_authorizer``: no
  ATTACH, PRAGMA, transaction control, extension or ledger access; the time and size limits).
  A read-only statement is never run here (it runs without a review anyway).

Sync: call ``preview_call`` with ``asyncio.to_thread``. It never raises for bad arguments: the
preview then says what it could not show.
"""

# Tested by: tests/unit/agent/test_preview.py

from __future__ import annotations

import difflib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import sqlparse

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.sandbox import SandboxError, resolve_in_sandbox
from hitl_app.agent.sql_guard import (
    QueryCancel,
    is_read_only_sql,
    open_guarded,
    write_authorizer,
)
from hitl_app.store.owners import OwnerSpace

MAX_PREVIEW_BYTES = 200_000
"""Files (current or new) larger than this are not diffed."""
MAX_DIFF_LINES = 400
"""A longer diff is cut, with a line saying how much more there is."""


@dataclass(frozen=True)
class EffectPreview:
    """What a call would do.

    Attributes:
        kind: ``diff`` (a unified diff) or ``sql`` (a formatted statement).
        title: one line, e.g. ``"notes/x.txt: 1 line changed"`` or ``"SQL statement"``.
        body: the diff or the formatted statement ("" when there is nothing to show).
        note: one more line, e.g. ``"Would change 3 rows (counted, then rolled back)."``.
    """

    kind: Literal["diff", "sql"]
    title: str
    body: str = ""
    note: str = ""


def preview_write_file(root: Path, path: Any, content: Any) -> EffectPreview:
    """The diff ``write_file(path, content)`` would make in the sandbox ``root`` (read only)."""
    if not isinstance(path, str) or not isinstance(content, str):
        return EffectPreview("diff", "No preview", note="The path and the content must be text.")
    try:
        target = resolve_in_sandbox(root, path)
    except SandboxError as exc:
        return EffectPreview("diff", f"{path}: refused", note=f"The tool will refuse this path: {exc}")
    if target.is_dir():
        return EffectPreview("diff", f"{path}: a folder", note="The tool will refuse it: the path is a folder.")
    new = content
    too_large = f"{path}: too large to preview"
    if len(new.encode("utf-8", "surrogatepass")) > MAX_PREVIEW_BYTES:
        return EffectPreview("diff", too_large, note=f"The new content is over {MAX_PREVIEW_BYTES:,} bytes.")
    exists = target.is_file()
    if exists and target.stat().st_size > MAX_PREVIEW_BYTES:
        return EffectPreview("diff", too_large, note=f"The current file is over {MAX_PREVIEW_BYTES:,} bytes.")
    old = target.read_text(encoding="utf-8", errors="replace") if exists else ""
    lines = list(
        difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            f"{path} (current)" if exists else "(no file yet)",
            f"{path} (new)",
            lineterm="",
        )
    )
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    if not exists:
        title = f"{path}: new file, {added} line{'s' if added != 1 else ''}"
    elif not lines:
        title = f"{path}: no change (same content)"
    else:
        title = f"{path}: {added} added, {removed} removed"
    more = len(lines) - MAX_DIFF_LINES
    body = "\n".join(lines[:MAX_DIFF_LINES]) + (f"\n… {more} more diff lines" if more > 0 else "")
    return EffectPreview("diff", title, body, "Replaces the whole file." if exists and lines else "")


def format_sql(query: str) -> str:
    """``query`` laid out for reading: keywords upper case, one clause per line (sqlparse)."""
    return sqlparse.format(query, reindent=True, keyword_case="upper", strip_whitespace=True).strip()


def count_touched_rows(db_path: Path, query: str, limits: ToolLimits) -> int:
    """How many rows ``query`` changes on ``db_path``, counted in a transaction that is rolled back.

    Runs under ``write_authorizer`` and the tool's time and size limits (``open_guarded``).

    Raises:
        sqlite3.Error: the statement fails or is refused (nothing is changed either way).
    """
    cancel = QueryCancel()
    conn = open_guarded(db_path, read_only=False, limits=limits, cancel=cancel)
    try:
        conn.execute("BEGIN")
        before = conn.total_changes
        conn.set_authorizer(write_authorizer)
        try:
            cur = conn.execute(query)
            if cur.description:
                cur.fetchall()
        finally:
            conn.set_authorizer(None)
        return conn.total_changes - before
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        cancel.detach()
        conn.close()


def preview_sql(db_path: Path, query: Any, limits: ToolLimits) -> EffectPreview:
    """The formatted statement, and for a write the rows it would touch (see the module docstring)."""
    if not isinstance(query, str) or not query.strip() or "\x00" in query:
        return EffectPreview("sql", "No preview", note="The query must be text without NUL bytes.")
    body = format_sql(query)
    if is_read_only_sql(query):
        return EffectPreview("sql", "SQL statement (reads only)", body)
    kind = sqlparse.parse(query)[0].get_type() if sqlparse.parse(query) else "UNKNOWN"
    if kind in ("CREATE", "DROP", "ALTER"):
        return EffectPreview("sql", "SQL statement", body, f"Changes the database's tables ({kind}), not rows.")
    if not Path(db_path).exists():
        return EffectPreview("sql", "SQL statement", body, "The demo database does not exist yet.")
    try:
        n = count_touched_rows(Path(db_path), query, limits)
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):  # the deadline of ``limits`` (the preview's own budget)
            return EffectPreview("sql", "SQL statement", body,
                                 f"Rows not counted: counting took longer than {limits.sql_timeout_s:g} s.")
        return EffectPreview("sql", "SQL statement", body, f"Would fail now: {exc}")
    except (sqlite3.Error, sqlite3.Warning) as exc:
        return EffectPreview("sql", "SQL statement", body, f"Would fail now: {exc}")
    rows = f"{n} row{'s' if n != 1 else ''}"
    return EffectPreview("sql", "SQL statement", body, f"Would change {rows} (counted, then rolled back).")


def preview_call(space: OwnerSpace, name: str, args: Mapping[str, Any], limits: ToolLimits) -> EffectPreview | None:
    """The preview of demo tool ``name`` with ``args`` in ``space``, or None for a tool without one."""
    if name == "write_file":
        return preview_write_file(space.files_dir, args.get("path"), args.get("content"))
    if name == "execute_sql":
        return preview_sql(space.demo_db, args.get("query"), limits)
    return None
