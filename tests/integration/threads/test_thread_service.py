"""ThreadService against the real agent and a real AsyncSqliteSaver: the server-side rules.

Same rules as the websocket tests, one layer down (no Reflex): C4, C6, C9, concurrency, forged
submissions (renamed tool, too many decisions, wrong interrupt), stop and continue, and the
audit record's fields. Pairing is checked after every resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import UTC

import pytest
from sqlmodel import Session, func, select

from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent_loader import validators_for
from hitl_app.desk.cards import BrowserPerson
from hitl_app.review import ReviewError
from hitl_app.store.db import create_schema, make_engines
from hitl_app.store.tables import AuditRecord, OutboxMail, ReviewRequestRecord
from hitl_app.threads.service import ThreadError, ThreadService
from tests.helpers.pairing import assert_pairing

OWNER = "owner-a"


@contextlib.asynccontextmanager
async def _thread_service(database_url, workspace, saver, words_per_second: float):
    """A ThreadService on the demo agent, app tables in the workspace's database."""
    from hitl_app.agent.build import build_demo_agent

    engines = make_engines(database_url)
    create_schema(engines)
    bundle = build_demo_agent(model=DemoChatModel(words_per_second=words_per_second), workspace=workspace, checkpointer=saver)
    try:
        yield ThreadService(bundle.graph, engines, validators_for(bundle.tools_by_name), flush_interval=0.01)
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


@pytest.fixture
async def service(database_url, workspace, saver):
    """The service with an unpaced model."""
    async with _thread_service(database_url, workspace, saver, 0) as svc:
        yield svc


@pytest.fixture
async def slow_service(database_url, workspace, saver):
    """Like ``service`` but the model streams 40 words per second (runs that can be interrupted)."""
    async with _thread_service(database_url, workspace, saver, 40) as svc:
        yield svc


def tid() -> str:
    return str(uuid.uuid4())


async def turn(svc: ThreadService, thread_id: str, text: str) -> None:
    await svc.start_turn(thread_id, text, owner=OWNER)
    await svc.wait(thread_id)


async def messages(svc: ThreadService, thread_id: str):
    return (await svc.graph.aget_state(svc.config(thread_id))).values.get("messages", [])


def count(svc: ThreadService, table, *where) -> int:
    with Session(svc.engines.sync) as s:
        return s.exec(select(func.count()).select_from(table).where(*where)).one()


def mails_to(svc: ThreadService, to: str) -> int:
    return count(svc, OutboxMail, OutboxMail.to == to)


async def test_c4_new_message_while_review_pending_is_refused_and_thread_stays_sound(service):
    t = tid()
    await turn(service, t, "email bob@example.com about lunch: noon")
    with pytest.raises(ThreadError) as err:
        await service.start_turn(t, "actually never mind", owner=OWNER)
    assert err.value.code == "review_pending" and "Decide the pending review first" in err.value.message
    view = await service.load(t, owner=OWNER)
    assert view.status == "review"
    assert [m.text for m in view.messages if m.role == "user"] == ["email bob@example.com about lunch: noon"]
    assert_pairing(await messages(service, t), allow_pending_last=True)
    await service.submit_review(
        t, view.pending.interrupt_id, [{"type": "reject", "message": "never mind"}], person=BrowserPerson(OWNER, "Dana")
    )
    await service.wait(t)
    assert_pairing(await messages(service, t))
    await turn(service, t, "stream 5 words")
    view = await service.load(t, owner=OWNER)
    assert view.status == "idle" and view.messages[-1].role == "assistant"
    assert_pairing(await messages(service, t))
    assert mails_to(service, "bob@example.com") == 0


async def test_c6_invalid_edits_then_valid_record_once_per_action(service):
    t = tid()
    await turn(service, t, "email ann@example.com about a: b")
    for _ in range(3):  # re-reading the checkpoint (reloads, tabs) never adds a requested row
        view = await service.load(t, owner=OWNER)
    iid = view.pending.interrupt_id
    for bad in ({"to": 5, "subject": "a", "body": "b"}, {"to": "x@example.com"}):
        with pytest.raises(ReviewError) as err:
            await service.submit_review(
                t, iid, [{"type": "edit", "edited_action": {"name": "send_email", "args": bad}}],
                person=BrowserPerson(OWNER, "Dana"),
            )
        assert err.value.code == "bad_args"
    await service.submit_review(
        t,
        iid,
        [{
            "type": "edit",
            "edited_action": {"name": "send_email", "args": {"to": "cat@example.com", "subject": "a", "body": "b"}},
        }],
        person=BrowserPerson(OWNER, "Dana"),
    )
    await service.wait(t)
    assert count(service, ReviewRequestRecord, ReviewRequestRecord.thread_id == t) == 1
    assert count(service, AuditRecord, AuditRecord.thread_id == t) == 1
    assert mails_to(service, "cat@example.com") == 1 and mails_to(service, "ann@example.com") == 0
    assert_pairing(await messages(service, t))


