"""Which SQL counts as read-only, and the guarded SQLite connections the SQL tools run on.

Read-only is decided by what the statement DOES, not by how it starts: it is compiled
(``EXPLAIN <query>`` prepares the statement and lists its bytecode without running it) against a
fixed in-memory copy of the demo schema, and it is read-only only when

* it is one statement that compiles under an authorizer allowing only reads (``SELECT``, ``READ``,
  ``RECURSIVE`` and functions other than ``load_extension``), which refuses ``PRAGMA``, ``ATTACH``,
  transactions and every kind of write SQLite reports to an authorizer;
* its program produces rows (a ``ResultRow`` opcode): ``VACUUM``, ``REINDEX`` and ``DROP TABLE IF
  EXISTS <missing>`` produce none, and SQLite calls no authorizer for them;
* its program has none of the opcodes that change a database or the connection (``OpenWrite``,
  ``Vacuum``, ``CreateBtree``, ``Destroy``, ``Clear``, ``ParseSchema``, ``VBegin``, ...) and every
  ``Transaction`` opcode has ``p2 == 0`` (a read transaction).

Because the schema is fixed, the answer depends only on the query text: the review policy's
``when`` predicate runs again when a run resumes and must give the same answer then. A query on a
table the owner created later is not known to be read-only, so it asks for a review.

At run time every statement runs on a connection from ``open_guarded``: no attached databases
(``SQLITE_LIMIT_ATTACHED = 0`` blocks ``ATTACH`` and ``VACUUM INTO``), a bounded value size, a
deadline and a cancel flag checked by a progress handler, and an authorizer. Reads run on a
``mode=ro`` connection with ``PRAGMA query_only = 1``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateTable

from hitl_app.agent.limits import ToolLimits
from hitl_app.store import sqlite as app_sqlite
from hitl_app.store.tables import Record, table_of

MAX_QUERY_CHARS = 100_000
"""The longest SQL text the tools accept (``SQLITE_LIMIT_SQL_LENGTH``)."""

LEDGER_TABLE = "hitl_tool_effects"
"""The table in each demo database that records the result of each executed write (see sql_exec)."""

DEMO_SCHEMA: tuple[str, ...] = (
    str(CreateTable(table_of(Record), if_not_exists=True).compile(dialect=sqlite_dialect.dialect())).strip(),
)
"""DDL of the demo database as seeded: the schema read-only SQL is classified against."""

WRITE_OPCODES = frozenset({
    "OpenWrite", "Vacuum", "IncrVacuum", "CreateBtree", "Destroy", "Clear", "ParseSchema",
    "DropTable", "DropIndex", "DropTrigger", "SetCookie", "VBegin", "VCreate", "VDestroy",
    "VUpdate", "VRename", "JournalMode", "MaxPgcnt", "SqlExec", "Expire", "AutoCommit",
    "Savepoint", "LoadAnalysis", "Checkpoint", "TableLock",
})
"""Opcodes that change a database file, the schema or the connection: a read never has them."""

DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"})
"""SQL functions no tool statement may call (they load code or touch files)."""

_READ_ACTIONS = frozenset({
    sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33),
})
_NEVER_ACTIONS = frozenset({
    sqlite3.SQLITE_TRANSACTION, getattr(sqlite3, "SQLITE_SAVEPOINT", 32), sqlite3.SQLITE_ATTACH,
    sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA,
})


def _read_authorizer(action: int, arg1: Any, arg2: Any, *_: Any) -> int:
    """Allow only reads; deny the functions in ``DENIED_FUNCTIONS``."""
    if action == sqlite3.SQLITE_FUNCTION and str(arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY


def write_authorizer(action: int, arg1: Any, arg2: Any, *_: Any) -> int:
    """For an approved statement: no transaction control, ATTACH, PRAGMA, extension, or ledger access."""
    if action in _NEVER_ACTIONS or LEDGER_TABLE in (arg1, arg2):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _bound(conn: sqlite3.Connection, max_value_bytes: int) -> None:
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_QUERY_CHARS + 64)


def program_only_reads(program: Sequence[Sequence[Any]]) -> bool:
    """True when an ``EXPLAIN`` listing (rows ``addr, opcode, p1, p2, ...``) produces rows and writes nothing."""
    if not any(row[1] == "ResultRow" for row in program):
        return False
    return not any(
        row[1] in WRITE_OPCODES or (row[1] == "Transaction" and row[3] != 0) for row in program
    )


def is_read_only_sql(query: str, schema: Sequence[str] = DEMO_SCHEMA) -> bool:
    """True when ``query`` is ONE statement that only reads (see the module docstring).

    Args:
        query: the SQL text the model proposed.
        schema: DDL statements of the database it is classified against (default: the demo schema).

    Returns:
        False for anything else: writes, DDL, ``VACUUM``/``REINDEX``/``ANALYZE``, ``PRAGMA``,
        ``ATTACH``, transactions, several statements, a syntax error, an unknown table, NUL bytes,
        more than ``MAX_QUERY_CHARS`` characters. Never raises; never runs the statement.
    """
    if not isinstance(query, str) or not query.strip() or "\x00" in query or len(query) > MAX_QUERY_CHARS:
        return False
    conn = sqlite3.connect(":memory:")
    try:
        for ddl in schema:
            conn.execute(ddl)
        _bound(conn, ToolLimits().sql_max_value_bytes)
        conn.set_authorizer(_read_authorizer)
        program = conn.execute("EXPLAIN " + query).fetchall()
    except (sqlite3.Error, sqlite3.Warning):
        # Warning / ProgrammingError: "You can only execute one statement at a time."
        return False
    finally:
        conn.close()
    return program_only_reads(program)


class QueryCancel:
    """A cancel flag shared between the event loop and the thread running a statement.

    ``cancel()`` may be called from any thread: it sets the flag (checked by the progress handler
    of the connection) and calls ``sqlite3.Connection.interrupt()`` on the attached connection.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.cancelled = False

    def attach(self, conn: sqlite3.Connection) -> None:
        """Remember the connection now running the statement (interrupting it if already cancelled)."""
        with self._lock:
            self._conn = conn
            if self.cancelled:
                conn.interrupt()

    def detach(self) -> None:
        """Forget the connection (call before closing it)."""
        with self._lock:
            self._conn = None

    def cancel(self) -> None:
        """Stop the running statement as soon as possible."""
        with self._lock:
            self.cancelled = True
            if self._conn is not None:
                self._conn.interrupt()


