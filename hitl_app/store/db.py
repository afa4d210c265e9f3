"""Database engines for the app's own SQLModel tables.

One URL serves both the sync engine (used by tools, which LangGraph runs in worker threads) and the
async engine (used by the server's event handlers, which must never block the event loop).

URL forms and drivers: see ``hitl_app.settings.DatabaseURL`` (``sqlite+aiosqlite`` /
``postgresql+psycopg``, psycopg 3 for sync and async).
"""

from __future__ import annotations

import fcntl
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, Table, inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlmodel import SQLModel, create_engine

from hitl_app.settings import DatabaseURL
from hitl_app.store import sqlite


@dataclass(frozen=True)
class Engines:
    """The two engines on one database: ``sync`` for threads, ``async_`` for the event loop."""

    database: DatabaseURL
    sync: Engine
    async_: AsyncEngine

    @property
    def url(self) -> str:
        """The database URL as configured."""
        return self.database.raw

    @property
    def is_sqlite(self) -> bool:
        """True for a SQLite database."""
        return self.database.is_sqlite


def make_engines(url: str | DatabaseURL, *, pool_size: int = 10) -> Engines:
    """Create both engines for ``url`` (a ``DatabaseURL``, or text that parses as one).

    For SQLite the parent folder is created, and the async engine keeps ``pool_size`` connections
    open (plus as many again for a burst; SQLAlchemy's default keeps 5 and opens and closes a new
    connection, with its thread and pragmas, for every session beyond them: a review's card and a
    submission read several rows at once while other tabs read too). On PostgreSQL each engine keeps
    up to ``pool_size`` connections (plus as many again for a burst), each pinged before use, so one
    the server closed is replaced instead of failing the request. Raises ValueError for an
    unsupported scheme.
    """
    database = url if isinstance(url, DatabaseURL) else DatabaseURL.parse(url)
    if database.sqlite_path is not None:
        database.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        # WAL, busy timeout, short commits: see hitl_app.store.sqlite
        sync = create_engine(
            database.sqlalchemy_sync, connect_args={"check_same_thread": False, **sqlite.connect_args()}, hide_parameters=True
        )
        async_ = create_async_engine(
            database.sqlalchemy_async, connect_args=sqlite.connect_args(), hide_parameters=True, pool_size=pool_size,
            max_overflow=pool_size,
        )
        sqlite.install_pragmas(sync, foreign_keys=True)
        sqlite.install_pragmas(async_, foreign_keys=True)
    else:
        pool = {"pool_pre_ping": True, "pool_size": pool_size, "max_overflow": pool_size, "hide_parameters": True}
        sync = create_engine(database.sqlalchemy_sync, **pool)
        async_ = create_async_engine(database.sqlalchemy_async, **pool)
    return Engines(database=database, sync=sync, async_=async_)


SCHEMA_LOCK_KEY = 7_463_521_001
"""PostgreSQL advisory-lock key held while the schema is created (several workers start at once)."""


def create_schema(engines: Engines) -> None:
    """Create every app table that is missing (idempotent: safe on every start, and from several
    workers at once on PostgreSQL, where it runs under an advisory lock)."""
    from hitl_app.store.accounts import ACCOUNT_TABLES
    from hitl_app.store.api_tokens import API_TABLES
    from hitl_app.store.audit_chain import CHAIN_TABLES
    from hitl_app.store.choices import CHOICE_TABLES
    from hitl_app.store.desk_tables import DESK_TABLES
    from hitl_app.store.mail_links import MAIL_TABLES
    from hitl_app.store.tables import APP_TABLES
    from hitl_app.store.webhooks import WEBHOOK_TABLES

    tables = APP_TABLES + ACCOUNT_TABLES + DESK_TABLES + CHOICE_TABLES + CHAIN_TABLES + API_TABLES + MAIL_TABLES
    tables += WEBHOOK_TABLES
    if engines.database.sqlite_path is not None:
        # create_all checks, then creates: two workers starting at once on a new file would both
        # try to create a table ("table threads already exists"); one at a time, under a file lock
        lock_path = engines.database.sqlite_path.with_name(engines.database.sqlite_path.name + ".schema-lock")
        with open(lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with engines.sync.begin() as conn:
                    SQLModel.metadata.create_all(conn, tables=tables)
                    add_missing_columns(conn, tables)
                    add_missing_indexes(conn, tables)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return
    with engines.sync.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK_KEY})
        SQLModel.metadata.create_all(conn, tables=tables)
        add_missing_columns(conn, tables)
        add_missing_indexes(conn, tables)


def add_missing_columns(conn: Connection, tables: list[Table]) -> list[str]:
    """Add the nullable columns a newer version declares to tables an older version created.

    Only nullable columns without a server default are added (``ALTER TABLE ... ADD COLUMN``, on
    SQLite and PostgreSQL alike); rows written before read NULL there. Returns ``"table.column"``
    for each column added. Raises RuntimeError for a missing NOT NULL column (that needs a real
    migration, not this).
    """
    inspector = inspect(conn)
    added: list[str] = []
    for table in tables:
        if not inspector.has_table(table.name):
            continue
        present = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            if not column.nullable:
                raise RuntimeError(f"table {table.name} lacks the NOT NULL column {column.name}: migrate it by hand")
            kind = column.type.compile(dialect=conn.dialect)
            conn.execute(text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}'))
            added.append(f"{table.name}.{column.name}")
    return added


def add_missing_indexes(conn: Connection, tables: list[Table]) -> list[str]:
    """Create the indexes a newer version declares on tables an older version created
    (``create_all`` skips an existing table whole, its indexes too). Returns the names created."""
    inspector = inspect(conn)
    added: list[str] = []
    for table in tables:
        if not inspector.has_table(table.name):
            continue
        present = {i["name"] for i in inspector.get_indexes(table.name)}
        for index in sorted(table.indexes, key=lambda i: str(i.name)):
            if index.name not in present:
                index.create(conn)
                added.append(str(index.name))
    return added
