"""The scale section's database rows that need no server: the inbox query on many pending reviews,
and the exactly-once counts the submit row reads back.

Inbox: ``n_reviews`` undecided ``review_requests`` rows spread over ``n_threads`` threads (each with
its ``threads`` row, half of them owned by one of 20 accounts), plus as many decided rows, are
written straight into the app's tables (bulk INSERT; no checkpoints behind them: the query reads
only these tables). Then the inbox read is timed ``reads`` times, one after the other:
``hitl_app.store.inbox`` when main has it (the reviewer inbox, issue 11), else the store query that
exists on main for "pending reviews across threads": ``hitl_app.store.desk.open_reviews`` (oldest
200 undecided). The figure is the query alone (session open, SELECT, rows to objects), not the page.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, text

from bench.common import pct
from bench.scale_infra import load_avg

BATCH = 2000


def _rows(n_reviews: int, n_threads: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from hitl_app.store.tables import utcnow

    now = utcnow()
    threads = [
        {"thread_id": str(uuid.uuid4()), "title": f"Thread {i}", "created_at": now, "updated_at": now,
         "pending_review": True, "owner": str(i % 20) if i % 2 else None}
        for i in range(n_threads)
    ]
    reviews = []
    for i in range(2 * n_reviews):
        reviews.append({
            "interrupt_id": uuid.uuid4().hex, "thread_id": threads[i % n_threads]["thread_id"],
            "requested_at": now - timedelta(seconds=2 * n_reviews - i), "action_count": 1,
            "tool_names": "send_email", "decided": i < n_reviews,  # the older half decided, the newer half pending
        })
    return threads, reviews


async def _seed(engine: Any, n_reviews: int, n_threads: int) -> None:
    from hitl_app.store.tables import ReviewRequestRecord, ThreadRecord, table_of

    threads, reviews = _rows(n_reviews, n_threads)
    async with engine.begin() as conn:
        for table, rows in ((table_of(ThreadRecord), threads), (table_of(ReviewRequestRecord), reviews)):
            for start in range(0, len(rows), BATCH):
                await conn.execute(insert(table), rows[start : start + BATCH])


def inbox_query() -> str:
    """Which query is timed: ``store.inbox`` (when on main) or ``store.desk.open_reviews``."""
    return "store.inbox" if importlib.util.find_spec("hitl_app.store.inbox") else "store.desk.open_reviews"


async def _read_once(engine: Any) -> int:
    from sqlmodel.ext.asyncio.session import AsyncSession

    from hitl_app.store.desk import open_reviews
    from hitl_app.store.tables import utcnow

    async with AsyncSession(engine, expire_on_commit=False) as session:
        rows = await open_reviews(session=session, requested_before=utcnow())
    return len(rows)


async def _plan(engine: Any, is_sqlite: bool) -> str:
    sql = (
        "SELECT * FROM review_requests WHERE decided = {f} AND requested_at <= CURRENT_TIMESTAMP "
        "ORDER BY requested_at LIMIT 200"
    ).format(f="0" if is_sqlite else "false")
    prefix = "EXPLAIN QUERY PLAN " if is_sqlite else "EXPLAIN "
    async with engine.connect() as conn:
        rows = (await conn.execute(text(prefix + sql))).all()
    return " / ".join(str(r[-1]) for r in rows)


async def _inbox(url: str, n_reviews: int, n_threads: int, reads: int) -> dict[str, Any]:
    from hitl_app.store.db import create_schema, make_engines

    engines = make_engines(url)
    try:
        await asyncio.to_thread(create_schema, engines)
        t0 = time.monotonic()
        await _seed(engines.async_, n_reviews, n_threads)
        seed_s = time.monotonic() - t0
        await _read_once(engines.async_)  # warm the pool and the statement cache
        times, got = [], 0
        for _ in range(reads):
            t = time.perf_counter()
            got = await _read_once(engines.async_)
            times.append((time.perf_counter() - t) * 1000)
        plan = await _plan(engines.async_, engines.is_sqlite)
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()
    return {
        "query": inbox_query(), "pending_reviews": n_reviews, "decided_reviews": n_reviews, "threads": n_threads,
        "rows_per_read": got, "reads": reads, "read_ms": {"p50": pct(times, 0.5), "p95": pct(times, 0.95), "max": max(times)},
        "seed_s": round(seed_s, 1), "plan": plan,
    }


def inbox_row(url: str, n_reviews: int, n_threads: int, reads: int) -> dict[str, Any]:
    """Seed and time the inbox read on the database at ``url`` (a fresh one). Returns the row's figures."""
    load_before = load_avg()
    out = asyncio.run(_inbox(url, n_reviews, n_threads, reads))
    return {**out, "load_before": load_before, "load_after": load_avg()}


def outbox_counter(url: str):
    """A ``count(subject_prefix, thread_ids) -> ({subject: mails}, audit rows)`` reading the app database at ``url``."""

    def count(prefix: str, thread_ids: list[str]) -> tuple[dict[str, int], int]:
        from sqlalchemy import bindparam

        from hitl_app.store.db import make_engines

        engines = make_engines(url)
        try:
            with engines.sync.connect() as conn:
                mails = dict(conn.execute(
                    text("SELECT subject, count(*) FROM outbox WHERE subject LIKE :p GROUP BY subject"), {"p": prefix + "%"}
                ).all())
                by_thread = text("SELECT count(*) FROM audit_records WHERE thread_id IN :ids")
                audit = conn.execute(
                    by_thread.bindparams(bindparam("ids", expanding=True)),
                    {"ids": thread_ids},
                ).scalar_one() if thread_ids else 0
        finally:
            engines.sync.dispose()
            asyncio.run(engines.async_.dispose())
        return {str(k): int(v) for k, v in mails.items()}, int(audit)

    return count
