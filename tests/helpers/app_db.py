"""Read a running (or killed) app's SQLite data directly, to check what really happened.

The tests use these to assert side effects a user would notice: mails in the outbox, audit rows,
files in the sandbox. Read-only, plain ``sqlite3`` (no app code in the way).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def query(data_dir: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on ``<data_dir>/hitl.sqlite`` (empty when the table does not exist yet)."""
    path = Path(data_dir) / "hitl.sqlite"
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        con.close()


def outbox(data_dir: Path) -> list[str]:
    """Recipients of every mail in the outbox, in send order."""
    return [r[0] for r in query(data_dir, "SELECT [to] FROM outbox ORDER BY id")]


def audit_rows(data_dir: Path, thread_id: str | None = None) -> list[dict[str, Any]]:
    """Audit records (all, or of one thread) as dicts, oldest first."""
    con = sqlite3.connect(f"file:{Path(data_dir) / 'hitl.sqlite'}?mode=ro", uri=True, timeout=10)
    con.row_factory = sqlite3.Row
    try:
        sql = "SELECT * FROM audit_records" + (" WHERE thread_id = ?" if thread_id else "") + " ORDER BY id"
        return [dict(r) for r in con.execute(sql, (thread_id,) if thread_id else ())]
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        con.close()


def tool_effects(data_dir: Path, tool_name: str | None = None) -> int:
    """How many tool calls were executed (recorded effects), optionally of one tool."""
    if tool_name:
        return query(data_dir, "SELECT count(*) FROM tool_effects WHERE tool_name = ?", (tool_name,))[0][0]
    return query(data_dir, "SELECT count(*) FROM tool_effects")[0][0]


def sandbox(data_dir: Path, owner: str) -> Path:
    """The files sandbox ``owner``'s tools act on: ``<data_dir>/files/<owner key>/``.

    Falls back to the shared anonymous sandbox when the owner's does not exist (a server whose
    runs do not carry the thread's owner acts there).
    """
    from hitl_app.store.owners import owner_space

    files = Path(data_dir) / "files"
    own = owner_space(files_root=files, demo_db_path=Path(data_dir) / "demo_records.sqlite", owner=owner).files_dir
    return own if own.exists() else files / "anonymous"
