"""Webhooks end to end on SQLite and PostgreSQL: real runs of the demo model raise the five events,
a real receiver on loopback fails (500), hangs, is down while the app restarts, then recovers;
every event arrives at least once with a valid signature, across the restart and two workers, and
the same event id on a repeat. The example receiver (examples/webhooks/receiver.py, run as a
process) accepts the app's deliveries and refuses a forged, altered or replayed one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth.types import Principal, Role
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.audit_proof import verify_database
from hitl_app.store.webhooks import WEBHOOK_EVENTS, WebhookAttempt, WebhookDelivery, add_endpoint
from hitl_app.webhooks.signing import delivery_headers
from tests.helpers.app_server import free_port
from tests.helpers.webhook_receiver import LoopbackReceiver

ROOT = Path(__file__).resolve().parents[3]
MIA = Principal(1, "Mia", Role.MEMBER, "mia@example.com")
POLICY = """
[tools.send_email]
allowed_decisions = ["approve", "edit", "reject"]

[tools.write_file]
allowed_decisions = ["approve", "reject"]
deadline = "2s"

[tools.delete_file]
allowed_decisions = ["approve", "reject"]
deadline = "2s"
on_timeout = "escalate"
escalate_to = "admin"
"""


def settings_for(tmp_path: Path, database_url: str, allow: str = "127.0.0.1/32") -> Settings:
    """The receiver runs on loopback: its network is allowed (``allow``), as README says to."""
    (tmp_path / "p.toml").write_text(POLICY)
    return Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url, HITL_POLICY=str(tmp_path / "p.toml"),
                    HITL_SWEEP_SECONDS=60, HITL_WEBHOOK_POLL_S=0.2, HITL_WEBHOOK_TIMEOUT_S=1,
                    HITL_WEBHOOK_BACKOFF_S=0.2, HITL_WEBHOOK_BACKOFF_MAX_S=2, HITL_WEBHOOK_MAX_ATTEMPTS=100,
                    HITL_WEBHOOK_ALLOW_NETWORKS=allow)


async def ask(svc, text: str):
    t = str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(MIA.account_id))
    await svc.wait(t)
    return t, await svc.load(t, viewer=MIA)


def rows(rt, model):
    with Session(rt.engines.sync) as s:
        return list(s.exec(select(model)))


async def until(check, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout_s:g} s for {what}")
        await asyncio.sleep(0.1)


def tried(rt, text: str) -> bool:
    return any(text in a.result for a in rows(rt, WebhookAttempt))


@pytest.mark.slow
async def test_every_event_arrives_through_failures_hangs_and_a_restart(tmp_path, database_url):
    settings = settings_for(tmp_path, database_url)
    receiver = LoopbackReceiver(port=free_port(), mode="fail")
    async with open_runtime(settings) as first:
        async with AsyncSession(first.engines.async_) as s:
            endpoint = await add_endpoint(session=s, url=f"http://127.0.0.1:{receiver.port}/hooks",
                                          events=list(WEBHOOK_EVENTS), by="Ada")
        receiver.secret = endpoint.secret
        receiver.start()
        svc = first.service
        t, view = await ask(svc, "email bob@example.com about lunch: see you at noon")  # review.waiting, run.finished
        await until(lambda: tried(first, "HTTP 500"), "a delivery answered 500")
        receiver.mode = "hang"
        await until(lambda: tried(first, "no answer within 1 s"), "a delivery that timed out")
        receiver.stop()  # down from here until after the restart
        await svc.submit_review(t, view.pending.interrupt_id, [{"type": "approve"}], person=MIA)  # review.decided
        await svc.wait(t)
        w, wv = await ask(svc, "write notes/a.txt: hello")
        d, dv = await ask(svc, "delete notes/old.txt")
        due = max(wv.desk.deadline_at, dv.desk.deadline_at) + timedelta(seconds=1)
        assert await svc.sweeper().sweep(due) == 2  # review.expired (write_file), review.escalated (delete_file)
        await svc.wait(w)
        await until(lambda: tried(first, "ConnectError"), "a delivery to a receiver that is down")
    queued = rows(first, WebhookDelivery)
    assert {q.event_type for q in queued} == set(WEBHOOK_EVENTS)
    assert any(q.status != "delivered" for q in queued), "the restart must leave deliveries to the next process"

    receiver.mode = "ok"
    receiver.start()
    async with open_runtime(settings) as second, open_runtime(settings) as third:  # the app again, two workers
        await until(lambda: all(q.status == "delivered" for q in rows(second, WebhookDelivery)), "every delivery", 90)
        async with AsyncSession(third.engines.async_) as s:
            assert (await verify_database(session=s)).ok
    receiver.stop()
    sent = {q.event_id for q in rows(first, WebhookDelivery)}
    assert receiver.ids() == sent, "every queued event arrives, with a valid signature"
    assert receiver.refused == []
    assert {r.event["type"] for r in receiver.got} == set(WEBHOOK_EVENTS)
    repeated = [r for r in receiver.got if r.mode == "hang"]
    assert repeated and sum(r.event_id == repeated[0].event_id for r in receiver.got) >= 2, \
        "the event whose answer timed out came again, with the same id"
    decided = next(r.event for r in receiver.got if r.event["type"] == "review.decided" and r.event["data"]["thread_id"] == t)
    assert decided["data"]["decisions"] == [{"card": 0, "tool": "send_email", "decision": "approve", "reviewer": "Mia",
                                             "via": "page"}]


async def test_a_receiver_in_a_network_not_allowed_gets_nothing_and_the_log_says_why(tmp_path, database_url):
    """QA (issue 22): an endpoint on an internal address was POSTed to and its answer logged (a
    port scanner for an admin session). Registered behind the page's back (straight into the
    table), a loopback receiver whose network is not allowed is never connected to: the delivery
    log names the rule, and the receiver sees no request."""
    receiver = LoopbackReceiver(port=free_port(), mode="ok")
    receiver.start()
    try:
        async with open_runtime(settings_for(tmp_path, database_url, allow="")) as rt:
            async with AsyncSession(rt.engines.async_) as s:
                endpoint = await add_endpoint(session=s, url=f"http://127.0.0.1:{receiver.port}/hooks",
                                              events=["run.finished"], by="Ada")
            receiver.secret = endpoint.secret
            await ask(rt.service, "hello")  # run.finished
            await until(lambda: tried(rt, "HITL_WEBHOOK_ALLOW_NETWORKS"), "a delivery refused by the destination rule")
        assert receiver.got == [] and receiver.refused == []
    finally:
        receiver.stop()


def post(port: int, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/hooks", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


@contextlib.contextmanager
def example_receiver(secret: str, port: int, previous: str = ""):
    env = {**os.environ, "HITL_WEBHOOK_SECRET": secret, "HITL_WEBHOOK_SECRET_PREVIOUS": previous}
    proc = subprocess.Popen([sys.executable, "examples/webhooks/receiver.py", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None and "listening" in proc.stdout.readline()
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_example_receiver_takes_the_apps_deliveries_and_refuses_forged_ones(tmp_path, database_url):
    port = free_port()
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        async with AsyncSession(rt.engines.async_) as s:
            endpoint = await add_endpoint(session=s, url=f"http://127.0.0.1:{port}/hooks", events=["run.finished"], by="Ada")
        with example_receiver(endpoint.secret, port) as proc:
            await ask(rt.service, "hello")
            await until(lambda: any(q.status == "delivered" for q in rows(rt, WebhookDelivery)), "the app's delivery")
            assert '"type": "run.finished"' in proc.stdout.readline()
            body = b'{"id":"evt_forged","type":"review.decided","data":{}}'
            now = int(time.time())

            def signed(secret: str, at: int) -> dict[str, str]:
                return delivery_headers(secret=secret, timestamp=at, body=body, event_id="evt_x", delivery_id=1,
                                        event_type="review.decided")

            good = signed(endpoint.secret, now)
            assert post(port, body, signed("whsec_guess", now)) == 400, "signed with another secret"
            assert post(port, body.replace(b"decided", b"expired"), good) == 400, "body changed after signing"
            assert post(port, body, signed(endpoint.secret, now - 3600)) == 400, "an hour-old delivery replayed"
            assert post(port, body, {k: v for k, v in good.items() if k != "Hitl-Signature"}) == 400, "unsigned"
            assert post(port, body, good) == 204
