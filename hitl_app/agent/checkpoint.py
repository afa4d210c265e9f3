"""Open the LangGraph checkpointer for a database URL (async; one per app lifetime).

Facts checked against langgraph-checkpoint-sqlite 3.x / -postgres 3.x:
``AsyncSqliteSaver(conn)`` on an aiosqlite connection (opened here with WAL and a busy timeout,
``hitl_app.store.sqlite``) sets up its tables on first use; ``AsyncPostgresSaver`` on
an ``AsyncConnectionPool`` needs the connection kwargs ``autocommit=True, prepare_threshold=0,
row_factory=dict_row`` and one ``await saver.setup()`` (idempotent migrations).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from langgraph.checkpoint.base import BaseCheckpointSaver

from hitl_app.settings import DatabaseURL

SETUP_LOCK_KEY = 7_463_521_002
"""PostgreSQL advisory-lock key held while the checkpointer's migrations run."""


@contextlib.asynccontextmanager
async def open_checkpointer(
    database_url: str | DatabaseURL, *, pool_size: int = 10
) -> AsyncIterator[BaseCheckpointSaver]:
    """Yield an async checkpointer for ``database_url``; closes it on exit.

    Args:
        database_url: a ``DatabaseURL`` or text that parses as one (``sqlite:///path/file.sqlite``,
            ``postgresql://user@host:port/db``, ``postgres://``, ``postgresql+psycopg://``).
        pool_size: maximum PostgreSQL connections of the checkpointer's pool (``HITL_DB_POOL_SIZE``);
            each is checked before use.

    Raises:
        ValueError: an unsupported URL scheme.
    """
    database = database_url if isinstance(database_url, DatabaseURL) else DatabaseURL.parse(database_url)
    if database.sqlite_path is not None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        from hitl_app.store import sqlite

        database.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        conn = await sqlite.open_async(database.sqlite_path)
        try:
            yield AsyncSqliteSaver(conn)
        finally:
            await conn.close()
        return
    async with _postgres_saver(database.psycopg_conninfo, pool_size) as saver:
        yield saver


@contextlib.asynccontextmanager
async def _postgres_saver(conninfo: str, pool_size: int) -> AsyncIterator[BaseCheckpointSaver]:
    """An ``AsyncPostgresSaver`` on a connection pool, its migrations run once (see below)."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import DictRow, dict_row
    from psycopg_pool import AsyncConnectionPool

    # check: a connection the server closed while it sat idle in the pool (a restart, an idle
    # timeout, pg_terminate_backend) is found and replaced when it is taken, not used and failed
    pool = AsyncConnectionPool(
        conninfo,
        min_size=min(2, pool_size),
        max_size=pool_size,
        check=AsyncConnectionPool.check_connection,
        open=False,
        connection_class=AsyncConnection[DictRow],
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    await pool.open()
    try:
        saver = AsyncPostgresSaver(pool)
        # Several workers may start at once: run the (idempotent) migrations one at a time.
        # Poll with pg_try_advisory_lock instead of blocking in pg_advisory_lock: a blocked
        # statement holds a snapshot, which the migrations' CREATE INDEX CONCURRENTLY
        # would wait for - an undetected deadlock.
        async with pool.connection() as conn:
            while True:
                row = await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (SETUP_LOCK_KEY,))).fetchone()
                if row is not None and row["ok"]:
                    break
                await asyncio.sleep(0.1)
            try:
                await saver.setup()
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK_KEY,))
        yield saver
    finally:
        await pool.close()
