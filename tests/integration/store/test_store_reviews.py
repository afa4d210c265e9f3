"""The review contract (store/reviews.py) on SQLite and PostgreSQL: the requested row, the
exactly-once claim (also under N concurrent claims), its release, and the audit read.

The claim is written as the app writes it: ``store.drafts.write_drafts(claim=audit_rows(...))``
(``tests.helpers.claims.claim``), the one write behind Submit, the deadline and the grants."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from hitl_app.review import (
    ActionRequest,
    ApproveDecision,
    EditDecision,
    EditedAction,
    PendingReview,
    RejectDecision,
    RespondDecision,
    ReviewConfig,
)
from hitl_app.store.drafts import read_drafts
from hitl_app.store.review_requests import record_review_requested
from hitl_app.store.reviews import (
    AlreadyDecided,
    audit_for_thread,
    is_claimed,
    release_claim,
    was_asked,
)
from hitl_app.store.tables import AuditRecord, ReviewRequestRecord
from tests.helpers.claims import claim

EMAIL = {"to": "bob@example.com", "subject": "lunch", "body": "noon"}


def review(interrupt_id: str = "i1", thread_id: str = "t1") -> PendingReview:
    actions = [("send_email", EMAIL), ("delete_file", {"path": "notes/x.txt"}), ("ask_user", {"question": "colour?"})]
    return PendingReview(
        thread_id=thread_id,
        interrupt_id=interrupt_id,
        action_requests=tuple(ActionRequest(name=n, args=a) for n, a in actions),
        review_configs=tuple(
            ReviewConfig(action_name=n, allowed_decisions=("approve", "edit", "reject", "respond")) for n, _ in actions
        ),
        tool_call_ids=("call_1", "call_2", None),
        checkpoint_id="cp1",
    )


def approve_all() -> list:
    return [ApproveDecision(type="approve")] * 3


async def rows(session, interrupt_id: str = "i1") -> list[AuditRecord]:
    async with session() as s:
        stmt = select(AuditRecord).where(AuditRecord.interrupt_id == interrupt_id).order_by(AuditRecord.action_index)
        return list((await s.exec(stmt)).all())


async def test_the_requested_row_is_written_once_however_often_the_review_is_read(session):
    await asyncio.gather(*(_record(session) for _ in range(5)))
    async with session() as s:
        found = (await s.exec(select(ReviewRequestRecord))).all()
    assert len(found) == 1
    assert (found[0].action_count, found[0].tool_names, found[0].decided) == (3, "send_email,delete_file,ask_user", False)
    assert found[0].requested_at.tzinfo is not None


async def _record(session) -> None:
    async with session() as s:
        await record_review_requested(session=s, review=review())


async def test_a_claim_records_each_decision_with_its_attributes(session):
    await _record(session)
    decisions = [
        EditDecision(type="edit", edited_action=EditedAction(name="send_email", args={**EMAIL, "to": "cat@example.com"})),
        RejectDecision(type="reject", message="keep it"),
        RespondDecision(type="respond", message="blue"),
    ]
    async with session() as s:
        await claim(s, review(), decisions, "Dana" * 40)
    edit, reject, respond = await rows(session)
    assert [r.decision_type for r in (edit, reject, respond)] == ["edit", "reject", "respond"]
    assert [r.tool_call_id for r in (edit, reject, respond)] == ["call_1", "call_2", None]
    assert edit.args_proposed == EMAIL and edit.args_executed == {**EMAIL, "to": "cat@example.com"}
    assert reject.args_executed is None and respond.args_executed is None
    assert (edit.message, reject.message, respond.message) == (None, "keep it", "blue")
    assert len(edit.reviewer) == 100 and edit.checkpoint_id == "cp1"
    assert edit.decided_at.tzinfo == UTC and edit.requested_at.tzinfo == UTC
    assert edit.waited_seconds == pytest.approx((edit.decided_at - edit.requested_at).total_seconds(), abs=0.01)
    async with session() as s:
        assert (await s.get(ReviewRequestRecord, "i1")).decided is True


async def test_an_approval_records_the_proposed_args_as_executed_and_an_empty_reviewer_as_anonymous(session):
    async with session() as s:
        await claim(s, review(), approve_all(), "")
    first = (await rows(session))[0]
    assert first.args_executed == EMAIL and first.reviewer == "anonymous" and first.waited_seconds == 0.0


async def test_a_second_claim_loses_and_changes_nothing(session):
    async with session() as s:
        await claim(s, review(), approve_all(), "ann")
    with pytest.raises(AlreadyDecided):
        async with session() as s:
            await claim(s, review(), [RejectDecision(type="reject")] * 3, "bob")
    assert [(r.reviewer, r.decision_type) for r in await rows(session)] == [("ann", "approve")] * 3


@pytest.mark.parametrize("claimers", [8])
async def test_of_n_concurrent_claims_exactly_one_wins(session, claimers):
    await _record(session)

    async def attempt(i: int) -> str:
        async with session() as s:
            await claim(s, review(), approve_all(), f"r{i}")
        return f"r{i}"

    results = await asyncio.gather(*(attempt(i) for i in range(claimers)), return_exceptions=True)
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1, results
    assert all(isinstance(r, AlreadyDecided) for r in results if not isinstance(r, str)), results
    assert {r.reviewer for r in await rows(session)} == set(winners) and len(await rows(session)) == 3


async def test_a_released_claim_makes_the_review_answerable_again(session):
    await _record(session)
    async with session() as s:
        await claim(s, review(), approve_all(), "ann")
        assert await is_claimed(session=s, interrupt_id="i1")
        assert await release_claim(session=s, interrupt_id="i1") == 3
        assert not await is_claimed(session=s, interrupt_id="i1")
        assert (await s.get(ReviewRequestRecord, "i1")).decided is False
        assert await release_claim(session=s, interrupt_id="i1") == 0
    async with session() as s:
        await claim(s, review(), approve_all(), "bob")
    assert {r.reviewer for r in await rows(session)} == {"bob"}


async def test_a_claim_released_keeping_its_decisions_keeps_the_drafts(session):
    """An undo window that ended after an approval of it stopped counting: only the audit rows go."""
    await _record(session)
    async with session() as s:
        await claim(s, review(), approve_all(), "ann")
        assert await release_claim(session=s, interrupt_id="i1", keep_decisions=True) == 3
        assert not await is_claimed(session=s, interrupt_id="i1")
        assert len(await read_drafts(session=s, interrupt_id="i1")) == 3, "the card still shows ann's approvals"
        assert (await s.get(ReviewRequestRecord, "i1")).decided is False


async def test_only_a_claim_older_than_the_cutoff_is_released_as_abandoned(session):
    now = datetime.now(UTC)
    async with session() as s:
        await claim(s, review("old"), approve_all(), "a", now=now - timedelta(minutes=5))
        await claim(s, review("new"), approve_all(), "b", now=now)
        cutoff = now - timedelta(seconds=30)
        assert await release_claim(session=s, interrupt_id="new", claimed_before=cutoff) == 0
        assert await release_claim(session=s, interrupt_id="old", claimed_before=cutoff) == 3
        assert await is_claimed(session=s, interrupt_id="new") and not await is_claimed(session=s, interrupt_id="old")


async def test_the_audit_read_is_keyed_by_tool_call_id_per_thread(session):
    async with session() as s:
        await claim(s, review("i1", "t1"), approve_all(), "ann")
        await claim(s, review("i2", "t2"), approve_all(), "bob")
        audit = await audit_for_thread(session=s, thread_id="t1")
    assert set(audit) == {"call_1", "call_2"}
    entry = audit["call_1"]
    assert (entry.tool_name, entry.decision_type, entry.reviewer) == ("send_email", "approve", "ann")
    assert entry.decided_at.tzinfo == UTC and entry.message is None


async def test_a_new_review_writes_both_index_rows_in_one_commit_and_names_the_owner(session, engines):
    """``record_review_waiting``: the requested row and the thread's pending flag together, one
    COMMIT; the owner comes back; a second call finds the row (not new), a thread without an
    index row gets one."""
    from sqlalchemy import event

    from hitl_app.store.review_requests import ReviewWaiting, record_review_waiting
    from hitl_app.store.tables import ThreadRecord
    from hitl_app.store.threads import get_thread, touch_thread

    async with session() as s:
        await touch_thread(session=s, thread_id="t1", owner="42", title="hello", pending_review=False)
    commits: list[int] = []

    def count(conn: object) -> None:
        commits.append(1)

    event.listen(engines.async_.sync_engine, "commit", count)
    try:
        async with session() as s:
            assert await record_review_waiting(session=s, review=review()) == ReviewWaiting(new=True, owner="42", escalated=False)
    finally:
        event.remove(engines.async_.sync_engine, "commit", count)
    assert len(commits) == 1
    async with session() as s:
        row = await s.get(ReviewRequestRecord, "i1")
        thread = await get_thread(session=s, thread_id="t1")
    assert row is not None and row.action_count == 3 and row.tool_names == "send_email,delete_file,ask_user"
    assert row.cards is not None and row.cards[0]["name"] == "send_email" and not row.decided
    assert thread is not None and thread.pending_review and thread.owner == "42" and thread.title == "hello"
    async with session() as s:
        assert await record_review_waiting(session=s, review=review()) == ReviewWaiting(new=False, owner="42", escalated=False)
        made_now = await record_review_waiting(session=s, review=review("i2", "t-new"))
        assert made_now == ReviewWaiting(new=True, owner=None, escalated=False)
    async with session() as s:
        made = await s.get(ThreadRecord, "t-new")
    assert made is not None and made.pending_review and made.owner is None


async def test_a_review_a_tab_showed_first_still_names_its_audience_unless_a_deadline_escalated_it(session):
    """A tab that shows the review before the run's index write writes its "requested" row first:
    the run still learns it is not escalated (so the signal names the policy's reviewers, not every
    inbox); after its deadline escalated it, ``escalated`` is True (CI: every member's inbox re-read)."""
    from hitl_app.store.desk_tables import ReviewExpiry
    from hitl_app.store.review_requests import ReviewWaiting, record_review_requested, record_review_waiting

    async with session() as s:
        await record_review_requested(session=s, review=review("i3", "t3"))
        assert await record_review_waiting(session=s, review=review("i3", "t3")) == ReviewWaiting(
            new=False, owner=None, escalated=False)
        s.add(ReviewExpiry(interrupt_id="i3", thread_id="t3", status="escalated", escalate_to="admin",
                           due_at=datetime.now(UTC)))
        await s.commit()
        assert (await record_review_waiting(session=s, review=review("i3", "t3"))).escalated


@pytest.mark.parametrize(
    ("asked", "email", "expected"),
    [
        ("|cfo@example.com|", "%@%", False),  # a member whose email is all wildcards
        ("|axb@x.com|", "a_b@x.com", False),  # "_" matches any one character in LIKE
        ("|a_b@x.com|", "axb@x.com", False),
        ("|a_b@x.com|", "a_b@x.com", True),
        ("|cfo@example.com|", "CFO@example.com", True),
    ],
)
async def test_was_asked_compares_the_email_exactly(session, asked, email, expected):
    async with session() as s:
        s.add(AuditRecord(thread_id="t1", interrupt_id="i1", action_index=0, tool_name="send_email",
                          decision_type="approve", asked=asked, requested_at=datetime.now(UTC), waited_seconds=1.0))
        await s.commit()
    async with session() as s:
        assert await was_asked(session=s, thread_id="t1", role="member", email=email) is expected