async def test_c9_pending_review_is_read_from_the_checkpoint(service):
    t = tid()
    await service.start_turn(t, "email ben@example.com about x: y", owner=OWNER)
    # a consumer that only reads token events never sees the interrupt; the bus carries none
    kinds = [e.kind async for e in service.subscribe(t)]
    assert "ended" in kinds
    view = await service.load(t, owner=OWNER)
    assert view.status == "review" and view.pending.action_requests[0].name == "send_email"
    # a fresh service (another process) over the same checkpointer sees the same review
    other = ThreadService(service.graph, service.engines, service.validators)
    assert (await other.load(t, owner=OWNER)).pending == view.pending


FORGED = [
    ("unknown interrupt", "not-the-id", [{"type": "approve"}], "stale"),
    ("interrupt id of wrong type", 12345, [{"type": "approve"}], "stale"),
    ("decisions not a list", None, {"type": "approve"}, "malformed"),
    ("too few", None, [], "count"),
    ("too many", None, [{"type": "approve"}, {"type": "approve"}], "count"),
    ("decision not a dict", None, ["approve"], "malformed"),
    ("unknown decision type", None, [{"type": "obliterate"}], "malformed"),
    ("type not allowed (respond on send_email)", None, [{"type": "respond", "message": "hi"}], "not_allowed"),
    (
        "renamed tool", None, [{"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "notes/x.txt"}}}],
        "renamed"
    ),
    ("edit without args", None, [{"type": "edit", "edited_action": {"name": "send_email"}}], "malformed"),
    ("edit args not an object", None, [{"type": "edit", "edited_action": {"name": "send_email", "args": "x"}}], "malformed"),
    (
        "edit args unknown field", None,
        [
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "a@example.com", "subject": "s", "body": "b", "x": 1}}
            }
        ],
        "bad_args"
    ),
    (
        "edit args too large", None,
        [
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "a@example.com", "subject": "s", "body": "b" * 70_000}}
            }
        ],
        "too_large"
    ),
    ("extra key on decision", None, [{"type": "approve", "force": True}], "malformed"),
    ("reject message too long", None, [{"type": "reject", "message": "x" * 20_001}], "malformed"),
]


async def test_forged_submissions_are_refused_and_nothing_runs(service):
    t = tid()
    await turn(service, t, "email cy@example.com about s: b")
    iid = (await service.load(t, owner=OWNER)).pending.interrupt_id
    for label, interrupt_id, decisions, code in FORGED:
        with pytest.raises(ReviewError) as err:
            await service.submit_review(
                t, iid if interrupt_id is None else interrupt_id, decisions, person=BrowserPerson(OWNER, "x")
            )
        assert err.value.code == code, label
        assert err.value.message, label
        assert not await service.is_running(t), label
    with pytest.raises(ThreadError) as terr:
        await service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson("someone-else", "x"))
    assert terr.value.code == "forbidden"
    with pytest.raises(ThreadError):
        await service.stop(t, owner="someone-else")
    assert count(service, AuditRecord, AuditRecord.thread_id == t) == 0
    assert mails_to(service, "cy@example.com") == 0
    assert (await service.load(t, owner=OWNER)).status == "review"
    await service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, "x"))
    await service.wait(t)
    assert mails_to(service, "cy@example.com") == 1
    assert_pairing(await messages(service, t))


async def test_concurrent_submissions_resume_exactly_once(service):
    t = tid()
    await turn(service, t, "email dee@example.com about r: s")
    iid = (await service.load(t, owner=OWNER)).pending.interrupt_id
    results = await asyncio.gather(
        *(service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, f"r{i}")) for i in range(4)),
        return_exceptions=True,
    )
    wins = [r for r in results if isinstance(r, str)]
    losers = [r for r in results if isinstance(r, ReviewError)]
    assert len(wins) == 1 and len(losers) == 3
    assert all(e.code in ("already_decided", "stale") and "already decided" in e.message for e in losers)
    await service.wait(t)
    # a late retry after the run finished: still "already decided"
    with pytest.raises(ReviewError, match="already decided"):
        await service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, "late"))
    assert mails_to(service, "dee@example.com") == 1
    assert count(service, AuditRecord, AuditRecord.thread_id == t) == 1
    assert_pairing(await messages(service, t))


