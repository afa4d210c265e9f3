"""Review metrics: reviews per day, median and p95 waited, outcomes per tool."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hitl_app.reviewers.metrics import compute, percentile
from hitl_app.store.tables import AuditRecord

NOW = datetime(2025, 5, 3, 12, 0, tzinfo=UTC)


def row(iid, tool, kind, waited, day=0, via=None, index=0):
    at = NOW - timedelta(days=day)
    return AuditRecord(thread_id="t", interrupt_id=iid, action_index=index, tool_name=tool, decision_type=kind,
                       requested_at=at, decided_at=at, waited_seconds=waited, via=via)


def test_percentiles_nearest_rank():
    assert percentile([], 0.5) == 0
    assert percentile([5, 1, 3], 0.5) == 3
    assert percentile(list(range(1, 101)), 0.95) == 95


def test_compute_counts_reviews_waits_and_outcomes():
    rows = [
        row("i1", "send_email", "approve", 10), row("i1", "write_file", "edit", 30, index=1),
        row("i2", "send_email", "reject", 60, day=1, via="deadline"),
        row("i3", "send_email", "respond", 20, day=1),
        row("grant:x", "send_email", "approve", 0, via="grant:4"),
    ]
    m = compute(rows, NOW - timedelta(days=2), NOW)
    assert m.reviews == 3
    assert [d["reviews"] for d in m.days] == [0, 2, 1]
    assert (m.median_wait_s, m.p95_wait_s) == (30, 60)
    email = next(t for t in m.per_tool if t["tool"] == "send_email")
    assert (email["approve"], email["reject"], email["expired"], email["respond"], email["granted"]) == (1, 0, 1, 1, 1)
    assert m.per_tool[0]["tool"] == "send_email"


def test_the_database_counts_what_compute_counts(tmp_path):
    """``aggregate`` (GROUP BY, ranks by ORDER BY ... OFFSET, on real SQLite) gives ``compute``'s metrics."""
    import asyncio
    import random

    from sqlmodel.ext.asyncio.session import AsyncSession

    from hitl_app.reviewers.metrics import aggregate
    from hitl_app.store.db import create_schema, make_engines

    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    create_schema(engines)
    rng = random.Random(7)
    rows = [row("i1", "send_email", "approve", 10), row("i1", "write_file", "edit", 30, index=1),
            row("i2", "send_email", "reject", 60, day=1, via="deadline"),
            row("grant:x", "send_email", "approve", 0, via="grant:4")]
    for i in range(120):  # a review's cards are decided together (one day)
        day = rng.randint(0, 2)
        rows += [row(f"r{i}", rng.choice(["a", "b", "c"]), rng.choice(["approve", "edit", "reject", "respond"]),
                     rng.randint(1, 5000) / 7, day=day, index=k) for k in range(rng.randint(1, 3))]
    rows.append(row("old", "a", "approve", 9, day=5))  # before the period
    want = compute([r for r in rows if r.decided_at >= NOW - timedelta(days=2)], NOW - timedelta(days=2), NOW)

    async def read():
        async with AsyncSession(engines.async_, expire_on_commit=False) as session:
            session.add_all(rows)
            await session.commit()
            return await aggregate(session, (NOW - timedelta(days=2)).replace(hour=0), NOW)

    try:
        got = asyncio.run(read())
    finally:
        asyncio.run(engines.async_.dispose())
        engines.sync.dispose()
    assert (got.reviews, got.median_wait_s, got.p95_wait_s) == (want.reviews, want.median_wait_s, want.p95_wait_s)
    assert got.days == want.days and got.per_tool == want.per_tool
