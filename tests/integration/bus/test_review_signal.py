"""The review signal's audience (``ReviewSignal.wait_for``), in one process and across two Redis
workers: a waiter skips new reviews that cannot concern its person, wakes for one that may, and
wakes whenever it cannot tell (no audience, missed announcements, an older worker's message)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from hitl_app.bus.local import LocalRunBus
from hitl_app.bus.redis_bus import RedisRunBus
from hitl_app.bus.review_signal import HISTORY, decode, encode
from hitl_app.bus.run_bus import RunBus
from hitl_app.review.audience import Audience
from tests.helpers.redis_server import require_redis, unique_prefix

KEY = "policy-1"
FOR_MIA = Audience("1", (), (), KEY)  # a review only its owner, account 1, may decide
FOR_REVIEWERS = Audience("2", ("reviewer",), ("dana@example.com",), KEY)


def is_mia(audience: Audience) -> bool:
    """The waiting tab's person is Mia (account 1, a member)."""
    return audience.owner_id == "1" or bool(audience.roles and "member" in audience.roles)


@pytest.fixture(params=["local", "redis"])
async def buses(request: pytest.FixtureRequest) -> AsyncIterator[tuple[RunBus, RunBus]]:
    """(a, b): the announcing worker's bus and another worker's."""
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


async def test_a_waiter_skips_reviews_for_others_and_wakes_for_its_own(buses):
    a, b = buses
    before = await b.reviews.version()
    waiter = asyncio.create_task(b.reviews.wait_for(before, 30, is_mia))  # a timeout returns False
    await asyncio.sleep(0.2)  # listening
    await a.reviews.announce(FOR_REVIEWERS)
    await a.reviews.announce(FOR_REVIEWERS)
    await asyncio.sleep(0.3)
    assert not waiter.done()  # two reviews for others: no read
    await a.reviews.announce(FOR_MIA)
    assert await waiter == (True, before + 3), "woken by her review, not by the timeout"
    # nothing that concerns her: a timeout, the version moved past what was skipped
    assert await asyncio.gather(b.reviews.wait_for(before + 3, 2, is_mia), a.reviews.announce(FOR_REVIEWERS)) == [
        (False, before + 4), None]


async def test_a_waiter_behind_judges_what_it_missed_from_the_history(buses):
    a, b = buses
    before = await b.reviews.version()
    await a.reviews.announce(FOR_REVIEWERS)
    assert await b.reviews.wait_for(before, 0.2, is_mia) == (False, before + 1)  # behind, but not for her
    await a.reviews.announce(FOR_MIA)
    await a.reviews.announce(FOR_REVIEWERS)
    assert await b.reviews.wait_for(before + 1, 0.2, is_mia) == (True, before + 2)


async def test_a_waiter_reads_when_it_cannot_tell(buses):
    a, b = buses
    before = await b.reviews.version()
    await a.reviews.announce()  # decided, undo, escalated: no audience
    assert await b.reviews.wait_for(before, 0.2, is_mia) == (True, before + 1)
    for _ in range(HISTORY + 1):
        await a.reviews.announce(FOR_REVIEWERS)
    assert (await b.reviews.wait_for(before + 1, 0.2, is_mia))[0] is True  # further behind than the history


async def test_an_older_workers_bare_announcement_wakes_a_new_waiter():
    prefix = unique_prefix()
    bus = RedisRunBus(require_redis(), prefix)
    await bus.start()
    try:
        before = await bus.reviews.version()
        waiter = asyncio.create_task(bus.reviews.wait_for(before, 5, is_mia))
        await asyncio.sleep(0.2)
        version = await bus._r.incr(f"{prefix}reviews:version")  # main's script: INCR + PUBLISH of the number
        await bus._r.publish(f"{prefix}reviews", str(version))
        assert (await waiter)[0] is True
    finally:
        await bus.aclose()


def test_messages_read_back():
    assert decode(encode(7, FOR_REVIEWERS)) == (7, FOR_REVIEWERS)
    assert decode(encode(7, None)) == decode("7") == (7, None)
    assert decode("7|{not json") == (7, None)
    assert decode("x|{}") is None


async def test_two_deployments_on_one_redis_with_their_own_prefixes_do_not_hear_each_other(tmp_path):
    """``HITL_REDIS_PREFIX`` reaches the run bus (``make_bus``): a review announced by one deployment
    does not wake the other's inbox, whose account 1 is another person (CI saw exactly that between
    two test servers on one Redis); the same prefix shares the signal."""
    from hitl_app.runtime import make_bus
    from hitl_app.settings import Settings

    url = require_redis()

    def bus_of(prefix: str) -> RunBus:
        return make_bus(Settings(HITL_DATA_DIR=tmp_path, HITL_REDIS_URL=url, HITL_REDIS_PREFIX=prefix))

    mine = unique_prefix()
    ours, theirs, also_ours = bus_of(mine), bus_of(unique_prefix()), bus_of(mine)
    for bus in (ours, theirs, also_ours):
        await bus.start()
    try:
        before, before_ours = await theirs.reviews.version(), await also_ours.reviews.version()
        other = asyncio.create_task(theirs.reviews.wait_for(before, 3, is_mia))
        same = asyncio.create_task(also_ours.reviews.wait_for(before_ours, 30, is_mia))  # by version: no race
        await ours.reviews.announce(FOR_MIA)
        assert (await asyncio.wait_for(same, 60))[0] is True, "the same deployment's worker must wake"
        assert (await asyncio.wait_for(other, 60))[0] is False, "another deployment's inbox woke for our review"
    finally:
        for bus in (ours, theirs, also_ours):
            await bus.aclose()
