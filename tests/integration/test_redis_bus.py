"""Two ThreadServices with their own RedisRunBus on one database = two workers (real Redis)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid

import pytest
import redis

from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.threads.service import ThreadError

REDIS_URL = os.environ.get("HITL_TEST_REDIS", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_url() -> str:
    """The real Redis; the test FAILS (does not skip) when it is unreachable."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.exceptions.RedisError as exc:
        pytest.fail(f"Redis is not reachable at {REDIS_URL} ({exc}); start it (.ci/run does). These tests do not skip.", pytrace=False)
    return REDIS_URL


@contextlib.asynccontextmanager
async def two_workers(tmp_path, database_url, redis_url, wps: float = 40):
    s = Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=wps, DATABASE_URL=database_url, HITL_REDIS_URL=redis_url)
    async with open_runtime(s) as one, open_runtime(s) as two:
        yield one.service, two.service


async def test_tokens_and_review_cross_workers_and_review_decided_on_the_other(tmp_path, database_url, redis_url):
    tid = str(uuid.uuid4())
    async with two_workers(tmp_path, database_url, redis_url) as (a, b):
        assert type(a.bus).__name__ == "RedisRunBus"
        await a.start_turn(tid, "stream 30 words", owner="o")
        assert b.is_running(tid)
        events = await asyncio.wait_for(_collect(b, tid), 30)
        deltas = [e.delta for e in events if e.kind == "text" and not e.reset and e.delta]
        assert len(deltas) >= 2 and events[-1].outcome == "finished"
        view = await b.load(tid, owner="o")
        assert view.messages[-1].text.startswith("".join(e.delta for e in events if e.kind == "text").strip()[:20])

        gen = b.bus.generation(tid)
        waiter = asyncio.create_task(b.bus.wait_for_run(tid, after=gen, timeout=10))
        await a.start_turn(tid, "email bob@example.com about lunch: noon", owner="o")
        assert await waiter, "worker b learns that worker a started a run"
        events = await asyncio.wait_for(_collect(b, tid), 30)
        assert events[-1].outcome == "interrupted"
        pending = (await b.load(tid, owner="o")).pending
        await b.submit_review(tid, pending.interrupt_id, [{"type": "approve"}], reviewer="ann", owner="o")
        events = await asyncio.wait_for(_collect(a, tid), 30)
        assert events[-1].outcome == "finished"
        assert "bob@example.com" in (await a.load(tid, owner="o")).messages[-1].text


async def test_one_run_per_thread_and_stop_across_workers(tmp_path, database_url, redis_url):
    tid = str(uuid.uuid4())
    async with two_workers(tmp_path, database_url, redis_url, wps=20) as (a, b):
        await a.start_turn(tid, "stream 400 words", owner="o")
        with pytest.raises(ThreadError) as info:
            await b.start_turn(tid, "hello", owner="o")
        assert info.value.code == "busy"
        collector = asyncio.create_task(_collect(a, tid))
        await asyncio.sleep(0.3)
        assert await b.stop(tid, owner="o") is True
        events = await asyncio.wait_for(collector, 10)
        assert events[-1].outcome == "stopped"
        assert not a.is_running(tid) and not b.is_running(tid)
        await b.start_turn(tid, "hello", owner="o")  # the thread is free again, from either worker
        await b.wait(tid)
        assert (await a.load(tid, owner="o")).messages[-1].role == "assistant"


async def _collect(service, tid):
    return [e async for e in service.subscribe(tid)]
