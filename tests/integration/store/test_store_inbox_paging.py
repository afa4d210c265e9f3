"""The inbox in pages (store/inbox.py ``inbox_page``, store/inbox_query.py) on SQLite and
PostgreSQL: oldest first with a cursor and a total, only the reviews that wait for the person
(role, ownership, their own decisions), newest first for notifications, one thread, and the partial
index the app's table setup creates (also on a database made before it)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import inspect, text

from hitl_app.store.db import add_missing_indexes, create_schema
from hitl_app.store.drafts import NewDraft, write_drafts
from hitl_app.store.inbox import inbox_page
from hitl_app.store.tables import APP_TABLES, ReviewRequestRecord, utcnow
from hitl_app.store.threads import touch_thread
from tests.integration.store.test_store_inbox import ADA, MAY, MO, REX, ROB, TEAM, add_people, email, pay, raise_review


async def page(session, person, **kw):
    async with session() as s:
        return await inbox_page(session=s, person=person, rights=kw.pop("rights", TEAM), **kw)


async def payments(session, n: int, owner: str = "1", amount: int = 500) -> list[str]:
    """``n`` payments on their own threads, each one requested a second after the one before."""
    start = utcnow() - timedelta(hours=1)
    ids = []
    for i in range(n):
        tid = f"p{i:02d}"
        await raise_review(session, pay(tid, amount), owner=owner)
        async with session() as s:  # a fixed order, whatever the clock's resolution
            row = await s.get(ReviewRequestRecord, f"i-{tid}")
            row.requested_at = start + timedelta(seconds=i)
            s.add(row)
            await s.commit()
        ids.append(tid)
    return ids


async def test_pages_go_oldest_first_with_a_cursor_and_the_same_total_on_every_page(session):
    await add_people(session)
    ids = await payments(session, 7)
    seen, after, totals = [], "", []
    for _ in range(4):
        p = await page(session, REX, after=after, limit=3)
        seen += [i.pending.thread_id for i in p.items]
        totals.append(p.total)
        after = p.next_after
        if not after:
            break
    assert seen == ids  # every card once, oldest first
    assert totals == [7, 7, 7]
    assert after == ""


async def test_only_what_waits_for_the_person_is_counted_and_shown(session):
    await add_people(session)
    await payments(session, 3, owner="1")  # May's payments: reviewers decide, May may not approve
    await raise_review(session, email("m1"), owner="1")  # May's mail: she or a reviewer approves
    await raise_review(session, email("o1"), owner="4")  # Mo's mail
    assert [(i.pending.thread_id, i.tool_name) for i in (await page(session, MAY)).items] == [("m1", "send_email")]
    assert ((await page(session, MAY, limit=1)).total, (await page(session, MO, limit=1)).total) == (1, 1)
    rex = await page(session, REX, limit=2)
    assert (len(rex.items), rex.total) == (2, 5)
    assert (await page(session, ADA, limit=2)).total == 5  # an admin counts as a reviewer
    assert (await page(session, MAY, rights={}, limit=1)).total == 4  # default rights: owners decide their own


async def test_a_card_the_person_decided_leaves_their_count_not_the_others(session):
    await add_people(session)
    await payments(session, 3, amount=5000)  # two-person payments
    async with session() as s:
        await write_drafts(session=s, thread_id="p00", interrupt_id="i-p00", base_seq=0,
                           drafts=[NewDraft(0, "2", "Rex", "reviewer", {"type": "approve"})])
    rex, rob = await page(session, REX, limit=1), await page(session, ROB, limit=1)
    assert ([i.pending.thread_id for i in rex.items], rex.total) == (["p01"], 2)
    assert ([i.pending.thread_id for i in rob.items], rob.total) == (["p00"], 3)
    assert rob.items[0].approvals_left == 1


async def test_newest_first_and_one_thread(session):
    await add_people(session)
    ids = await payments(session, 4)
    newest = await page(session, REX, newest_first=True, limit=2)
    assert [i.pending.thread_id for i in newest.items] == [ids[3], ids[2]]
    rest = await page(session, REX, newest_first=True, after=newest.next_after, limit=5)
    assert [i.pending.thread_id for i in rest.items] == [ids[1], ids[0]]
    one = await page(session, REX, thread_id=ids[2])
    assert [i.pending.thread_id for i in one.items] == [ids[2]]
    with pytest.raises(ValueError):
        await page(session, REX, after="not a cursor")


async def test_a_decided_review_or_a_thread_no_longer_pending_leaves_the_pages(session):
    await add_people(session)
    ids = await payments(session, 3)
    async with session() as s:
        row = await s.get(ReviewRequestRecord, f"i-{ids[0]}")
        row.decided = True
        s.add(row)
        await s.commit()
        await touch_thread(session=s, thread_id=ids[1], owner=None, pending_review=False)
    p = await page(session, REX, limit=1)
    assert ([i.pending.thread_id for i in p.items], p.total, p.next_after) == ([ids[2]], 1, "")


async def test_the_partial_index_is_created_and_added_to_an_older_database(engines):
    def names() -> set[str]:
        with engines.sync.connect() as conn:
            return {i["name"] for i in inspect(conn).get_indexes("review_requests")}

    assert "ix_review_requests_open" in names()
    with engines.sync.begin() as conn:  # a database made before the index
        conn.execute(text("DROP INDEX ix_review_requests_open"))
    assert "ix_review_requests_open" not in names()
    await asyncio.to_thread(create_schema, engines)
    assert "ix_review_requests_open" in names()
    with engines.sync.begin() as conn:
        assert add_missing_indexes(conn, APP_TABLES) == []  # idempotent


async def test_a_review_a_deadline_escalated_to_a_role_reaches_that_role_and_above(session):
    from hitl_app.review import ActionRequest, PendingReview, ReviewConfig
    from hitl_app.store.desk_tables import ReviewExpiry

    await add_people(session)
    close = PendingReview(  # a tool the policy does not name: only the person who asked decides
        thread_id="t-close", interrupt_id="i-t-close",
        action_requests=(ActionRequest(name="close_account", args={"id": 7}),),
        review_configs=(ReviewConfig(action_name="close_account", allowed_decisions=("approve", "reject")),),
    )
    await raise_review(session, close, owner="1")
    assert ((await page(session, REX)).total, (await page(session, MAY)).total) == (0, 1)
    async with session() as s:
        s.add(ReviewExpiry(interrupt_id="i-t-close", thread_id="t-close", status="escalated", escalate_to="reviewer",
                           due_at=utcnow()))
        await s.commit()
    for person in (REX, ADA):
        p = await page(session, person)
        assert ([i.pending.thread_id for i in p.items], p.total) == (["t-close"], 1)
    assert (await page(session, MO)).total == 0  # a member is below the role it was escalated to


async def test_one_read_gives_the_first_pages_the_newest_and_the_open_threads_card(engines, session):
    from hitl_app.bus.review_signal import LocalReviewSignal
    from hitl_app.reviewers.inbox import ReviewInbox
    from hitl_app.store.desk_tables import ReviewExpiry
    from hitl_app.store.inbox import escalations

    await add_people(session)
    ids = await payments(session, 5)
    inbox = ReviewInbox(engines, TEAM, LocalReviewSignal())
    view = await inbox.first_pages(REX, limit=2, newest=2, thread_id=ids[4])
    assert ([i.pending.thread_id for i in view.page.items], view.page.total) == (ids[:2], 5)
    assert [i.pending.thread_id for i in view.newest] == [ids[4], ids[3]]
    assert [i.pending.thread_id for i in view.here] == [ids[4]]  # not on the page: read apart
    whole = await inbox.first_pages(REX, limit=10, newest=2, thread_id=ids[1])
    assert (whole.newest, [i.pending.thread_id for i in whole.here]) == ([], [ids[1]])
    # the escalated reviews, read once per read: undecided ones only
    async with session() as s:
        s.add(ReviewExpiry(interrupt_id=f"i-{ids[0]}", thread_id=ids[0], status="escalated", escalate_to="admin",
                           due_at=utcnow()))
        await s.commit()
        assert await escalations(session=s) == {f"i-{ids[0]}": "admin"}
        row = await s.get(ReviewRequestRecord, f"i-{ids[0]}")
        row.decided = True
        s.add(row)
        await s.commit()
        assert await escalations(session=s) == {}
