"""The thread service on an agent deployed on a real ``langgraph dev`` (``RemoteAgentRuntime``): a turn
streams, each action request of the deployment's interrupt is a card with the deployment's allowed
decisions, approve / edit / reject / respond in one batch resume the server thread once, forged or
concurrent submissions are refused, Stop cancels the server's run, and an unknown assistant id stops
start-up with a clear line. The deployment's own effects (``LangGraphDev.actions``) say what ran."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langgraph_sdk import get_client
from sqlmodel import Session, func, select

from hitl_app.desk.cards import BrowserPerson
from hitl_app.errors import StartupError
from hitl_app.review import ReviewError
from hitl_app.runs.remote_agent import open_remote_agent
from hitl_app.store.tables import AuditRecord
from hitl_app.threads.service import ThreadService
from tests.helpers.pairing import assert_pairing
from tests.integration.remote.conftest import remote_service

OWNER = "owner-remote"
PERSON = BrowserPerson(OWNER, "Dana")


def tid() -> str:
    return str(uuid.uuid4())


async def turn(svc: ThreadService, thread_id: str, text: str) -> None:
    await svc.start_turn(thread_id, text, owner=OWNER)
    await svc.wait(thread_id, 60)


async def messages(svc: ThreadService, thread_id: str) -> list:
    return (await svc.graph.aget_state(svc.config(thread_id))).values.get("messages", [])


def audit_rows(svc: ThreadService, interrupt_id: str) -> int:
    with Session(svc.engines.sync) as s:
        return s.exec(select(func.count()).select_from(AuditRecord).where(AuditRecord.interrupt_id == interrupt_id)).one()


async def test_a_turn_streams_and_a_batch_of_cards_is_decided_once(service, deployment):
    t = tid()
    await service.start_turn(t, "email bob@example.com about the report: ready and delete notes.txt", owner=OWNER)
    streamed = []
    async for event in service.subscribe(t):
        if event.kind == "text":
            streamed.append(event.delta or "")
        if event.kind == "ended":
            break
    view = await service.load(t, owner=OWNER)
    assert view.status == "review"
    assert "".join(streamed).strip() == view.messages[-1].text.strip() != ""
    review = view.pending
    assert [a.name for a in review.action_requests] == ["send_email", "delete_file"]
    assert [c.allowed_decisions for c in review.review_configs] == [("approve", "edit", "reject"), ("approve", "reject")]
    assert [c.allowed for c in view.cards] == [["approve", "edit", "reject"], ["approve", "reject"]]
    assert_pairing(await messages(service, t), allow_pending_last=True)
    edited = {"to": "carol@example.com", "subject": "the report", "body": "ready"}
    await service.submit_review(
        t, review.interrupt_id,
        [{"type": "edit", "edited_action": {"name": "send_email", "args": edited}}, {"type": "reject", "message": "keep it"}],
        person=PERSON,
    )
    await service.wait(t, 60)
    view = await service.load(t, owner=OWNER)
    assert view.status == "idle" and view.pending is None
    outcomes = {m.tool_name: m.outcome for m in view.messages if m.role == "tool"}
    assert outcomes == {"send_email": "edited", "delete_file": "rejected"}
    assert [a for a in deployment.actions() if a.get("to") == "carol@example.com"] == [{"kind": "send_email", **edited}]
    assert not [a for a in deployment.actions() if a.get("path") == "notes.txt"]
    assert audit_rows(service, review.interrupt_id) == 2
    assert_pairing(await messages(service, t))


async def test_respond_and_approve(service, deployment):
    t = tid()
    await turn(service, t, "ask me which colour and delete old.txt")
    view = await service.load(t, owner=OWNER)
    assert [c.allowed for c in view.cards] == [["respond"], ["approve", "reject"]]
    await service.submit_review(
        t, view.pending.interrupt_id, [{"type": "respond", "message": "teal"}, {"type": "approve"}], person=PERSON
    )
    await service.wait(t, 60)
    view = await service.load(t, owner=OWNER)
    tools = [(m.tool_name, m.outcome, m.text) for m in view.messages if m.role == "tool"]
    assert ("ask_user", "answered", "teal") in tools and ("delete_file", "executed", "Deleted old.txt.") in tools
    assert [a for a in deployment.actions() if a.get("path") == "old.txt"] == [{"kind": "delete_file", "path": "old.txt"}]


async def test_forged_and_concurrent_submissions_resume_the_server_thread_once(service, deployment):
    t = tid()
    await turn(service, t, "delete forged.txt")
    review = (await service.load(t, owner=OWNER)).pending
    with pytest.raises(ReviewError):  # the deployment allows approve / reject only
        await service.submit_review(
            t, review.interrupt_id, [{"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "x"}}}],
            person=PERSON,
        )
    with pytest.raises(ReviewError):  # another interrupt
        await service.submit_review(t, uuid.uuid4().hex, [{"type": "approve"}], person=PERSON)
    assert (await service.load(t, owner=OWNER)).status == "review" and audit_rows(service, review.interrupt_id) == 0
    results = await asyncio.gather(
        *(service.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON) for _ in range(3)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, str) for r in results) == 1, results
    assert all(isinstance(r, (str, ReviewError)) for r in results), results
    await service.wait(t, 60)
    assert [a for a in deployment.actions() if a.get("path") == "forged.txt"] == [{"kind": "delete_file", "path": "forged.txt"}]
    assert (await service.load(t, owner=OWNER)).status == "idle"


async def test_stop_cancels_the_server_run_and_the_thread_goes_on(service, deployment):
    t = tid()
    await turn(service, t, "wait 60 seconds")
    review = (await service.load(t, owner=OWNER)).pending
    await service.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=PERSON)
    client = get_client(url=deployment.url)
    for _ in range(300):  # the approved tool is running on the server
        if await client.runs.list(t, status="running"):
            break
        await asyncio.sleep(0.1)
    assert await service.stop(t, owner=OWNER)
    await service.wait(t, 60)
    assert await client.runs.list(t, status="running") == []
    view = await service.load(t, owner=OWNER)
    assert [m.outcome for m in view.messages if m.role == "tool"] == ["cancelled"]
    assert not [a for a in deployment.actions() if a.get("kind") == "slow_task" and a.get("seconds") == 60]
    assert_pairing(await messages(service, t))
    await turn(service, t, "stream 5 words")
    view = await service.load(t, owner=OWNER)
    assert view.status == "idle" and view.messages[-1].text == "The quick brown fox jumps."
    assert_pairing(await messages(service, t))


async def test_an_unknown_assistant_id_stops_start_up_with_a_clear_line(deployment):
    with pytest.raises(StartupError) as err:
        async with open_remote_agent(deployment.url, "no-such-agent"):
            pass
    assert "HITL_ASSISTANT_ID='no-such-agent' is not an assistant or graph" in str(err.value)
    assert "it serves: agent" in str(err.value)


async def test_a_non_hitl_interrupt_of_a_custom_graph_is_a_notice_not_a_crash(deployment, tmp_path):
    t = tid()
    async with remote_service(deployment.url, tmp_path / "q.sqlite", assistant_id="question") as svc:
        await turn(svc, t, "paint it")
        view = await svc.load(t, owner=OWNER)
        assert view.pending is None and view.cards == [] and view.status == "failed"
        assert view.error.startswith("The agent paused with a request this app cannot answer")
        assert "Which colour should the button be?" in view.error
