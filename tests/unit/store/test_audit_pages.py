"""The audit page reads a page of decisions, their count and the filters' choices from the database
(issue 23: the page read every decision, twice, and took 1.7 s with 10,000); real SQLite."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.audit import count_decisions, decision_options, list_decisions
from hitl_app.store.db import create_schema, make_engines
from hitl_app.store.tables import AuditRecord, ThreadRecord

T0 = datetime(2025, 5, 3, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class _Who:
    account_id: int
    role: str
    display_name: str = "Ada"
    email: str = "ada@example.com"


def test_pages_count_and_options_come_from_the_database(tmp_path):
    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    create_schema(engines)
    threads = [ThreadRecord(thread_id=f"t{i}", title=f"Thread {i}", owner="1" if i < 2 else "2") for i in range(3)]
    decisions = [
        AuditRecord(thread_id=f"t{i % 3}", interrupt_id=f"i{i}", action_index=0, tool_name=("send_email", "write_file")[i % 2],
                    decision_type="approve", requested_at=T0, decided_at=T0 + timedelta(seconds=i), waited_seconds=1.0)
        for i in range(250)
    ]

    async def run():
        async with AsyncSession(engines.async_, expire_on_commit=False) as session:
            session.add_all([*threads, *decisions])
            await session.commit()
        admin, member = _Who(9, "admin"), _Who(1, "member")
        first = await list_decisions(engine=engines.async_, viewer=admin, limit=100)
        third = await list_decisions(engine=engines.async_, viewer=admin, limit=100, offset=200)
        return (first, third, await count_decisions(engine=engines.async_, viewer=admin),
                await count_decisions(engine=engines.async_, viewer=admin, tool_name="send_email"),
                await count_decisions(engine=engines.async_, viewer=member),
                await decision_options(engine=engines.async_, viewer=admin),
                await decision_options(engine=engines.async_, viewer=member))

    try:
        first, third, total, emails, mine, everyone, members = asyncio.run(run())
    finally:
        asyncio.run(engines.async_.dispose())
        engines.sync.dispose()
    assert [r.interrupt_id for r in first[:2]] == ["i249", "i248"] and len(first) == 100
    assert [r.interrupt_id for r in third] == [f"i{i}" for i in range(49, -1, -1)]  # the oldest 50
    assert (total, emails) == (250, 125)
    assert mine == len([d for d in decisions if d.thread_id in ("t0", "t1")])  # a member: their own threads
    assert sorted(everyone[0]) == [("t0", "Thread 0"), ("t1", "Thread 1"), ("t2", "Thread 2")]
    assert everyone[1] == ["send_email", "write_file"]
    assert everyone[2] == 3
    assert sorted(t for t, _ in members[0]) == ["t0", "t1"]

