"""SQLite under concurrent writers: every connection the app opens uses WAL and a busy timeout.

The app's one SQLite file is written by the checkpointer, the async engine (event handlers), the
sync engine (tools, in worker threads) and possibly a second server process; the demo workspace
has its own file. A connection without a busy timeout fails at once with "database is locked"
when another one holds the write lock; a file not in WAL makes readers and the writer wait for
each other. These tests read the settings off every kind of connection the app opens, and keep
new code from opening SQLite any other way.
"""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

from sqlalchemy import text

from hitl_app.agent.checkpoint import open_checkpointer
from hitl_app.agent.tools import DemoWorkspace
from hitl_app.store import inspect
from hitl_app.store import sqlite as app_sqlite
from hitl_app.store.db import make_engines
from tests.helpers.paths import ROOT

WANT = ("wal", app_sqlite.BUSY_TIMEOUT_MS)


def _pragmas_sync(conn) -> tuple[str, int]:
    cur = conn.cursor()
    try:
        mode = cur.execute("PRAGMA journal_mode").fetchone()[0]
        busy = cur.execute("PRAGMA busy_timeout").fetchone()[0]
    finally:
        cur.close()
    return str(mode).lower(), int(busy)


async def test_every_sqlite_connection_uses_wal_and_a_busy_timeout(tmp_path: Path):
    db = tmp_path / "hitl.sqlite"
    seen: dict[str, tuple[str, int]] = {}
    engines = make_engines(f"sqlite:///{db}")
    try:
        with engines.sync.connect() as conn:
            seen["sqlmodel sync engine"] = _pragmas_sync(conn.connection.dbapi_connection)
        async with engines.async_.connect() as conn:
            mode = (await conn.execute(text("PRAGMA journal_mode"))).scalar_one()
            busy = (await conn.execute(text("PRAGMA busy_timeout"))).scalar_one()
            seen["sqlmodel async engine"] = (str(mode).lower(), int(busy))
        async with open_checkpointer(f"sqlite:///{db}") as saver:
            async with saver.conn.execute("PRAGMA journal_mode") as cur:
                mode = (await cur.fetchone())[0]
            async with saver.conn.execute("PRAGMA busy_timeout") as cur:
                busy = (await cur.fetchone())[0]
            seen["checkpointer"] = (str(mode).lower(), int(busy))
        ws = DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite")
        ws.ensure()
        demo_db = ws.space("owner-a").demo_db  # each owner's own demo database
        # the tools' own connections (execute_sql, the read-only check) and the workspace views
        for name, conn in {
            "tool connection": app_sqlite.connect(demo_db),
            "read-only tool connection": app_sqlite.connect(demo_db, read_only=True),
        }.items():
            try:
                seen[name] = _pragmas_sync(conn)
            finally:
                conn.close()
        assert inspect.records(db_path=demo_db)[1], "the records view reads the demo file"
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()
    wrong = {name: got for name, got in seen.items() if got != WANT}
    assert not wrong, f"connections without WAL + busy_timeout={app_sqlite.BUSY_TIMEOUT_MS}: {wrong}"


_OPENERS = {"connect", "create_engine", "create_async_engine", "from_conn_string"}
# sql_guard opens the tool connections itself (autocommit, ``mode=ro`` + ``query_only``, progress
# handler, limits) and applies ``store.sqlite.apply_pragmas`` to the writable one.
_ALLOWED = {"hitl_app/store/sqlite.py", "hitl_app/store/db.py", "hitl_app/agent/sql_guard.py"}


def test_sqlite_is_opened_only_through_the_app_helpers():
    """No other module calls ``sqlite3.connect`` / ``aiosqlite.connect`` / ``create_engine`` /
    ``AsyncSqliteSaver.from_conn_string`` (which would open a connection without the settings)."""
    offenders = []
    for path in sorted((ROOT / "hitl_app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in _ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            owner = ast.unparse(fn.value) if isinstance(fn, ast.Attribute) else ""
            if name in ("create_engine", "create_async_engine", "from_conn_string") or (
                name == "connect" and owner in ("sqlite3", "aiosqlite")
            ):
                offenders.append(f"{rel}:{node.lineno}: {ast.unparse(fn)}(...)")
    assert not offenders, "open SQLite through hitl_app.store.sqlite / store.db:\n" + "\n".join(offenders)


def test_a_lock_wait_that_times_out_ends_the_run_with_a_retryable_message():
    """A run ended by "database is locked" says so plainly and offers Retry (not an internal error),
    whether it comes from the live run or from the error text stored in the checkpoint."""
    from sqlalchemy.exc import OperationalError

    from hitl_app.runs.errors import DATABASE_BUSY, describe_error_text, describe_run_error

    raw = sqlite3.OperationalError("database is locked")
    wrapped = OperationalError("INSERT INTO checkpoints ...", {}, raw)
    assert describe_run_error(raw) == describe_run_error(wrapped) == DATABASE_BUSY
    assert describe_error_text(repr(raw)) == DATABASE_BUSY
    assert "Retry" in DATABASE_BUSY and "internal error" not in DATABASE_BUSY
    assert app_sqlite.is_lock_timeout(wrapped) and not app_sqlite.is_lock_timeout(sqlite3.OperationalError("no such table: x"))
