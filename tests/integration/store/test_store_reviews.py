"""The review contract (store/reviews.py) on SQLite and PostgreSQL: the requested row, the
exactly-once claim (also under N concurrent claims), its release, and the audit read."""

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
from hitl_app.store.reviews import (
    AlreadyDecided,
    audit_for_thread,
    claim_review,
    is_claimed,
    record_review_requested,
    release_claim,
)
from hitl_app.store.tables import AuditRecord, ReviewRequestRecord

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
        await claim_review(session=s, review=review(), decisions=decisions, reviewer="Dana" * 40)
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
        await claim_review(session=s, review=review(), decisions=approve_all(), reviewer="")
    first = (await rows(session))[0]
    assert first.args_executed == EMAIL and first.reviewer == "anonymous" and first.waited_seconds == 0.0


async def test_a_second_claim_loses_and_changes_nothing(session):
    async with session() as s:
        await claim_review(session=s, review=review(), decisions=approve_all(), reviewer="ann")
    with pytest.raises(AlreadyDecided):
        async with session() as s:
            await claim_review(session=s, review=review(), decisions=[RejectDecision(type="reject")] * 3, reviewer="bob")
    assert [(r.reviewer, r.decision_type) for r in await rows(session)] == [("ann", "approve")] * 3


@pytest.mark.parametrize("claimers", [8])
async def test_of_n_concurrent_claims_exactly_one_wins(session, claimers):
    await _record(session)

    async def attempt(i: int) -> str:
        async with session() as s:
            await claim_review(session=s, review=review(), decisions=approve_all(), reviewer=f"r{i}")
        return f"r{i}"

    results = await asyncio.gather(*(attempt(i) for i in range(claimers)), return_exceptions=True)
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1, results
    assert all(isinstance(r, AlreadyDecided) for r in results if not isinstance(r, str)), results
    assert {r.reviewer for r in await rows(session)} == set(winners) and len(await rows(session)) == 3


async def test_a_released_claim_makes_the_review_answerable_again(session):
    await _record(session)
    async with session() as s:
        await claim_review(session=s, review=review(), decisions=approve_all(), reviewer="ann")
        assert await is_claimed(session=s, interrupt_id="i1")
        assert await release_claim(session=s, interrupt_id="i1") == 3
        assert not await is_claimed(session=s, interrupt_id="i1")
        assert (await s.get(ReviewRequestRecord, "i1")).decided is False
        assert await release_claim(session=s, interrupt_id="i1") == 0
    async with session() as s:
        await claim_review(session=s, review=review(), decisions=approve_all(), reviewer="bob")
    assert {r.reviewer for r in await rows(session)} == {"bob"}


async def test_only_a_claim_older_than_the_cutoff_is_released_as_abandoned(session):
    now = datetime.now(UTC)
    async with session() as s:
        await claim_review(session=s, review=review("old"), decisions=approve_all(), reviewer="a", now=now - timedelta(minutes=5))
        await claim_review(session=s, review=review("new"), decisions=approve_all(), reviewer="b", now=now)
        cutoff = now - timedelta(seconds=30)
        assert await release_claim(session=s, interrupt_id="new", claimed_before=cutoff) == 0
        assert await release_claim(session=s, interrupt_id="old", claimed_before=cutoff) == 3
        assert await is_claimed(session=s, interrupt_id="new") and not await is_claimed(session=s, interrupt_id="old")


async def test_the_audit_read_is_keyed_by_tool_call_id_per_thread(session):
    async with session() as s:
        await claim_review(session=s, review=review("i1", "t1"), decisions=approve_all(), reviewer="ann")
        await claim_review(session=s, review=review("i2", "t2"), decisions=approve_all(), reviewer="bob")
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

    from hitl_app.store.reviews import record_review_waiting
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
            assert await record_review_waiting(session=s, review=review()) == (True, "42")
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
        assert await record_review_waiting(session=s, review=review()) == (False, "42")
        assert await record_review_waiting(session=s, review=review("i2", "t-new")) == (True, None)
    async with session() as s:
        made = await s.get(ThreadRecord, "t-new")
    assert made is not None and made.pending_review and made.owner is None
