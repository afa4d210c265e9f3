"""The scale section's database rows that need no server: the inbox query on many pending reviews,
and the exactly-once counts the submit row reads back.

Inbox: ``n_reviews`` undecided ``review_requests`` rows (each with its stored card: a
``transfer_funds`` of 500) spread over ``n_threads`` pending threads owned by 20 member accounts,
plus as many decided rows, are written straight into the app's tables (bulk INSERT; no checkpoints
behind them: the inbox reads only these tables). Then one reviewer's inbox read is timed ``reads``
times, one after the other: the first page of ``hitl_app.store.inbox.inbox_page`` under the team
policy (examples/policies/team.toml), 50 cards and the total count, as the /reviews page asks it.
The figure is the store call alone (session, SELECTs, count, cards, the rights rules per card), not
the page (``bench/scale_inbox_page.py`` times the page in Chromium).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from bench.common import pct
from bench.scale_infra import load_avg

BATCH = 2000
FIRST_MEMBER = 100_001
"""Account id of the first of the 20 seeded members who own the threads (high: clear of the ids
accounts signed in on a running app get)."""
ROOT = Path(__file__).resolve().parents[1]


def _rows(n_reviews: int, n_threads: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from hitl_app.store.tables import utcnow

    now = utcnow()
    threads = [
        {"thread_id": str(uuid.uuid4()), "title": f"Thread {i}", "created_at": now, "updated_at": now,
         "pending_review": True, "owner": str(FIRST_MEMBER + i % 20)}
        for i in range(n_threads)
    ]
    card = {"name": "transfer_funds", "args": {"amount": 500, "to": "Bob"}, "allowed_decisions": ["approve", "reject"]}
    reviews = []
    for i in range(2 * n_reviews):
        reviews.append({
            "interrupt_id": uuid.uuid4().hex, "thread_id": threads[i % n_threads]["thread_id"],
            "requested_at": now - timedelta(seconds=2 * n_reviews - i), "action_count": 1,
            "tool_names": "transfer_funds", "decided": i < n_reviews,  # the older half decided, the newer half pending
            "cards": [card],
        })
    return threads, reviews


async def seed(engine: Any, n_reviews: int, n_threads: int) -> None:
    """Write ``n_reviews`` pending and as many decided reviews over ``n_threads`` pending threads
    owned by 20 members, and the members and ``REVIEWER`` (see the module docstring), on the app
    database of ``engine`` (an ``AsyncEngine``; the schema must exist)."""
    from hitl_app.store.accounts import Account
    from hitl_app.store.tables import ReviewRequestRecord, ThreadRecord, table_of

    threads, reviews = _rows(n_reviews, n_threads)
    people = [{"id": i, "email": f"m{i}@example.com", "email_key": f"m{i}@example.com", "display_name": f"Member {i}",
               "role": "member"} for i in range(FIRST_MEMBER, FIRST_MEMBER + 20)]
    people.append({"id": REVIEWER.account_id, "email": REVIEWER.email, "email_key": REVIEWER.email,
                   "display_name": REVIEWER.display_name, "role": REVIEWER.role})
    async with engine.begin() as conn:
        await conn.execute(insert(table_of(Account)), people)
        for table, rows in ((table_of(ThreadRecord), threads), (table_of(ReviewRequestRecord), reviews)):
            for start in range(0, len(rows), BATCH):
                await conn.execute(insert(table), rows[start : start + BATCH])


@dataclass(frozen=True)
class _Reviewer:
    account_id: int
    display_name: str
    role: str
    email: str


REVIEWER = _Reviewer(100_999, "Rita Reviewer", "reviewer", "rita@example.com")
"""The person whose inbox is read (a reviewer under the team policy)."""


def inbox_query() -> str:
    """The store call timed: the first page of ``store.inbox.inbox_page`` (team policy, 50 cards
    and the total count), as the /reviews page asks it."""
    return "store.inbox.inbox_page"


async def _read_once(engine: Any, rights: Any) -> tuple[int, int]:
    """(cards on the first page, total count)."""
    from sqlmodel.ext.asyncio.session import AsyncSession

    from hitl_app.store.inbox import inbox_page

    async with AsyncSession(engine, expire_on_commit=False) as session:
        page = await inbox_page(session=session, person=REVIEWER, rights=rights)
    return len(page.items), page.total


async def _plan(engine: Any, rights: Any) -> str:
    """The database's plan of the page query (EXPLAIN QUERY PLAN / EXPLAIN), steps joined by " / "."""
    from sqlalchemy import select
    from sqlmodel import col

    from hitl_app.store import inbox_query
    from hitl_app.store.tables import ReviewRequestRecord, ThreadRecord

    stmt = (
        select(ReviewRequestRecord, ThreadRecord)
        .join(ThreadRecord, col(ThreadRecord.thread_id) == col(ReviewRequestRecord.thread_id))
        .where(inbox_query.may_wait_for(REVIEWER, rights))
        .order_by(col(ReviewRequestRecord.requested_at), col(ReviewRequestRecord.interrupt_id))
        .limit(50)
    )
    async with engine.connect() as conn:
        sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        prefix = "EXPLAIN QUERY PLAN " if conn.dialect.name == "sqlite" else "EXPLAIN "
        rows = (await conn.execute(text(prefix + sql))).all()
    return " / ".join(str(r[-1]).strip() for r in rows)


async def _inbox(url: str, n_reviews: int, n_threads: int, reads: int) -> dict[str, Any]:
    from hitl_app.agent.policy import load_policy_toml, rights_by_tool
    from hitl_app.store.db import create_schema, make_engines

    rights = rights_by_tool(load_policy_toml(ROOT / "examples" / "policies" / "team.toml"))
    engines = make_engines(url)
    try:
        await asyncio.to_thread(create_schema, engines)
        t0 = time.monotonic()
        await seed(engines.async_, n_reviews, n_threads)
        seed_s = time.monotonic() - t0
        await _read_once(engines.async_, rights)  # warm the pool and the statement cache
        times, got, total = [], 0, 0
        for _ in range(reads):
            t = time.perf_counter()
            got, total = await _read_once(engines.async_, rights)
            times.append((time.perf_counter() - t) * 1000)
        plan = await _plan(engines.async_, rights)
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()
    return {
        "query": inbox_query(), "pending_reviews": n_reviews, "decided_reviews": n_reviews, "threads": n_threads,
        "rows_per_read": got, "total_count": total,
        "reads": reads, "read_ms": {"p50": pct(times, 0.5), "p95": pct(times, 0.95), "max": max(times)},
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
