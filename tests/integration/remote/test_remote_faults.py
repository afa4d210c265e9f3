"""Faults of a deployed agent, against a real ``langgraph dev``: a deployment that answers 5xx to the resume
records nothing as decided and leaves the review answerable; one that is down gives a plain sentence and
decides nothing, and when it is back the review is decided once; the app's time and step limits end
remote runs (the server's run cancelled, every tool call answered)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from langgraph_sdk import get_client
from sqlmodel import Session, func, select

from hitl_app.desk.cards import BrowserPerson
from hitl_app.errors import ThreadError
from hitl_app.review import ReviewError
from hitl_app.runs.limits import RunLimits
from hitl_app.store.tables import AuditRecord
from hitl_app.threads.service import ThreadService
from tests.helpers.fault_proxy import FaultProxy
from tests.helpers.langgraph_server import LangGraphDev
from tests.helpers.pairing import assert_pairing
from tests.integration.remote.conftest import remote_service

OWNER = "owner-faults"
PERSON = BrowserPerson(OWNER, "Dana")


@pytest.fixture
def own_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphDev]:
    """A deployment of this test alone (it is stopped and started again)."""
    server = LangGraphDev(tmp_path_factory.mktemp("langgraph-own"))
    server.start()
    yield server
    server.close()


@pytest.fixture
async def proxy(deployment: LangGraphDev) -> AsyncIterator[FaultProxy]:
    p = await FaultProxy(deployment.url).start()
    yield p
    await p.close()


def audit_rows(svc: ThreadService, interrupt_id: str) -> int:
    with Session(svc.engines.sync) as s:
        return s.exec(select(func.count()).select_from(AuditRecord).where(AuditRecord.interrupt_id == interrupt_id)).one()


async def pending_of(svc: ThreadService, t: str, text: str):
    await svc.start_turn(t, text, owner=OWNER)
    await svc.wait(t, 60)
    view = await svc.load(t, owner=OWNER)
    assert view.status == "review", view
    return view.pending


async def test_a_5xx_on_the_resume_records_nothing_and_retry_decides_once(proxy, deployment, tmp_path):
    t = str(uuid.uuid4())
    async with remote_service(proxy.url, tmp_path / "hitl.sqlite") as svc:
        review = await pending_of(svc, t, "delete five.txt")
        proxy.fail = ("POST", "/runs/stream", 503)
        await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        await svc.wait(t, 60)
        assert proxy.failed == 1
        view = await svc.load(t, owner=OWNER)
        assert view.status == "review" and view.pending.interrupt_id == review.interrupt_id
        assert audit_rows(svc, review.interrupt_id) == 0  # nothing recorded as decided that was not sent
        assert not [a for a in deployment.actions() if a.get("path") == "five.txt"]
        proxy.fail = None
        await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        await svc.wait(t, 60)
        view = await svc.load(t, owner=OWNER)
        assert view.status == "idle" and audit_rows(svc, review.interrupt_id) == 1
    assert [a for a in deployment.actions() if a.get("path") == "five.txt"] == [{"kind": "delete_file", "path": "five.txt"}]


async def test_a_5xx_on_a_turn_is_a_plain_sentence_in_the_thread(proxy, tmp_path):
    t = str(uuid.uuid4())
    async with remote_service(proxy.url, tmp_path / "hitl.sqlite") as svc:
        proxy.fail = ("POST", "/runs/stream", 500)
        await svc.start_turn(t, "stream 5 words", owner=OWNER)
        ended = [e async for e in svc.subscribe(t) if e.kind == "ended"]
        await svc.wait(t, 60)
        assert ended and ended[0].outcome == "failed"
        assert ended[0].error == f"The agent deployment at {proxy.url} had an internal error (HTTP 500). Try again in a moment."
        proxy.fail = None
        view = await svc.load(t, owner=OWNER)
        assert view.status == "idle" and view.messages == []  # the server never took the message


async def test_a_deployment_down_and_back(own_deployment, tmp_path):
    t = str(uuid.uuid4())
    async with remote_service(own_deployment.url, tmp_path / "hitl.sqlite") as svc:
        review = await pending_of(svc, t, "delete down.txt")
        own_deployment.stop()
        with pytest.raises(ThreadError) as err:
            await svc.load(t, owner=OWNER)
        assert err.value.code == "agent_unavailable"
        assert err.value.message.startswith(f"The agent deployment at {own_deployment.url} does not answer")
        with pytest.raises(ThreadError) as err:
            await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        assert err.value.code == "agent_unavailable" and audit_rows(svc, review.interrupt_id) == 0
        with pytest.raises(ThreadError):
            await svc.start_turn(str(uuid.uuid4()), "stream 3 words", owner=OWNER)
        own_deployment.start()
        view = await svc.load(t, owner=OWNER)
        assert view.status == "review" and view.pending.interrupt_id == review.interrupt_id
        await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        await svc.wait(t, 60)
        assert (await svc.load(t, owner=OWNER)).status == "idle" and audit_rows(svc, review.interrupt_id) == 1
    assert [a for a in own_deployment.actions() if a.get("path") == "down.txt"] == [{"kind": "delete_file", "path": "down.txt"}]


async def test_the_time_limit_cancels_the_server_run_and_answers_the_open_call(deployment, tmp_path):
    t = str(uuid.uuid4())
    async with remote_service(deployment.url, tmp_path / "hitl.sqlite") as svc:
        review = await pending_of(svc, t, "wait 60 seconds")
        svc.runs.limits = RunLimits(run_timeout_s=3)  # for the resumed run only: the approved tool takes 60 s
        await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        ended = [e async for e in svc.subscribe(t) if e.kind == "ended"]
        await svc.wait(t, 60)
        assert ended[0].outcome == "failed" and ended[0].error == RunLimits(run_timeout_s=3).time_limit_text()
        assert await get_client(url=deployment.url).runs.list(t, status="running") == []
        view = await svc.load(t, owner=OWNER)
        assert [m.outcome for m in view.messages if m.role == "tool"] == ["cancelled"]
        assert_pairing((await svc.graph.aget_state(svc.config(t))).values["messages"])


async def test_the_step_limit_is_the_server_runs_recursion_limit(deployment, tmp_path):
    t = str(uuid.uuid4())
    limits = RunLimits(max_steps=2)
    async with remote_service(deployment.url, tmp_path / "hitl.sqlite", limits=limits) as svc:
        await svc.start_turn(t, "read outbox", owner=OWNER)  # model, tools, model: more than 2 steps
        ended = [e async for e in svc.subscribe(t) if e.kind == "ended"]
        await svc.wait(t, 60)
        assert ended[0].outcome == "failed" and ended[0].error == limits.step_limit_text()
        await asyncio.sleep(0)
        assert_pairing((await svc.graph.aget_state(svc.config(t))).values["messages"])


async def test_a_deployment_that_lost_its_threads(own_deployment, tmp_path):
    """An in-memory dev server restarted without its folder: the thread reads as empty (no card to decide,
    nothing decided), and the next message starts the server thread afresh."""
    t = str(uuid.uuid4())
    async with remote_service(own_deployment.url, tmp_path / "hitl.sqlite") as svc:
        review = await pending_of(svc, t, "delete lost.txt")
        own_deployment.restart(fresh=True)
        listed = [s for s in await svc.list_threads(owner=OWNER) if s.thread_id == t]
        assert [(s.pending_review, s.review_lost) for s in listed] == [(False, True)]  # the sidebar says so
        view = await svc.load(t, owner=OWNER)
        assert view.pending is None and view.messages == [] and view.status == "idle" and view.review_lost
        with pytest.raises(ReviewError):
            await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        assert audit_rows(svc, review.interrupt_id) == 0
        await svc.start_turn(t, "stream 3 words", owner=OWNER)
        await svc.wait(t, 60)
        view = await svc.load(t, owner=OWNER)
        assert [m.role for m in view.messages] == ["user", "assistant"] and view.status == "idle"
        assert not view.review_lost and not [s for s in await svc.list_threads(owner=OWNER) if s.review_lost]
    assert not [a for a in own_deployment.actions() if a.get("path") == "lost.txt"]
