"""The webhook queue's claims (store/webhooks.py) on SQLite and PostgreSQL: of workers claiming at
once each delivery goes to exactly one; a claim left by a worker that died is taken again after its
lease (at least once), and the dead worker's late result cannot overwrite the new claim's."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from hitl_app.store.tables import utcnow
from hitl_app.store.webhooks import (
    WEBHOOK_EVENTS,
    WebhookDelivery,
    add_endpoint,
    claim_due,
    enqueue,
    record_attempt,
    send_again,
)

LEASE = timedelta(seconds=30)


async def queue(session, n: int) -> None:
    async with session() as s:
        await add_endpoint(session=s, url="http://127.0.0.1:9/hooks", events=list(WEBHOOK_EVENTS), by="Ada")
        await add_endpoint(session=s, url="http://127.0.0.1:9/off", events=["run.finished"], by="Ada")
        for i in range(n):
            # one delivery each: the second endpoint does not want review.waiting
            assert await enqueue(session=s, event_type="review.waiting", data={"i": i}) == 1
        await s.commit()


async def test_workers_claiming_at_once_each_get_different_deliveries(engines, session):
    await queue(session, 12)

    async def worker(name: str) -> list[int]:
        async with session() as s:
            return [d.id for d, _ in await claim_due(session=s, worker=name, now=utcnow(), lease=LEASE, limit=12)]

    claimed = await asyncio.gather(*(worker(f"w{n}") for n in range(4)))
    every = [i for ids in claimed for i in ids]
    assert sorted(every) == sorted(set(every)) and len(every) == 12, claimed


async def test_a_dead_workers_claim_lapses_and_its_late_result_is_ignored(engines, session):
    await queue(session, 1)
    now = utcnow()
    async with session() as s:
        [(first, endpoint)] = await claim_due(session=s, worker="dead", now=now, lease=LEASE)
        assert await claim_due(session=s, worker="other", now=now + timedelta(seconds=5), lease=LEASE) == []
        [(again, _)] = await claim_due(session=s, worker="other", now=now + LEASE + timedelta(seconds=1), lease=LEASE)
    assert again.id == first.id and endpoint.url.endswith("/hooks")
    async with session() as s:  # the dead worker answers late: nothing of it sticks
        await record_attempt(session=s, delivery=first, worker="dead", status_code=500, result="HTTP 500", duration_ms=1,
                             delivered=False, retry_at=None)
        await record_attempt(session=s, delivery=again, worker="other", status_code=204, result="HTTP 204", duration_ms=1,
                             delivered=True, retry_at=None)
        row = await s.get(WebhookDelivery, first.id)
        await s.refresh(row)
    assert (row.status, row.attempts, row.last_result) == ("delivered", 1, "HTTP 204")
    async with session() as s:
        assert await send_again(session=s, delivery_id=first.id)
        [(third, _)] = await claim_due(session=s, worker="w", now=utcnow() + timedelta(seconds=1), lease=LEASE)
    assert third.event_id == first.event_id, "sent again with the same event id"
