"""The audit page's Thread filter over SQLite and PostgreSQL: the threads decided on most recently, how many
there are in all, and a thread reached by its id (``/audit?thread=``) only when its decisions are the viewer's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hitl_app.desk.cards import BrowserPerson
from hitl_app.store.audit import decision_options, thread_title
from hitl_app.store.tables import AuditRecord, ThreadRecord

T0 = datetime(2025, 5, 3, 12, 0, tzinfo=UTC)


async def test_the_thread_filter_lists_the_newest_threads_and_a_link_reaches_any_other(engines, session):
    """With more threads than the filter lists, it offers those decided on most recently (newest first) and
    counts them all; ``thread_title`` finds any thread the viewer may see, and none they may not."""
    threads = [ThreadRecord(thread_id=f"t{i}", title=f"Thread {i}", owner="1" if i % 2 else "2") for i in range(12)]
    decisions = [
        AuditRecord(thread_id=f"t{i}", interrupt_id=f"i{i}", action_index=0, tool_name="send_email", decision_type="approve",
                    requested_at=T0, decided_at=T0 + timedelta(minutes=i), waited_seconds=1.0)
        for i in range(12)
    ]

    async with session() as s:
        s.add_all([*threads, *decisions])
        await s.commit()
    admin, member = BrowserPerson("9", role="admin"), BrowserPerson("1")
    everyone = await decision_options(engine=engines.async_, viewer=admin, threads=5)
    mine = await decision_options(engine=engines.async_, viewer=member, threads=5)
    found = [await thread_title(engine=engines.async_, viewer=who, thread_id=tid)
             for who, tid in ((admin, "t0"), (member, "t1"), (member, "t0"), (admin, "nope"))]
    assert [t for t, _ in everyone[0]] == ["t11", "t10", "t9", "t8", "t7"] and everyone[2] == 12
    assert [t for t, _ in mine[0]] == ["t11", "t9", "t7", "t5", "t3"] and mine[2] == 6  # a member: their own threads
    assert found == ["Thread 0", "Thread 1", None, None]  # any thread for an admin; a member's own only
