"""The drafts contract (store/drafts.py) on SQLite and PostgreSQL: numbered writes that collide
when two writers read the same state, the claim written with the completing drafts, its release,
and the columns added to a table an older version created."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import inspect, text
from sqlmodel import select

from hitl_app.review import ApproveDecision
from hitl_app.store.db import add_missing_columns, create_schema
from hitl_app.store.drafts import DraftConflict, NewDraft, next_seq, read_drafts, write_drafts
from hitl_app.store.reviews import AlreadyDecided, DecidedBy, audit_rows, is_claimed, release_claim
from hitl_app.store.tables import AuditRecord, DecisionDraft
from tests.integration.store.test_store_reviews import review

DANA = NewDraft(0, "3", "Dana", "reviewer", {"type": "approve"})
RAY = NewDraft(0, "4", "Ray", "reviewer", {"type": "approve"})


def claim_for(who: str) -> list[AuditRecord]:
    r = review()
    from hitl_app.store.tables import utcnow

    now = utcnow()
    return audit_rows(review=r, decisions=[ApproveDecision(type="approve")] * 3, who=[DecidedBy(who)] * 3, requested=now, now=now)


async def write(session, drafts, base, claim=()):
    async with session() as s:
        return await write_drafts(session=s, thread_id="t1", interrupt_id="i1", base_seq=base, drafts=drafts, claim=claim)


async def read(session) -> list[DecisionDraft]:
    async with session() as s:
        return await read_drafts(session=s, interrupt_id="i1")


async def test_two_writers_that_read_the_same_drafts_one_commits_the_other_rereads(session):
    await write(session, [DANA], 0)
    base = next_seq(await read(session))
    results = await asyncio.gather(write(session, [RAY], base), write(session, [RAY], base), return_exceptions=True)
    assert sum(isinstance(r, DraftConflict) for r in results) == 1, results
    assert [(d.seq, d.display_name) for d in await read(session)] == [(0, "Dana"), (1, "Ray")]


async def test_completing_drafts_carry_the_claim_and_go_with_its_release(session):
    await write(session, [DANA], 0)
    await write(session, [RAY], 1, claim=claim_for("Dana and Ray"))
    async with session() as s:
        assert await is_claimed(session=s, interrupt_id="i1")
    with pytest.raises(AlreadyDecided):  # a second completion loses, and writes nothing
        await write(session, [NewDraft(0, "5", "Ada", "admin", {"type": "approve"})], 2, claim=claim_for("Ada"))
    assert [d.completing for d in await read(session)] == [False, True]
    async with session() as s:
        assert await release_claim(session=s, interrupt_id="i1") == 3
    assert [(d.display_name, d.completing) for d in await read(session)] == [("Dana", False)]  # Dana's stays


async def test_a_table_from_an_older_version_gets_the_new_columns(engines):
    with engines.sync.begin() as conn:
        conn.execute(text('ALTER TABLE audit_records DROP COLUMN "deciders"'))
        conn.execute(text('ALTER TABLE audit_records DROP COLUMN "asked"'))
    create_schema(engines)  # what a new version does at start
    with engines.sync.connect() as conn:
        names = {c["name"] for c in inspect(conn).get_columns("audit_records")}
        assert {"deciders", "asked", "reviewer_id", "reviewer_role"} <= names
        assert add_missing_columns(conn, [AuditRecord.__table__]) == []  # idempotent
    async with engines.async_.connect() as conn:
        assert (await conn.execute(select(AuditRecord.id))).all() == []