def open_guarded(db_path: Path, *, read_only: bool, limits: ToolLimits, cancel: QueryCancel) -> sqlite3.Connection:
    """Open ``db_path`` for one tool statement, bounded and cancellable.

    Args:
        db_path: an existing SQLite file.
        read_only: True for ``mode=ro`` + ``PRAGMA query_only = 1`` + the read authorizer; False
            for an approved statement: autocommit mode, so the caller controls the transaction,
            and no authorizer, so the caller installs ``write_authorizer`` around the statement.
        limits: time and size bounds; the deadline starts now.
        cancel: flag checked every 1000 virtual-machine steps; the connection is attached to it.

    Returns:
        The connection; the caller must ``cancel.detach()`` and close it.

    Raises:
        sqlite3.Error: the file cannot be opened.
    """
    busy = max(0.1, min(5.0, limits.sql_timeout_s))
    if read_only:
        uri = f"{Path(db_path).resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=busy, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only = 1")
    else:
        conn = sqlite3.connect(db_path, timeout=busy, isolation_level=None, check_same_thread=False)
        app_sqlite.apply_pragmas(conn)  # WAL, like every app connection
        conn.execute(f"PRAGMA busy_timeout={int(busy * 1000)}")
    _bound(conn, limits.sql_max_value_bytes)
    deadline = time.monotonic() + limits.sql_timeout_s
    conn.set_progress_handler(lambda: int(cancel.cancelled or time.monotonic() > deadline), 1000)
    if read_only:
        conn.set_authorizer(_read_authorizer)
    cancel.attach(conn)
    return conn
