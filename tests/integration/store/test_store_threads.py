"""The thread index contract (store/threads.py) on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC

from hitl_app.store.threads import get_thread, list_threads, title_from, touch_thread


async def test_a_thread_is_indexed_with_its_owner_and_first_message_as_title(session):
    async with session() as s:
        assert await get_thread(session=s, thread_id="t1") is None
        await touch_thread(session=s, thread_id="t1", owner="alice", title="  email   bob about lunch ")
    async with session() as s:
        record = await get_thread(session=s, thread_id="t1")
    assert (record.owner, record.title, record.pending_review) == ("alice", "email bob about lunch", False)
    assert record.updated_at.tzinfo is not None and record.updated_at.utcoffset().total_seconds() == 0


async def test_touching_again_keeps_owner_and_title_and_sets_the_review_flag(session):
    async with session() as s:
        await touch_thread(session=s, thread_id="t1", owner="alice", title="first")
        first = (await get_thread(session=s, thread_id="t1")).updated_at
    await asyncio.sleep(0.01)
    async with session() as s:
        await touch_thread(session=s, thread_id="t1", owner=None, title="second", pending_review=True)
    async with session() as s:
        record = await get_thread(session=s, thread_id="t1")
    assert (record.owner, record.title, record.pending_review) == ("alice", "first", True)
    assert record.updated_at > first


async def test_a_thread_started_without_text_is_named_by_its_first_message(session):
    async with session() as s:
        await touch_thread(session=s, thread_id="t1", owner="alice")
        await touch_thread(session=s, thread_id="t1", owner="alice", title="hello there")
        assert (await get_thread(session=s, thread_id="t1")).title == "hello there"


async def test_list_is_per_owner_newest_first_and_limited(session):
    for tid, owner in (("a1", "alice"), ("b1", "bob"), ("a2", "alice"), ("a3", "alice")):
        async with session() as s:
            await touch_thread(session=s, thread_id=tid, owner=owner, title=tid)
        await asyncio.sleep(0.01)
    async with session() as s:
        await touch_thread(session=s, thread_id="a1", owner="alice", pending_review=True)
        rows = await list_threads(session=s, owner="alice", limit=10)
        assert [r.thread_id for r in rows] == ["a1", "a3", "a2"]
        assert rows[0].pending_review and not rows[1].pending_review
        assert all(r.updated_at.tzinfo == UTC for r in rows)
        assert [r.thread_id for r in await list_threads(session=s, owner="alice", limit=2)] == ["a1", "a3"]
        assert [r.thread_id for r in await list_threads(session=s, owner="bob")] == ["b1"]
        assert await list_threads(session=s, owner="mallory") == []


def test_titles_are_one_line_and_at_most_60_characters():
    assert title_from("") == "New chat"
    assert title_from("a\n b\tc") == "a b c"
    long = title_from("x" * 100)
    assert len(long) == 60 and long.endswith("...")
