"""Running one tool statement on an owner's demo database, bounded, cancellable, exactly once.

``run_read`` runs a statement ``is_read_only_sql`` accepted, on a read-only guarded connection.
``run_write_once`` runs an approved statement and records its result in the ``hitl_tool_effects``
table of the SAME database, in the SAME transaction: either both the change and its record are
committed or neither is. A replay of the same tool call (after Stop and Continue, or a crash)
finds the record and returns it without running the statement again. A stopped call is
interrupted and rolled back, so its replay runs it once.

Both return JSON ``{"columns": [...], "rows": [[...], ...], "truncated": bool}`` (plus a plain
``"note"`` when rows were cut off) for a statement with a result, else ``"<n> rows affected."``.
Errors become ``ToolException`` with a plain message; a cancelled statement raises
``QueryCancelled``.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.tools import ToolException

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.sql_guard import LEDGER_TABLE, QueryCancel, open_guarded, write_authorizer

LEDGER_DDL = (
    f"CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (tool_call_id TEXT PRIMARY KEY, tool_name TEXT NOT NULL, "
    "result TEXT NOT NULL, created_at TEXT NOT NULL)"
)
"""The per-database record of executed writes (created with the demo database)."""


class QueryCancelled(Exception):
    """The statement was stopped because its tool call was cancelled (Stop); nothing was committed."""


def _cell(value: Any, max_chars: int) -> Any:
    """A JSON-ready cell: blobs as ``x'hex'``, long text cut to ``max_chars`` with an ellipsis."""
    if isinstance(value, bytes):
        value = "x'" + value[: max_chars // 2].hex() + "'"
    if isinstance(value, str) and len(value) > max_chars:
        return value[:max_chars] + "…"
    return value


def fetch_bounded(cur: sqlite3.Cursor, limits: ToolLimits) -> tuple[list[str], list[list[Any]], str | None]:
    """``(columns, rows, note)``: at most ``max_rows`` rows and ``result_max_bytes`` of JSON.

    ``note`` is None when nothing was cut off, else a plain sentence saying what was.
    """
    columns = [d[0] for d in cur.description]
    size, note = len(json.dumps(columns)) + 100, None
    rows: list[Any] = []
    while True:
        row = cur.fetchone()
        if row is None:
            break
        if len(rows) == limits.max_rows:
            note = f"Only the first {limits.max_rows} rows are shown."
            break
        cells = [_cell(v, limits.result_max_bytes // 4) for v in row]
        text = json.dumps(cells, default=str)
        if size + len(text) + 2 > limits.result_max_bytes:
            note = f"Result truncated: only the first {limits.result_max_bytes:,} bytes are shown."
            break
        rows.append(cells)
        size += len(text) + 2
    return columns, rows, note


def _result(cur: sqlite3.Cursor, limits: ToolLimits) -> str:
    if not cur.description:
        return f"{max(cur.rowcount, 0)} rows affected."
    columns, rows, note = fetch_bounded(cur, limits)
    cur.close()  # reset the statement: no pending read when the transaction commits
    out: dict[str, Any] = {"columns": columns, "rows": rows, "truncated": note is not None}
    if note:
        out["note"] = note
    return json.dumps(out, default=str)


def plain_error(exc: Exception, cancel: QueryCancel, limits: ToolLimits) -> Exception:
    """The exception to raise for a SQLite error: QueryCancelled or a ToolException with a plain message."""
    text = str(exc)
    if cancel.cancelled:
        return QueryCancelled("The statement was stopped.")
    if "interrupted" in text:
        return ToolException(
            f"The query ran longer than {limits.sql_timeout_s:g} s and was stopped. "
            "Add a LIMIT or a narrower WHERE clause."
        )
    if "too big" in text:
        return ToolException(f"SQL error: a value is larger than the {limits.sql_max_value_bytes:,}-byte limit.")
    if "too many attached" in text:
        return ToolException("SQL error: other databases cannot be attached (ATTACH, VACUUM INTO).")
    if "not authorized" in text:
        return ToolException(
            "SQL error: not allowed here (no PRAGMA, ATTACH, transaction control, extensions or "
            f"access to {LEDGER_TABLE})."
        )
    return ToolException(f"SQL error: {text}")


def run_read(db_path: Path, query: str, limits: ToolLimits, cancel: QueryCancel) -> str:
    """Run a read-only ``query`` on a ``mode=ro`` guarded connection (see the module docstring).

    Raises:
        ToolException: SQLite error, time limit, value-size limit, missing database.
        QueryCancelled: ``cancel`` was set while it ran.
    """
    if not Path(db_path).exists():
        raise ToolException("The demo database does not exist yet.")
    try:
        conn = open_guarded(db_path, read_only=True, limits=limits, cancel=cancel)
    except sqlite3.Error as exc:
        raise plain_error(exc, cancel, limits) from None
    try:
        return _result(conn.execute(query), limits)
    except (sqlite3.Error, sqlite3.Warning) as exc:
        raise plain_error(exc, cancel, limits) from None
    finally:
        cancel.detach()
        conn.close()


def _recorded(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute(f"SELECT result FROM {LEDGER_TABLE} WHERE tool_call_id = ?", (key,)).fetchone()
    return row[0] if row else None


def run_write_once(db_path: Path, key: str, query: str, limits: ToolLimits, cancel: QueryCancel) -> str:
    """Run an approved ``query`` and record its result under ``key``, in one transaction.

    Returns the recorded result if ``key`` already has one (the statement does not run again).

    Raises:
        ToolException: SQLite error (the transaction is rolled back: no change, no record).
        QueryCancelled: ``cancel`` was set while it ran (rolled back).
    """
    try:
        conn = open_guarded(db_path, read_only=False, limits=limits, cancel=cancel)
    except sqlite3.Error as exc:
        raise plain_error(exc, cancel, limits) from None
    try:
        conn.execute("BEGIN IMMEDIATE")  # one writer at a time: a concurrent replay waits here
        if (done := _recorded(conn, key)) is not None:
            return done
        conn.set_authorizer(write_authorizer)
        try:
            result = _result(conn.execute(query), limits)
        finally:
            conn.set_authorizer(None)
        conn.execute(
            f"INSERT INTO {LEDGER_TABLE} (tool_call_id, tool_name, result, created_at) VALUES (?, ?, ?, ?)",
            (key, "execute_sql", result, datetime.now(UTC).isoformat()),
        )
        conn.execute("COMMIT")
        return result
    except (sqlite3.Error, sqlite3.Warning) as exc:
        raise plain_error(exc, cancel, limits) from None
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        cancel.detach()
        conn.close()


def read_records(db_path: Path, limits: ToolLimits, cancel: QueryCancel) -> list[dict[str, Any]]:
    """The first ``max_rows`` rows of ``records`` as dicts (read-only, bounded like ``run_read``).

    Raises:
        ToolException: the table cannot be read (e.g. it was dropped with SQL), or a limit was hit.
        QueryCancelled: ``cancel`` was set while it ran.
    """
    sql = f"SELECT id, name, category, amount FROM records ORDER BY id LIMIT {int(limits.max_rows)}"
    try:
        data = json.loads(run_read(db_path, sql, limits, cancel))
    except ToolException as exc:
        raise ToolException(
            f"The records table cannot be read ({exc}). It may have been changed with SQL; "
            "restarting the app recreates it."
        ) from None
    return [dict(zip(data["columns"], row, strict=True)) for row in data["rows"]]
