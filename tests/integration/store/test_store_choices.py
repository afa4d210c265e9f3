"""The card-choice contract (store/choices.py) on SQLite and PostgreSQL: one row per person and
card, read back only by that person, consumed by Submit and reopened by Undo, stale once the
thread has a new review, and never a decision (``decision_drafts`` stays empty)."""

from __future__ import annotations

import asyncio

from hitl_app.store.choices import consume_choices, read_choices, reopen_choices, save_choice
from hitl_app.store.drafts import read_drafts
from hitl_app.store.tables import AuditRecord, utcnow

REJECT = {"choice": "reject", "reason": "wrong person"}


async def save(session, who: str, index: int, choice, interrupt_id: str = "i1") -> None:
    async with session() as s:
        await save_choice(
            session=s, thread_id="t1", interrupt_id=interrupt_id, action_index=index, account_id=who, choice=choice
        )


async def read(session, who: str, interrupt_id: str = "i1") -> dict:
    async with session() as s:
        return await read_choices(session=s, interrupt_id=interrupt_id, account_id=who)


async def test_each_person_reads_back_only_their_own_choices_and_none_is_a_decision(session):
    await save(session, "3", 0, REJECT)
    await save(session, "3", 1, {"choice": "approve"})
    await save(session, "4", 0, {"choice": "approve"})
    assert await read(session, "3") == {0: REJECT, 1: {"choice": "approve"}}
    assert await read(session, "4") == {0: {"choice": "approve"}}
    assert await read(session, "5") == {}
    async with session() as s:
        assert await read_drafts(session=s, interrupt_id="i1") == []  # nothing counts toward the resume


async def test_a_changed_choice_replaces_the_old_one_and_none_forgets_it(session):
    await save(session, "3", 0, {"choice": "approve"})
    await save(session, "3", 0, REJECT)
    assert await read(session, "3") == {0: REJECT}
    await save(session, "3", 0, None)
    await save(session, "3", 1, None)  # forgetting what was never kept is fine
    assert await read(session, "3") == {}


async def test_two_tabs_saving_the_same_card_at_once_leave_one_row(session):
    await asyncio.gather(save(session, "3", 0, {"choice": "approve"}), save(session, "3", 0, REJECT))
    assert list(await read(session, "3")) == [0]


async def test_submit_consumes_the_choices_and_undo_reopens_them(session):
    await save(session, "3", 0, REJECT)
    await save(session, "4", 0, {"choice": "approve"})
    async with session() as s:
        assert await consume_choices(session=s, interrupt_id="i1", account_id="3") == 1
    assert await read(session, "3") == {}
    assert await read(session, "4") == {0: {"choice": "approve"}}  # another person's stay open
    async with session() as s:
        assert await reopen_choices(session=s, interrupt_id="i1", account_id="3") == 1
        assert await reopen_choices(session=s, interrupt_id="i1", account_id="3") == 0
    assert await read(session, "3") == {0: REJECT}


async def test_a_choice_on_a_new_review_of_the_thread_drops_the_old_reviews_choices(session):
    await save(session, "3", 0, REJECT, interrupt_id="i1")
    await save(session, "4", 0, REJECT, interrupt_id="i1")
    await save(session, "3", 0, {"choice": "approve"}, interrupt_id="i2")
    assert await read(session, "3", "i1") == {}
    assert await read(session, "3", "i2") == {0: {"choice": "approve"}}
    assert await read(session, "4", "i1") == {0: REJECT}  # only the person's own rows go


async def test_a_save_after_submit_or_after_the_review_was_decided_changes_nothing(session):
    await save(session, "3", 0, {"choice": "approve", "grant": "thread:24"})
    async with session() as s:
        await consume_choices(session=s, interrupt_id="i1", account_id="3")
    await save(session, "3", 0, REJECT)  # a late save (a debounced reason, another tab): not reopened
    await save(session, "3", 0, None)
    assert await read(session, "3") == {}
    async with session() as s:
        await reopen_choices(session=s, interrupt_id="i1", account_id="3")  # only an Undo reopens it
    assert await read(session, "3") == {0: {"choice": "approve", "grant": "thread:24"}}
    await save(session, "4", 1, REJECT)
    async with session() as s:  # the review is decided: its claim (audit rows) is written
        now = utcnow()
        s.add(AuditRecord(thread_id="t1", interrupt_id="i1", action_index=0, tool_name="send_email", decision_type="approve",
                          requested_at=now, decided_at=now, waited_seconds=0.0))
        await s.commit()
    await save(session, "3", 0, REJECT)
    await save(session, "5", 0, {"choice": "approve"})
    assert await read(session, "3") == {} and await read(session, "4") == {} and await read(session, "5") == {}
    async with session() as s:
        assert await reopen_choices(session=s, interrupt_id="i1", account_id="5") == 0  # nothing was written
