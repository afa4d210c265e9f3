"""The app database contract on SQLite and PostgreSQL: schema set-up, owners, exactly-once claims."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from sqlmodel import select

from hitl_app.desk.cards import BrowserPerson
from hitl_app.review import ReviewError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.tables import AuditRecord, OutboxMail
from hitl_app.threads.service import ThreadError

TID = "3c9d1f0a-7b2e-4d6a-8f15-0e2b4c6d8a10"


def settings_for(tmp_path, database_url) -> Settings:
    return Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url)


async def test_schema_setup_is_automatic_and_safe_to_repeat(tmp_path, database_url):
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        await rt.service.start_turn(TID, "hello", owner="a")
        await rt.service.wait(TID)
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        view = await rt.service.load(TID, owner="a")
        assert [m.role for m in view.messages] == ["user", "assistant"]
        assert [t.thread_id for t in await rt.service.list_threads(owner="a")] == [TID]


async def test_three_workers_starting_at_once_on_one_database(tmp_path, database_url):
    async with contextlib.AsyncExitStack() as stack:
        runtimes = await asyncio.gather(
            *(stack.enter_async_context(open_runtime(settings_for(tmp_path / f"w{i}", database_url))) for i in range(3))
        )
        await runtimes[0].service.start_turn(TID, "hello", owner="a")
        await runtimes[0].service.wait(TID)
        view = await runtimes[2].service.load(TID, owner="a")
        assert view.messages[-1].role == "assistant"


async def test_owner_and_thread_id_checks(tmp_path, database_url):
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        await rt.service.start_turn(TID, "hello", owner="alice")
        await rt.service.wait(TID)
        with pytest.raises(ThreadError) as info:
            await rt.service.load(TID, owner="mallory")
        assert info.value.code == "forbidden"
        with pytest.raises(ThreadError) as info:
            await rt.service.load("not-a-uuid", owner="alice")
        assert info.value.code == "not_found"
        assert await rt.service.list_threads(owner="mallory") == []


async def test_two_workers_deciding_one_review_only_one_wins(tmp_path, database_url):
    s = settings_for(tmp_path, database_url)
    async with open_runtime(s) as one, open_runtime(s) as two:
        await one.service.start_turn(TID, "email bob@example.com about lunch: noon", owner="a")
        await one.service.wait(TID)
        pending = (await one.service.load(TID, owner="a")).pending
        results = await asyncio.gather(
            one.service.submit_review(TID, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson("a", "ann")),
            two.service.submit_review(TID, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson("a", "bob")),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, Exception)]
        # the loser reads either the winner's claim ("already_decided", naming the winner) or, once the
        # winner's resume reached the checkpoint, no pending review ("stale"): both say "already decided"
        assert len(errors) == 1 and isinstance(errors[0], ReviewError), results
        assert errors[0].code in ("already_decided", "stale") and "already decided" in errors[0].message, results
        await one.service.wait(TID)
        await two.service.wait(TID)
        with one.engines.sync.connect() as conn:
            assert len(conn.execute(select(AuditRecord.id)).all()) == 1
            assert [r[0] for r in conn.execute(select(OutboxMail.to)).all()] == ["bob@example.com"]
