"""Faults of a deployed agent, against a real ``langgraph dev``: a deployment that answers 5xx to the resume
records nothing as decided and leaves the review answerable; one that is down gives a plain sentence and
decides nothing, and when it is back the review is decided once; the app's time and step limits end
remote runs (the server's run cancelled, every tool call answered); a slow one (its requests held by the
proxy until the test lets them through, by events, never by time) leaves the app's own reads working, and
a resume it takes only after the time limit stays recorded as decided until it is known lost."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from langgraph_sdk import get_client
from sqlmodel import Session, func, select

from hitl_app.desk import claims as claims_module
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

# fault tests against a real `langgraph dev` and a fault proxy, ~40 s a run: make test runs them, make test-fast does not
pytestmark = pytest.mark.slow

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


DEADLINE_S = 120  # generous: these tests wait for events, never for a time to pass


async def test_a_slow_turn_start_leaves_the_apps_reads_working_and_streams_after(proxy, tmp_path):
    """A deployment slow to take a turn (its POST .../runs/stream held): meanwhile another thread loads,
    the thread list answers and the held thread says it is running; once let through, the reply streams
    to its end."""
    t, other = str(uuid.uuid4()), str(uuid.uuid4())
    async with remote_service(proxy.url, tmp_path / "hitl.sqlite") as svc:
        await svc.start_turn(other, "stream 3 words", owner=OWNER)
        await svc.wait(other, DEADLINE_S)
        held = proxy.hold("POST", "/runs/stream")
        await svc.start_turn(t, "stream 5 words", owner=OWNER)
        events = svc.subscribe(t)
        await asyncio.wait_for(held.arrived.wait(), DEADLINE_S)
        async with asyncio.timeout(DEADLINE_S):  # the app's own reads do not wait for the slow deployment
            assert await svc.is_running(t)
            loaded = await svc.load(other, owner=OWNER)
            assert [m.role for m in loaded.messages] == ["user", "assistant"] and loaded.status == "idle"
            assert {s.thread_id for s in await svc.list_threads(owner=OWNER)} >= {other}
            assert (await svc.load(t, owner=OWNER)).pending is None
        assert held.count == 1 and not held.forwarded.is_set()
        held.release.set()
        async with asyncio.timeout(DEADLINE_S):
            seen = [e async for e in events]
        await svc.wait(t, DEADLINE_S)
        assert [e.kind for e in seen if e.kind in ("started", "ended")][-1] == "ended"
        assert seen[-1].outcome == "finished" and seen[-1].error is None
        streamed = "".join(e.delta or "" for e in seen if e.kind == "text")
        view = await svc.load(t, owner=OWNER)
        assert view.status == "idle" and [m.role for m in view.messages] == ["user", "assistant"]
        assert streamed.split() == view.messages[-1].text.split() and len(streamed.split()) == 5
        assert not await svc.is_running(t) and held.client_gone == 0


async def held_resume_past_the_time_limit(proxy: FaultProxy, svc: ThreadService, t: str, text: str):
    """A review of ``t`` approved while the deployment holds its resume, until the app's time limit (3 s)
    ends the run: (the review, the hold, the run's ``ended`` event)."""
    review = await pending_of(svc, t, text)
    held = proxy.hold("POST", "/runs/stream")
    svc.runs.limits = RunLimits(run_timeout_s=3)
    events = svc.subscribe(t)
    await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
    await asyncio.wait_for(held.arrived.wait(), DEADLINE_S)
    async with asyncio.timeout(DEADLINE_S):
        ended = [e async for e in events if e.kind == "ended"]
    await svc.wait(t, DEADLINE_S)
    assert ended[0].outcome == "failed" and ended[0].error == RunLimits(run_timeout_s=3).unconfirmed_resume_text()
    assert not held.forwarded.is_set()  # the deployment has not seen the resume yet
    return review, held, ended[0]


async def test_a_resume_slower_than_the_time_limit_tells_the_truth(proxy, deployment, tmp_path):
    """A Submit whose resume the deployment takes only after the app's time limit ended the run: the app
    cannot know whether its decisions reached the server, so it says so and keeps them recorded (the
    review is not offered again meanwhile). The request does reach the server (as one on the wire reaches
    a slow server, its client gone) and the approved tool runs there once: the audit has the decision and
    the thread shows the tool's result. (Before the fix the claim was released at the time limit: the
    tool ran with no decision recorded, and the card was offered for a second decision.)"""
    t = str(uuid.uuid4())
    async with remote_service(proxy.url, tmp_path / "hitl.sqlite") as svc:
        review, held, _ = await held_resume_past_the_time_limit(proxy, svc, t, "delete slow.txt")
        assert audit_rows(svc, review.interrupt_id) == 1  # sent, maybe still on its way: recorded
        view = await svc.load(t, owner=OWNER)
        assert view.status == "review" and view.pending.interrupt_id == review.interrupt_id  # the server still waits
        with pytest.raises(ReviewError) as refused:  # not decided a second time while the first may land
            await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        assert refused.value.code == "already_decided" and held.count == 1
        held.release.set()
        await asyncio.wait_for(held.forwarded.wait(), DEADLINE_S)  # the server's run streamed to its end
        assert held.client_gone == 1
        view = await svc.load(t, owner=OWNER)
        assert view.status == "idle" and view.pending is None
        assert [(m.text, m.outcome) for m in view.messages if m.role == "tool"] == [("Deleted slow.txt.", "executed")]
        assert audit_rows(svc, review.interrupt_id) == 1
        assert_pairing((await svc.graph.aget_state(svc.config(t))).values["messages"])
    assert [a for a in deployment.actions() if a.get("path") == "slow.txt"] == [{"kind": "delete_file", "path": "slow.txt"}]


async def test_a_resume_lost_after_the_time_limit_leaves_the_review_answerable(proxy, deployment, tmp_path, monkeypatch):
    """The same, but the held resume never reaches the server: once the claim is stale (no run took it),
    a load releases it and the review is decided again, once."""
    t = str(uuid.uuid4())
    async with remote_service(proxy.url, tmp_path / "hitl.sqlite") as svc:
        review, held, _ = await held_resume_past_the_time_limit(proxy, svc, t, "delete lost2.txt")
        held.drop = True
        held.release.set()
        await asyncio.wait_for(held.forwarded.wait(), DEADLINE_S)
        proxy.holds.clear()
        monkeypatch.setattr(claims_module, "STALE_CLAIM_S", 0.0)  # instead of waiting out its 30 s
        view = await svc.load(t, owner=OWNER)
        assert view.status == "review" and view.pending.interrupt_id == review.interrupt_id
        assert audit_rows(svc, review.interrupt_id) == 0  # released: it never reached the server
        svc.runs.limits = RunLimits()
        await svc.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
        await svc.wait(t, DEADLINE_S)
        view = await svc.load(t, owner=OWNER)
        assert view.status == "idle" and audit_rows(svc, review.interrupt_id) == 1
    assert [a for a in deployment.actions() if a.get("path") == "lost2.txt"] == [{"kind": "delete_file", "path": "lost2.txt"}]
