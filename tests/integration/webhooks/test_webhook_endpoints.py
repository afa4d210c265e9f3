"""Rotating an endpoint's secret and deleting an endpoint, on SQLite and PostgreSQL, with a real
receiver on loopback: after a rotation every try (a retry of an older event too) is signed with the
new secret, so a receiver still on the old one refuses it until it gets the new one; a deleted
endpoint gets nothing more and what was not sent to it is marked failed; the example receiver takes
the old and the new secret together while switching (``HITL_WEBHOOK_SECRET_PREVIOUS``)."""

from __future__ import annotations

import time

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.runtime import open_runtime
from hitl_app.store.webhooks import WebhookDelivery, WebhookEndpoint, add_endpoint, delete_endpoint, rotate_secret
from hitl_app.webhooks.signing import delivery_headers
from tests.helpers.app_server import free_port
from tests.helpers.webhook_receiver import LoopbackReceiver
from tests.integration.webhooks.test_webhook_delivery import ask, example_receiver, post, rows, settings_for, until


def mine(rt, endpoint_id: int) -> list[WebhookDelivery]:
    return sorted((d for d in rows(rt, WebhookDelivery) if d.endpoint_id == endpoint_id), key=lambda d: d.id or 0)


async def test_after_a_rotation_deliveries_are_signed_with_the_new_secret_and_a_deleted_endpoint_gets_nothing(
    tmp_path, database_url
):
    receiver = LoopbackReceiver(port=free_port(), mode="ok")
    receiver.start()
    try:
        async with open_runtime(settings_for(tmp_path, database_url)) as rt:
            async with AsyncSession(rt.engines.async_) as s:
                endpoint = await add_endpoint(session=s, url=f"http://127.0.0.1:{receiver.port}/hooks",
                                              events=["run.finished"], by="Ada")
            eid, old = endpoint.id or 0, endpoint.secret
            receiver.secret = old
            await ask(rt.service, "hello")
            await until(lambda: [d.status for d in mine(rt, eid)] == ["delivered"], "the first delivery, old secret")

            async with AsyncSession(rt.engines.async_) as s:
                new = await rotate_secret(session=s, endpoint_id=eid)
                assert await rotate_secret(session=s, endpoint_id=eid + 1000) is None
            assert new and new != old and new.startswith("whsec_")
            async with AsyncSession(rt.engines.async_) as s:
                assert (await s.get(WebhookEndpoint, eid)).secret == new
            await ask(rt.service, "hello again")  # the receiver still holds the old secret: refused, retried
            await until(lambda: len(receiver.refused) >= 1, "the receiver refusing a delivery signed with the new secret")
            assert "signature does not match" in receiver.refused[0]
            assert len(receiver.got) == 1
            receiver.secret = new  # the admin gives the receiver the new secret; the retry passes
            await until(lambda: [d.status for d in mine(rt, eid)] == ["delivered", "delivered"], "the retry, new secret")
            assert len(receiver.got) == 2 and mine(rt, eid)[1].attempts >= 2

            receiver.mode = "fail"  # a delivery left pending when the endpoint goes
            await ask(rt.service, "one more")
            await until(lambda: len(mine(rt, eid)) == 3 and mine(rt, eid)[2].attempts >= 1, "a failing third delivery")
            async with AsyncSession(rt.engines.async_) as s:
                assert await delete_endpoint(session=s, endpoint_id=eid)
                assert not await delete_endpoint(session=s, endpoint_id=eid)
                assert await s.get(WebhookEndpoint, eid) is None
            third = mine(rt, eid)[2]
            assert (third.status, third.last_result) == ("failed", "endpoint removed")
            receiver.mode = "ok"
            after, _ = await ask(rt.service, "after the delete")  # its run.finished is queued as the run ends
            assert len(mine(rt, eid)) == 3, "nothing is queued for a deleted endpoint"
            assert not [r for r in receiver.got if r.event["data"].get("thread_id") == after]
    finally:
        receiver.stop()


async def test_the_example_receiver_takes_the_old_and_the_new_secret_while_switching(tmp_path):
    port, old, new = free_port(), "whsec_old_" + "a" * 30, "whsec_new_" + "b" * 30
    body = b'{"id":"evt_1","type":"run.finished","data":{}}'

    def signed(secret: str) -> dict[str, str]:
        return delivery_headers(secret=secret, timestamp=int(time.time()), body=body, event_id="evt_1", delivery_id=1,
                                event_type="run.finished")

    with example_receiver(new, port, previous=old):
        assert post(port, body, signed(new)) == 204
        assert post(port, body, signed(old)) == 204, "a delivery signed before the rotation still passes while switching"
        assert post(port, body, signed("whsec_guess")) == 400
    with example_receiver(new, port):
        assert post(port, body, signed(old)) == 400, "the old secret alone no longer passes once dropped"
