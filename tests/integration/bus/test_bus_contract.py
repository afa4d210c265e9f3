"""One contract suite for every ``RunBus``: the in-process bus and the Redis bus (real Redis).

Each test gets two buses, ``a`` (the worker running the run) and ``b`` (another worker's tab). For
``local`` they are the same object (one process); for ``redis`` they are two ``RedisRunBus``
instances on one key prefix, i.e. two worker processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from hitl_app.bus.local import LocalRunBus
from hitl_app.bus.redis_bus import RedisRunBus
from hitl_app.bus.run_bus import RunBus, RunEvent
from tests.helpers.redis_server import keys_without_ttl, require_redis, unique_prefix


@pytest.fixture(params=["local", "redis"])
async def buses(request: pytest.FixtureRequest) -> AsyncIterator[tuple[RunBus, RunBus]]:
    """(a, b): the running side and another worker's side of one bus."""
    if request.param == "local":
        bus = LocalRunBus()
        await bus.start()
        yield bus, bus
        await bus.aclose()
        return
    url, prefix = require_redis(), unique_prefix()
    a, b = RedisRunBus(url, prefix), RedisRunBus(url, prefix)
    await a.start()
    await b.start()
    yield a, b
    await a.aclose()
    await b.aclose()


def tid() -> str:
    return str(uuid.uuid4())


async def eventually(check: Callable[[], Awaitable[bool]], seconds: float = 30.0) -> None:
    """Wait until ``check()`` is true (events cross Redis asynchronously); fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def start_run(bus: RunBus, thread_id: str, run_kind: str = "turn") -> str:
    run_id = uuid.uuid4().hex
    assert await bus.acquire_lease(thread_id, run_id, run_kind)
    await bus.open(thread_id, run_id, run_kind)
    return run_id


async def test_subscriber_gets_every_event_in_order(buses):
    a, b = buses
    t = tid()
    run = await start_run(a, t)
    events = b.subscribe(t)
    first = await anext(events)
    assert first.kind == "text" and first.reset and first.run_id == run
    sent = [
        RunEvent(kind="text", run_id=run, delta="Hel"),
        RunEvent(kind="text", run_id=run, delta="lo"),
        RunEvent(kind="boundary", run_id=run),
        RunEvent(kind="text", run_id=run, delta="World"),
        RunEvent(kind="ended", run_id=run, outcome="finished"),
    ]
    for event in sent:
        a.publish(t, event)
    received = [e async for e in events]
    received = [e for e in received if e.kind != "started"]  # "started" may precede the snapshot
    assert [(e.kind, e.delta, e.outcome) for e in received] == [(e.kind, e.delta, e.outcome) for e in sent]


async def test_late_subscriber_catches_up_with_the_text_so_far(buses):
    a, b = buses
    t = tid()
    run = await start_run(a, t)
    a.publish(t, RunEvent(kind="text", run_id=run, delta="First message."))
    a.publish(t, RunEvent(kind="boundary", run_id=run))
    a.publish(t, RunEvent(kind="text", run_id=run, delta="Hello "))
    a.publish(t, RunEvent(kind="text", run_id=run, delta="wor"))

    async def caught_up() -> bool:
        return await b.current_text(t) == "Hello wor"

    await eventually(caught_up)
    events = b.subscribe(t)
    first = await anext(events)
    assert (first.kind, first.reset, first.delta) == ("text", True, "Hello wor")
    a.publish(t, RunEvent(kind="text", run_id=run, delta="ld"))
    a.publish(t, RunEvent(kind="ended", run_id=run, outcome="finished"))
    rest = [e async for e in events]
    assert [e.delta for e in rest if e.kind == "text"] == ["ld"], "nothing already in the snapshot is repeated"
    assert rest[-1].kind == "ended"
    assert await b.current_text(t) == ""


async def test_is_live_generation_and_wait_for_run(buses):
    a, b = buses
    t = tid()
    before = await b.generation(t)
    assert not await b.is_live(t)
    assert not await b.wait_for_run(t, after=before, timeout=0.2), "no run: the wait times out"
    waiter = asyncio.create_task(b.wait_for_run(t, after=before, timeout=30))
    await asyncio.sleep(0.2)
    assert not waiter.done()
    run = await start_run(a, t)
    assert await waiter, "the waiter learns that a run started (it would time out after 30 s and say False)"
    assert await a.is_live(t) and await b.is_live(t)
    during = await b.generation(t)
    assert during > before
    assert await b.wait_for_run(t, after=before, timeout=30), "an older generation returns True (no run is coming)"
    a.publish(t, RunEvent(kind="ended", run_id=run, outcome="finished"))

    async def ended() -> bool:
        return not await b.is_live(t)

    await eventually(ended)
    assert not await b.wait_for_run(t, after=await b.generation(t), timeout=0.2)
    await start_run(a, t)
    assert await b.generation(t) > during, "every run gets a higher generation"


async def test_run_lease_is_exclusive_until_the_run_ends(buses):
    a, b = buses
    t = tid()
    r1, r2 = uuid.uuid4().hex, uuid.uuid4().hex
    won = await asyncio.gather(a.acquire_lease(t, r1, "turn"), b.acquire_lease(t, r2, "turn"))
    assert sorted(won) == [False, True], "exactly one of two acquire attempts wins"
    holder, winner, other = (a, r1, r2) if won[0] else (b, r2, r1)
    await holder.open(t, winner, "turn")
    assert not await a.acquire_lease(t, other, "turn")
    holder.publish(t, RunEvent(kind="ended", run_id=winner, outcome="finished"))

    async def acquired() -> bool:  # the end reaches the other worker asynchronously
        return await a.acquire_lease(t, other, "turn")

    await eventually(acquired)  # the run's end frees the lease


async def test_stop_request_reaches_the_running_side(buses, request):
    a, b = buses
    t = tid()
    asked: list[str] = []
    a.on_stop = asked.append
    await start_run(a, t)
    if "local" in request.node.callspec.id:
        # one process: ThreadService cancels its own run; nothing runs elsewhere to be asked
        assert await b.request_stop(t) is False
        return

    async def arrived() -> bool:
        return asked == [t]

    assert await b.request_stop(t) is True
    await eventually(arrived)
    assert await b.request_stop(tid()) is False, "no live run: nothing to stop"


async def test_finished_runs_leave_no_per_thread_state(buses, request):
    """A thousand finished runs, some watched and some waited for, leave no entry per thread."""
    a, b = buses
    threads = [tid() for _ in range(1000)]
    for index, t in enumerate(threads):
        if index % 50 == 0:  # a watching tab: a waiter that sees the run start, then a subscriber
            waiter = asyncio.create_task(b.wait_for_run(t, after=await b.generation(t), timeout=5))
            await asyncio.sleep(0)
        run = await start_run(a, t)
        if index % 50 == 0:
            assert await waiter
            events = b.subscribe(t)
            await anext(events)
        a.publish(t, RunEvent(kind="text", run_id=run, delta="x"))
        a.publish(t, RunEvent(kind="ended", run_id=run, outcome="finished"))
        if index % 50 == 0:
            assert [e.kind async for e in events][-1] == "ended"

    async def all_ended() -> bool:
        return not await b.is_live(threads[-1])

    await eventually(all_ended)
    await asyncio.sleep(0.1)
    gc.collect()
    for bus in {id(a): a, id(b): b}.values():
        assert _thread_ids_held(bus, set(threads)) == set(), "per-thread entries left behind"
    if isinstance(a, RedisRunBus):
        assert keys_without_ttl(a.prefix) == [], "every per-thread Redis key expires"


def _thread_ids_held(obj: object, threads: set[str], depth: int = 3) -> set[str]:
    """Thread ids found in the dict keys, sets or dict keys of ``obj``'s attributes (recursively)."""
    found: set[str] = set()
    for value in vars(obj).values() if hasattr(obj, "__dict__") else ():
        if isinstance(value, dict):
            found |= {k.rsplit("run:", 1)[-1] for k in value if isinstance(k, str)} & threads
            found |= {v for v in value.values() if isinstance(v, str)} & threads
        elif isinstance(value, set):
            found |= {k.rsplit("run:", 1)[-1] for k in value if isinstance(k, str)} & threads
        elif depth and hasattr(value, "__dict__") and not isinstance(value, type):
            found |= _thread_ids_held(value, threads, depth - 1)
    return found


HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from hitl_app.bus.redis_bus import RedisRunBus

    async def main():
        bus = RedisRunBus(sys.argv[1], sys.argv[2], lease_s=3.0, heartbeat_s=0.2)
        await bus.start()
        assert await bus.acquire_lease(sys.argv[3], "holder-run", "turn")
        print("held", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


async def test_lease_expires_when_its_holder_dies():
    """A worker killed mid-run (no "ended", no more heartbeats) frees the thread after its lease time.

    Redis only: the in-process bus shares its process with the run, so the lease dies with it.
    """
    url, prefix, t = require_redis(), unique_prefix(), tid()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url, prefix, t], stdout=subprocess.PIPE, text=True)
    other = RedisRunBus(url, prefix, lease_s=3.0, heartbeat_s=0.2)
    await other.start()
    try:
        assert (await asyncio.to_thread(holder.stdout.readline)).strip() == "held"
        await asyncio.sleep(4.0)  # past the 3 s lease: only heartbeats (every 0.2 s) keep it
        assert await other.is_live(t), "the heartbeat keeps a living holder's lease past its lease time"
        assert not await other.acquire_lease(t, "second", "turn")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()

        async def expired() -> bool:
            return not await other.is_live(t)

        await eventually(expired)
        assert await other.acquire_lease(t, "second", "turn"), "the dead holder's lease expired"
    finally:
        with contextlib.suppress(ProcessLookupError):
            holder.kill()
        await other.aclose()


@pytest.mark.parametrize("implementation", [LocalRunBus, RedisRunBus])
def test_implementation_has_every_protocol_method_with_the_same_signature(implementation):
    """No silent drift: same names, same parameters, same sync/async/async-generator kind."""
    for name, member in vars(RunBus).items():
        if name.startswith("_") or not callable(member):
            continue
        mine = getattr(implementation, name)
        assert list(inspect.signature(mine).parameters) == list(inspect.signature(member).parameters), name
        if name == "subscribe":
            assert inspect.isasyncgenfunction(mine), name
        else:
            assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(member), name


async def test_review_signal_wakes_a_waiter_on_another_worker(buses):
    """``bus.reviews``: an announcement in one worker wakes a tab's waiter in another; a waiter
    that is already behind returns at once; with nothing announced it times out."""
    a, b = buses
    before = await b.reviews.version()
    assert await b.reviews.wait(before, timeout=0.2) is False
    waiter = asyncio.create_task(b.reviews.wait(before, timeout=30))
    await asyncio.sleep(0.2)  # the waiter is listening
    assert not waiter.done()
    await a.reviews.announce()
    assert await waiter is True, "woken by the announcement (a timeout would say False after 30 s)"
    assert await b.reviews.version() > before
    # behind already: True (nothing more is announced, so a waiter that waited would say False)
    assert await b.reviews.wait(before, timeout=30) is True
