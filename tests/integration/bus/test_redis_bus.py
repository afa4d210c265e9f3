"""Two ThreadServices with their own RedisRunBus on one database = two workers (real Redis)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import pytest
import redis

from hitl_app.bus.redis_bus import MAX_CONNECTIONS, RedisRunBus
from hitl_app.desk.cards import BrowserPerson
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.threads.service import ThreadError
from tests.helpers.redis_server import REDIS_URL, clients_named, require_redis, unique_prefix


@pytest.fixture
def redis_url() -> str:
    """The real Redis; the test FAILS (does not skip) when it is unreachable."""
    return require_redis()


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
        assert await b.is_running(tid)
        events = await asyncio.wait_for(_collect(b, tid), 30)
        deltas = [e.delta for e in events if e.kind == "text" and not e.reset and e.delta]
        assert len(deltas) >= 2 and events[-1].outcome == "finished"
        view = await b.load(tid, owner="o")
        assert view.messages[-1].text.startswith("".join(e.delta for e in events if e.kind == "text").strip()[:20])

        gen = await b.bus.generation(tid)
        waiter = asyncio.create_task(b.bus.wait_for_run(tid, after=gen, timeout=10))
        await a.start_turn(tid, "email bob@example.com about lunch: noon", owner="o")
        assert await waiter, "worker b learns that worker a started a run"
        events = await asyncio.wait_for(_collect(b, tid), 30)
        assert events[-1].outcome == "interrupted"
        pending = (await b.load(tid, owner="o")).pending
        await b.submit_review(tid, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson("o", "ann"))
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
        assert not await a.is_running(tid) and not await b.is_running(tid)
        await b.start_turn(tid, "hello", owner="o")  # the thread is free again, from either worker
        await b.wait(tid)
        assert (await a.load(tid, owner="o")).messages[-1].role == "assistant"


async def _collect(service, tid):
    return [e async for e in service.subscribe(tid)]


WAIT_S = 12.0
"""How long each idle waiter of ``test_idle_watchers_share_one_pubsub_connection`` waits for a run (s)."""


@pytest.mark.slow
async def test_idle_watchers_share_one_pubsub_connection(redis_url):
    """150 tabs waiting for a run cost a fixed handful of Redis connections, not two each."""
    name, prefix = f"hitl-test-{uuid.uuid4().hex[:8]}", unique_prefix()
    bus = RedisRunBus(f"{redis_url}?client_name={name}", prefix=prefix)
    await bus.start()
    try:
        before = clients_named(name)
        # the waiters give up after WAIT_S: long enough for a loaded machine to subscribe all 150 first
        waiters = [asyncio.create_task(bus.wait_for_run(str(uuid.uuid4()), after=0, timeout=WAIT_S)) for _ in range(150)]
        deadline = time.monotonic() + WAIT_S - 2
        while len(_channels(prefix)) < 150 and time.monotonic() < deadline:  # an event, not a fixed pause
            await asyncio.sleep(0.05)
        assert len(_channels(prefix)) == 150, "each waiter's thread channel is subscribed (on the shared connection)"
        during = clients_named(name)
        assert during <= MAX_CONNECTIONS, f"150 idle waiters hold {during} Redis connections (was {before} before)"
        await asyncio.sleep(0.5)
        assert clients_named(name) == during, "the count stays constant while they wait"
        assert await asyncio.gather(*waiters) == [False] * 150
        await asyncio.sleep(0.2)
        assert clients_named(name) <= during
        assert _channels(prefix) == [], "the channels are unsubscribed when their last waiter leaves"
    finally:
        await bus.aclose()
    assert clients_named(name) == 0, "aclose closes every connection"


def _channels(prefix: str) -> list[str]:
    with redis.Redis.from_url(REDIS_URL, decode_responses=True) as admin:
        return admin.pubsub_channels(f"{prefix}run:*")


async def test_startup_failure_does_not_print_the_redis_password(tmp_path):
    """An unreachable Redis is reported with its address, never with its password."""
    from hitl_app.errors import StartupError

    s = Settings(HITL_DATA_DIR=tmp_path, HITL_REDIS_URL="redis://:S3cretRedisPW@127.0.0.1:1/0?password=S3cretToo")
    with pytest.raises(StartupError) as info:
        async with open_runtime(s):
            pass
    message = str(info.value)
    assert "127.0.0.1:1" in message
    assert "S3cret" not in message, message


async def test_a_silent_redis_neither_freezes_the_worker_nor_hangs_a_tab():
    """Redis accepts connections but never answers (a network partition): each bus call fails after
    its socket timeout, and meanwhile the worker's event loop keeps serving everyone else."""
    async def never_answer(reader, writer):
        await reader.read(1 << 16)
        await asyncio.sleep(3600)

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    bus = RedisRunBus(f"redis://127.0.0.1:{port}/0", prefix=unique_prefix(), socket_timeout_s=0.3)
    ticks = 0

    async def other_users():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticker = asyncio.create_task(other_users())
    started = time.monotonic()
    try:
        for call in (bus.is_live, bus.generation, bus.current_text):
            with pytest.raises(redis.exceptions.RedisError):
                await call(str(uuid.uuid4()))
        elapsed = time.monotonic() - started
        assert elapsed < 10, f"three calls took {elapsed:.1f}s"
        assert ticks >= elapsed / 0.05 * 0.5, f"the event loop stalled: {ticks} ticks in {elapsed:.1f}s"
    finally:
        ticker.cancel()
        server.close()
        await bus.aclose()


