"""Database engines for the app's own SQLModel tables.

One URL serves both the sync engine (used by tools, which LangGraph runs in worker threads) and the
async engine (used by the server's event handlers, which must never block the event loop).

URL forms accepted: ``sqlite:///path``, ``postgresql://user@host:port/db`` (also ``postgres://``).
The driver is filled in here: ``sqlite+aiosqlite`` / ``postgresql+psycopg`` (psycopg 3, sync and async).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlmodel import SQLModel, create_engine


def _driver_urls(url: str) -> tuple[str, str]:
    """Map a plain database URL to (sync SQLAlchemy URL, async SQLAlchemy URL).

    Raises:
        ValueError: for a scheme other than sqlite or postgresql.
    """
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        return f"sqlite:///{path}", f"sqlite+aiosqlite:///{path}"
    for prefix in ("postgresql://", "postgres://", "postgresql+psycopg://"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            return f"postgresql+psycopg://{rest}", f"postgresql+psycopg://{rest}"
    raise ValueError(
        f"DATABASE_URL must start with sqlite:/// or postgresql:// (got {url.split(':', 1)[0]!r})"
    )


def _sqlite_pragmas(engine: Engine | AsyncEngine) -> None:
    """WAL + a busy timeout, so the checkpointer, the tools and the UI can share one file."""
    target = engine.sync_engine if isinstance(engine, AsyncEngine) else engine

    @event.listens_for(target, "connect")
    def _on_connect(dbapi_conn, _record):  # pragma: no cover - exercised by every sqlite test
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA busy_timeout=5000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()


@dataclass(frozen=True)
class Engines:
    """The two engines on one database: ``sync`` for threads, ``async_`` for the event loop."""

    url: str
    sync: Engine
    async_: AsyncEngine

    @property
    def is_sqlite(self) -> bool:
        """True for a SQLite database."""
        return self.url.startswith("sqlite")


def make_engines(url: str) -> Engines:
    """Create both engines for ``url`` (see the module docstring for accepted forms).

    For SQLite the parent folder is created. Raises ValueError for an unsupported scheme.
    """
    sync_url, async_url = _driver_urls(url)
    if sync_url.startswith("sqlite"):
        Path(sync_url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
        sync = create_engine(sync_url, connect_args={"check_same_thread": False, "timeout": 5}, hide_parameters=True)
        async_ = create_async_engine(async_url, connect_args={"timeout": 5}, hide_parameters=True)
        _sqlite_pragmas(sync)
        _sqlite_pragmas(async_)
    else:
        sync = create_engine(sync_url, pool_pre_ping=True, hide_parameters=True)
        async_ = create_async_engine(async_url, pool_pre_ping=True, hide_parameters=True)
    return Engines(url=url, sync=sync, async_=async_)


SCHEMA_LOCK_KEY = 7_463_521_001
"""PostgreSQL advisory-lock key held while the schema is created (several workers start at once)."""


def create_schema(engines: Engines) -> None:
    """Create every app table that is missing (idempotent: safe on every start, and from several
    workers at once on PostgreSQL, where it runs under an advisory lock)."""
    from hitl_app.store.accounts import ACCOUNT_TABLES
    from hitl_app.store.tables import APP_TABLES

    tables = APP_TABLES + ACCOUNT_TABLES
    if engines.is_sqlite:
        SQLModel.metadata.create_all(engines.sync, tables=tables)
        return
    with engines.sync.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK_KEY})
        SQLModel.metadata.create_all(conn, tables=tables)
