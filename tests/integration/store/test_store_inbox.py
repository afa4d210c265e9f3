"""The review inbox and reminder contracts (store/inbox.py, store/reminders.py) on SQLite and
PostgreSQL: which pending cards wait for whom under the team policy, oldest first, how many
approvals are left, who asked; and the exactly-once reminder claim."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlmodel import select

from hitl_app.agent.policy import load_policy_toml, rights_by_tool
from hitl_app.review import ActionRequest, PendingReview, ReviewConfig
from hitl_app.store import reminders
from hitl_app.store.accounts import Account
from hitl_app.store.drafts import NewDraft, write_drafts
from hitl_app.store.inbox import NO_ACCOUNT, pending_reviews
from hitl_app.store.review_requests import record_review_requested
from hitl_app.store.tables import ReviewRequestRecord, utcnow
from hitl_app.store.threads import touch_thread
from tests.helpers.claims import claim

TEAM = rights_by_tool(load_policy_toml(Path(__file__).parents[3] / "examples/policies/team.toml"))


@dataclass(frozen=True)
class P:
    account_id: int
    display_name: str
    role: str
    email: str = ""


MAY = P(1, "May", "member")
REX = P(2, "Rex", "reviewer")
ADA = P(3, "Ada", "admin")
MO = P(4, "Mo", "member")
ROB = P(5, "Rob", "reviewer")


async def add_people(session) -> None:
    async with session() as s:
        for p in (MAY, REX, ADA, MO, ROB):
            s.add(Account(id=p.account_id, email=f"{p.display_name.lower()}@example.com",
                          email_key=f"{p.display_name.lower()}@example.com", display_name=p.display_name, role=p.role))
        await s.commit()


def pay(thread_id: str, amount: int, interrupt_id: str | None = None) -> PendingReview:
    return PendingReview(
        thread_id=thread_id, interrupt_id=interrupt_id or f"i-{thread_id}",
        action_requests=(ActionRequest(name="transfer_funds", args={"amount": amount, "to": "Bob"}),),
        review_configs=(ReviewConfig(action_name="transfer_funds", allowed_decisions=("approve", "reject")),),
    )


def email(thread_id: str) -> PendingReview:
    return PendingReview(
        thread_id=thread_id, interrupt_id=f"i-{thread_id}",
        action_requests=(ActionRequest(name="send_email", args={"to": "a@example.com", "subject": "s", "body": "b"}),),
        review_configs=(ReviewConfig(action_name="send_email", allowed_decisions=("approve", "edit", "reject")),),
    )


async def raise_review(session, review: PendingReview, owner: str, title: str = "pay bob") -> None:
    async with session() as s:
        await touch_thread(session=s, thread_id=review.thread_id, owner=owner, title=title)
        await record_review_requested(session=s, review=review)
        await touch_thread(session=s, thread_id=review.thread_id, owner=None, pending_review=True)


async def inbox(session, person, rights=TEAM):
    async with session() as s:
        return await pending_reviews(session=s, person=person, rights=rights)


async def test_a_payment_waits_for_reviewers_and_admins_not_for_the_member_who_asked(session):
    await add_people(session)
    await raise_review(session, pay("t1", 500), owner="1")
    for person in (REX, ADA):
        (item,) = await inbox(session, person)
        assert (item.pending.thread_id, item.tool_name, item.pending.asked_by) == ("t1", "transfer_funds", "May")
        assert (item.approvals_left, item.approvals_needed, item.args["amount"]) == (1, 1, 500)
        assert item.waited_seconds >= 0
    assert await inbox(session, MAY) == []  # no self-approval: she may only withdraw it
    assert await inbox(session, MO) == []  # another member is not asked


async def test_oldest_first_across_threads_and_a_decided_review_leaves_every_inbox(session):
    await add_people(session)
    await raise_review(session, pay("t-old", 10), owner="1")
    await asyncio.sleep(0.02)
    await raise_review(session, pay("t-new", 20), owner="4")
    assert [i.pending.thread_id for i in await inbox(session, REX)] == ["t-old", "t-new"]
    from hitl_app.review import ApproveDecision

    async with session() as s:
        await claim(s, pay("t-old", 10), [ApproveDecision(type="approve")], "Rex")
    assert [i.pending.thread_id for i in await inbox(session, REX)] == ["t-new"]
    async with session() as s:  # the thread index says the review is no longer pending
        await touch_thread(session=s, thread_id="t-new", owner=None, pending_review=False)
    assert await inbox(session, ADA) == []


async def test_a_two_person_payment_leaves_the_first_approver_and_needs_one_more(session):
    await add_people(session)
    await raise_review(session, pay("t2", 5000), owner="1")
    (item,) = await inbox(session, REX)
    assert (item.approvals_left, item.approvals_needed) == (2, 2)
    async with session() as s:
        await write_drafts(session=s, thread_id="t2", interrupt_id="i-t2", base_seq=0,
                           drafts=[NewDraft(0, "2", "Rex", "reviewer", {"type": "approve"})])
    assert await inbox(session, REX) == []  # he approved: nothing waits for him
    (item,) = await inbox(session, ROB)
    assert (item.approvals_left, item.approvals_needed) == (1, 2)


async def test_default_rights_the_owner_decides_alone_and_a_browser_owner_has_no_name(session):
    await add_people(session)
    await raise_review(session, email("t3"), owner="1")
    await raise_review(session, email("t4"), owner="0b6f1c52-3d2e-4f5a-9b7c-1d2e3f4a5b6c")
    (item,) = await inbox(session, MAY, rights={})
    assert (item.pending.thread_id, item.tool_name, item.approvals_left) == ("t3", "send_email", 1)
    assert await inbox(session, REX, rights={}) == []
    legacy = P("0b6f1c52-3d2e-4f5a-9b7c-1d2e3f4a5b6c", "anonymous", "member")  # type: ignore[arg-type]
    (item,) = await inbox(session, legacy, rights={})
    assert item.pending.asked_by == NO_ACCOUNT


async def test_a_requested_row_without_cards_gets_them_when_the_review_is_read_again(session):
    await add_people(session)
    async with session() as s:
        await touch_thread(session=s, thread_id="t5", owner="1", title="old", pending_review=True)
        s.add(ReviewRequestRecord(interrupt_id="i-t5", thread_id="t5", action_count=1, tool_names="transfer_funds",
                                  requested_at=utcnow() - timedelta(hours=1)))
        await s.commit()
    assert await inbox(session, REX) == []
    async with session() as s:
        await record_review_requested(session=s, review=pay("t5", 50))
    (item,) = await inbox(session, REX)
    assert item.waited_seconds >= 3500  # the first time it was shown still counts


async def test_one_reminder_claim_wins_among_many_and_opening_first_means_no_mail(session):
    async def claim(account: str) -> bool:
        async with session() as s:
            return await reminders.claim_mail(session=s, interrupt_id="i1", account_id=account)

    results = await asyncio.gather(*(claim("2") for _ in range(6)))
    assert sorted(results) == [False] * 5 + [True]
    async with session() as s:
        assert await reminders.note_opened(session=s, interrupt_id="i1", account_id="3") is True
    assert await claim("3") is False  # opened before the reminder was due
    async with session() as s:  # a failed send is released and can be claimed again
        await reminders.release_mail(session=s, interrupt_id="i1", account_id="2")
    assert await claim("2") is True
    async with session() as s:
        await reminders.mark_mailed(session=s, interrupt_id="i1", account_id="2")
        assert await reminders.noticed(session=s, interrupt_ids=["i1", "i2"]) == {("i1", "2"), ("i1", "3")}
        from hitl_app.store.tables import ReviewReminder

        states = {r.account_id: r.state for r in (await s.exec(select(ReviewReminder))).all()}
    assert states == {"2": "mailed", "3": "opened"}