async def test_watchers_survive_a_dropped_pubsub_connection(redis_url):
    """Redis drops the worker's shared pub/sub connection: waiting and following tabs go on."""
    from hitl_app.bus.run_bus import RunEvent

    name, prefix, t = f"hitl-test-{uuid.uuid4().hex[:8]}", unique_prefix(), str(uuid.uuid4())
    a, b = RedisRunBus(redis_url, prefix), RedisRunBus(f"{redis_url}?client_name={name}", prefix)
    await a.start()
    await b.start()
    try:
        waiter = asyncio.create_task(b.wait_for_run(t, after=await b.generation(t), timeout=10))
        await asyncio.sleep(0.2)
        _kill_pubsub_connection(name)
        await asyncio.sleep(0.2)
        run = uuid.uuid4().hex
        assert await a.acquire_lease(t, run, "turn")
        await a.open(t, run, "turn")
        assert await asyncio.wait_for(waiter, 10), "the waiter still learns that the run started"
        events = b.subscribe(t)
        await anext(events)
        collector = asyncio.create_task(_drain(events))  # a tab following the run as it streams
        a.publish(t, RunEvent(kind="text", run_id=run, delta="before "))
        await asyncio.sleep(0.2)
        _kill_pubsub_connection(name)
        a.publish(t, RunEvent(kind="text", run_id=run, delta="after"))  # may be lost with the connection
        await asyncio.sleep(1.5)
        a.publish(t, RunEvent(kind="ended", run_id=run, outcome="finished"))
        rest = await asyncio.wait_for(collector, 10)
        assert rest[-1].kind == "ended" and rest[-1].outcome == "finished", rest
        shown = ""
        for event in rest:
            if event.kind == "text":
                shown = event.delta if event.reset else shown + event.delta
        assert shown == "before after", "the tab shows all the text, lost messages included"
    finally:
        await a.aclose()
        await b.aclose()


def _kill_pubsub_connection(name: str) -> None:
    with redis.Redis.from_url(REDIS_URL, decode_responses=True) as admin:
        ids = [c["id"] for c in admin.client_list() if c.get("name") == name and int(c.get("sub", 0)) > 0]
        assert ids, "no pub/sub connection to drop"
        for client_id in ids:
            admin.client_kill_filter(_id=client_id)


async def _drain(events):
    return [e async for e in events]
