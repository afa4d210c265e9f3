"""Every SQLite connection the app opens, with the same locking settings.

SQLite lets one writer at a time into a file. The app writes to its file from several places at
once (the checkpointer, the async engine of the event handlers, the sync engine the tools use in
worker threads, and a second server process on the same data folder), so every connection:

* uses WAL (``journal_mode=WAL``): readers never wait for the writer, and the writer never waits
  for readers; the setting is stored in the file, so a read-only connection sees it too;
* waits up to ``BUSY_TIMEOUT_MS`` for the write lock instead of failing at once with
  "database is locked" (``busy_timeout``; the wait happens in the connection's thread, never on
  the event loop);
* uses ``synchronous=NORMAL``, the usual pairing with WAL (a commit is durable once the WAL is
  checkpointed; a power cut can lose the last commits but never corrupts the file), which keeps
  write transactions short.

A lock wait that still times out raises ``sqlite3.OperationalError("database is locked")``;
``is_lock_timeout`` recognises it so callers can turn it into a retryable message.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.ext.asyncio import AsyncEngine

BUSY_TIMEOUT_MS = 15_000
"""How long (milliseconds) a connection waits for SQLite's write lock before giving up."""

_PRAGMAS = ("PRAGMA journal_mode=WAL", f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}", "PRAGMA synchronous=NORMAL")


def apply_pragmas(dbapi_conn: Any, *, foreign_keys: bool = False) -> None:
    """Set WAL, the busy timeout and ``synchronous=NORMAL`` on a DB-API connection (sync).

    ``dbapi_conn`` is a ``sqlite3.Connection`` or SQLAlchemy's aiosqlite adapter (both offer
    ``cursor()``). Raises ``sqlite3.OperationalError`` if the file cannot be switched to WAL
    (e.g. it is locked for longer than the default wait).
    """
    cur = dbapi_conn.cursor()
    try:
        for pragma in _PRAGMAS:
            cur.execute(pragma)
        if foreign_keys:
            cur.execute("PRAGMA foreign_keys=ON")
    finally:
        cur.close()


def connect(path: Path | str, *, read_only: bool = False, autocommit: bool = False) -> sqlite3.Connection:
    """A ``sqlite3`` connection to ``path`` with the app's settings.

    ``read_only`` opens ``file:<path>?mode=ro`` (the file must exist; it is not switched to WAL,
    only the busy timeout is set). ``autocommit`` leaves transactions to the caller
    (``isolation_level=None``, e.g. for ``BEGIN IMMEDIATE``). Raises ``sqlite3.OperationalError``
    when it cannot be opened.
    """
    timeout_s = BUSY_TIMEOUT_MS / 1000
    if read_only:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=timeout_s)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return conn
    if autocommit:
        conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
    else:
        conn = sqlite3.connect(path, timeout=timeout_s)
    apply_pragmas(conn)
    return conn


def install_pragmas(engine: Engine | AsyncEngine, *, foreign_keys: bool = False) -> None:
    """Apply ``apply_pragmas`` to every connection ``engine`` opens (sync or async engine)."""
    target = engine.sync_engine if isinstance(engine, AsyncEngine) else engine

    @event.listens_for(target, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        apply_pragmas(dbapi_conn, foreign_keys=foreign_keys)


def connect_args() -> dict[str, Any]:
    """Driver arguments for a SQLAlchemy SQLite engine (``timeout`` in seconds)."""
    return {"timeout": BUSY_TIMEOUT_MS / 1000}


def sync_engine(path: Path | str) -> Engine:
    """A sync SQLAlchemy engine on the SQLite file ``path`` (usable from any thread)."""
    engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False, **connect_args()}, hide_parameters=True)
    install_pragmas(engine)
    return engine


async def open_async(path: Path | str) -> Any:
    """An ``aiosqlite.Connection`` to ``path`` with the app's settings (for the checkpointer)."""
    import aiosqlite

    conn = await aiosqlite.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
    for pragma in _PRAGMAS:
        await conn.execute(pragma)
    return conn


def is_lock_timeout(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" / "database table is locked" (possibly wrapped by
    SQLAlchemy), i.e. a write lock that was not granted within ``BUSY_TIMEOUT_MS``."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, sqlite3.OperationalError) and "is locked" in str(exc):
            return True
        orig = getattr(exc, "orig", None)
        exc = orig if isinstance(orig, BaseException) else (exc.__cause__ or exc.__context__)  # type: ignore[assignment]
    return False