async def test_the_sidebar_stops_showing_the_review_once_it_is_submitted(slow_service):
    svc, t = slow_service, tid()
    await turn(svc, t, "email eve@example.com about q: ready")
    iid = (await svc.load(t, owner=OWNER)).pending.interrupt_id
    [row] = [r for r in await svc.list_threads(owner=OWNER) if r.thread_id == t]
    assert row.pending_review
    assert await svc.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, "x"))
    [row] = [r for r in await svc.list_threads(owner=OWNER) if r.thread_id == t]
    assert not row.pending_review, "no review waits once it is submitted (the resumed run may still stream)"
    await svc.wait(t)
    [row] = [r for r in await svc.list_threads(owner=OWNER) if r.thread_id == t]
    assert not row.pending_review and mails_to(svc, "eve@example.com") == 1


async def test_stop_mid_stream_leaves_the_thread_usable(slow_service):
    svc = slow_service
    t = tid()
    await svc.start_turn(t, "stream 400 words", owner=OWNER)
    await asyncio.sleep(0.5)
    assert await svc.is_running(t)
    with pytest.raises(ThreadError, match="still answering"):
        await svc.start_turn(t, "interleave", owner=OWNER)
    assert await svc.stop(t, owner=OWNER)
    assert not await svc.is_running(t)
    view = await svc.load(t, owner=OWNER)
    assert view.status in ("incomplete", "idle")
    # what streamed is kept, marked as stopped (issue 19), never taken for a whole reply
    assert [(m.role, m.cut) for m in view.messages if m.role == "assistant"] == [("assistant", "stopped")]
    assert_pairing(await messages(svc, t))
    await svc.start_turn(t, "stream 3 words", owner=OWNER)
    await svc.wait(t)
    view = await svc.load(t, owner=OWNER)
    assert view.status == "idle" and view.messages[-1].role == "assistant"
    assert_pairing(await messages(svc, t))


async def test_model_error_mid_stream_then_continue(service):
    t = tid()
    await turn(service, t, "fail after 5 words")
    view = await service.load(t, owner=OWNER)
    assert view.status == "failed" and view.error
    # the five words are kept, marked as cut off by the error (issue 19, QA M1)
    assert [(m.cut, len(m.text.split())) for m in view.messages if m.role == "assistant"] == [("failed", 5)]
    assert_pairing(await messages(service, t))
    await service.continue_run(t, owner=OWNER)  # the demo model fails again: still a clean failure
    await service.wait(t)
    assert (await service.load(t, owner=OWNER)).status == "failed"
    with pytest.raises(ThreadError, match="Nothing to continue"):
        t2 = tid()
        await turn(service, t2, "stream 2 words")
        await service.continue_run(t2, owner=OWNER)


async def test_tool_error_is_a_visible_tool_row_and_pairing_holds(service):
    t = tid()
    await turn(service, t, "delete notes/missing.txt")
    iid = (await service.load(t, owner=OWNER)).pending.interrupt_id
    await service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, "x"))
    await service.wait(t)
    view = await service.load(t, owner=OWNER)
    tool = [m for m in view.messages if m.role == "tool"]
    assert tool[-1].outcome == "error" and "File not found" in tool[-1].text
    assert view.status == "idle"
    assert_pairing(await messages(service, t))


async def test_audit_record_fields(service):
    t = tid()
    await turn(service, t, "email eve@example.com about q: w and delete notes/x.txt")
    view = await service.load(t, owner=OWNER)
    review = view.pending
    await asyncio.sleep(0.2)
    await service.submit_review(
        t,
        review.interrupt_id,
        [
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "fox@example.com", "subject": "q", "body": "w"}},
            },
            {"type": "reject", "message": "keep it"},
        ],
        person=BrowserPerson(OWNER, "Dana"),
    )
    await service.wait(t)
    with Session(service.engines.sync) as s:
        rows = s.exec(select(AuditRecord).where(AuditRecord.thread_id == t).order_by(AuditRecord.action_index)).all()
    edit, reject = rows
    assert edit.interrupt_id == review.interrupt_id == reject.interrupt_id
    assert edit.tool_call_id == review.tool_call_ids[0] and edit.tool_call_id.startswith("call_")
    assert reject.tool_call_id == review.tool_call_ids[1]
    assert (
        edit.tool_name, edit.decision_type, reject.tool_name, reject.decision_type
    ) == ("send_email", "edit", "delete_file", "reject")
    assert edit.args_proposed == {"to": "eve@example.com", "subject": "q", "body": "w"}
    assert edit.args_executed == {"to": "fox@example.com", "subject": "q", "body": "w"}
    assert reject.args_proposed == {"path": "notes/x.txt"} and reject.args_executed is None
    assert reject.message == "keep it" and edit.message is None
    assert edit.reviewer == reject.reviewer == "Dana"
    assert edit.checkpoint_id and edit.checkpoint_id == review.checkpoint_id
    requested, decided = edit.requested_at, edit.decided_at
    assert requested.tzinfo == decided.tzinfo == UTC, "times come back aware UTC on every backend"
    assert decided > requested
    assert edit.waited_seconds == pytest.approx((decided - requested).total_seconds(), abs=0.01)
    assert edit.waited_seconds >= 0.2
    # the line under the tool call
    audit = await service.audit_for_thread(t)
    from hitl_app.ui.rows import audit_line

    assert audit_line(audit[edit.tool_call_id]).startswith("edited by Dana: to: eve@example.com -> fox@example.com · ")
    assert audit_line(audit[reject.tool_call_id]).startswith("rejected by Dana: “keep it” · ")
    assert_pairing(await messages(service, t))


async def test_a_bus_error_after_the_claim_leaves_the_review_answerable_and_approving_works_once(service, monkeypatch):
    """A Redis blip while the run lease is taken must not leave the review decided-but-never-run."""
    import redis.exceptions

    t = tid()
    await turn(service, t, "email gus@example.com about blip: once")
    iid = (await service.load(t, owner=OWNER)).pending.interrupt_id
    bus = service.bus
    name = "acquire_lease" if hasattr(bus, "acquire_lease") else "claim"
    real = getattr(bus, name)
    calls = 0

    async def flaky(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == 1:
            raise redis.exceptions.ConnectionError("Connection reset by peer")
        return await real(*args, **kwargs)

    monkeypatch.setattr(bus, name, flaky)
    try:
        await service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, "Dana"))
    except Exception as exc:  # noqa: BLE001 - the kind is asserted below, after the recovery
        first: Exception = exc
    else:
        pytest.fail("the submission should have been refused by the bus error")
    view = await service.load(t, owner=OWNER)
    assert view.status == "review" and view.pending.interrupt_id == iid
    assert count(service, AuditRecord, AuditRecord.thread_id == t) == 0, "the claim was released"
    await service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, "Dana"))
    await service.wait(t)
    with pytest.raises(ReviewError, match="already decided"):
        await service.submit_review(t, iid, [{"type": "approve"}], person=BrowserPerson(OWNER, "Dana"))
    assert mails_to(service, "gus@example.com") == 1
    assert count(service, AuditRecord, AuditRecord.thread_id == t) == 1
    assert isinstance(first, ThreadError) and "nothing was sent" not in first.message
    assert_pairing(await messages(service, t))


async def test_a_claim_left_by_a_crashed_run_is_released_when_the_thread_is_loaded(service):
    """Claim rows for the pending interrupt with no live run (a worker died after claiming) are
    released by ``load`` once they are older than the grace period; approving then runs once."""
    from datetime import datetime, timedelta

    t = tid()
    await turn(service, t, "email hal@example.com about crash: once")
    review = (await service.load(t, owner=OWNER)).pending
    long_ago = datetime.now(UTC) - timedelta(minutes=5)
    with Session(service.engines.sync) as s:
        s.add(
            AuditRecord(
                thread_id=t, interrupt_id=review.interrupt_id, action_index=0, tool_name="send_email",
                decision_type="approve", args_proposed={}, reviewer="ghost", requested_at=long_ago,
                decided_at=long_ago, waited_seconds=0.0,
            )
        )
        s.commit()
    view = await service.load(t, owner=OWNER)
    assert view.status == "review" and view.pending.interrupt_id == review.interrupt_id
    assert count(service, AuditRecord, AuditRecord.thread_id == t) == 0
    await service.submit_review(t, review.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "Dana"))
    await service.wait(t)
    assert mails_to(service, "hal@example.com") == 1
    with Session(service.engines.sync) as s:
        assert [r.reviewer for r in s.exec(select(AuditRecord).where(AuditRecord.thread_id == t))] == ["Dana"]


async def test_a_decision_that_comes_while_the_pausing_run_writes_its_end_goes_on(service):
    """A review is in the checkpoint a moment before the run that raised it has ended (that run still asks
    the grants, reads the thread back and writes its end). A decision that comes then (a tab that read the
    thread, an API client) waits for that run and goes on: it is not refused as "already decided (the
    agent went on)" while nothing ran (seen under load in CI: the card stayed, with that sentence)."""
    from hitl_app.threads.views import thread_view_from_snapshot

    caught = 0
    for i in range(8):
        t = tid()
        await service.start_turn(t, f"email w{i}@example.com about race: {i}", owner=OWNER)
        pending = None
        while pending is None:  # every read yields to the run
            running = await service.is_running(t)
            pending = thread_view_from_snapshot(t, await service.graph.aget_state(service.config(t))).pending
            assert pending is not None or running, "the run ended without a review"
        caught += running and await service.is_running(t)
        await service.submit_review(t, pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "Dana"))
        await service.wait(t)
        assert mails_to(service, f"w{i}@example.com") == 1
        assert_pairing(await messages(service, t))
    assert caught, "no decision came while the pausing run was still live: the case was not tried"
