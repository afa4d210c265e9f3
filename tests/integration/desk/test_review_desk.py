"""The review desk at the server, on SQLite and PostgreSQL: grants, deadlines, undo.

Real parts: the demo agent (offline model, real tools), the app database and checkpointer, and
several runtimes in one process standing in for worker processes (each with its own sweeper).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import Session, select

from hitl_app.auth.types import Principal, Role
from hitl_app.review import ReviewError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.desk_tables import GrantRecord, ReviewEvent, ReviewExpiry
from hitl_app.store.inbox import pending_reviews
from hitl_app.store.tables import AuditRecord, OutboxMail, utcnow
from hitl_app.threads.service import ThreadError, ThreadService

MIA = Principal(1, "Mia", Role.MEMBER, "mia@example.com")
ADA = Principal(5, "Ada", Role.ADMIN, "ada@example.com")
LEE = Principal(2, "Lee", Role.MEMBER, "lee@example.com")
REX = Principal(3, "Rex", Role.REVIEWER, "rex@example.com")
RITA = Principal(4, "Rita", Role.REVIEWER, "rita@example.com")
OWNER = str(MIA.account_id)
APPROVE = [{"type": "approve"}]

POLICY = """
[tools.send_email]
allowed_decisions = ["approve", "edit", "reject"]
description = "Send an email to {to}"

[tools.write_file]
allowed_decisions = ["approve", "reject"]
description = "Write the file {path}"
deadline = "2s"
timeout_message = "Nobody approved writing the file in time; do not write it."

[tools.delete_file]
allowed_decisions = ["approve", "reject"]
description = "Delete the file {path}"
deadline = "2s"
on_timeout = "escalate"
escalate_to = "admin"

[tools.slow_task]
allowed_decisions = ["approve", "reject"]
description = "Wait {seconds} seconds"
undo_seconds = 2
reviewers = ["owner", "reviewer"]

[tools.transfer_funds]
allowed_decisions = ["approve", "reject"]
description = "Pay {amount} to {to}"
grantable = false
"""


def settings_for(tmp_path: Path, database_url: str, policy: str = POLICY) -> Settings:
    path = tmp_path / "desk.toml"
    path.write_text(policy)
    # sweeps are driven by the tests (a long interval: the loop's first sweep finds nothing)
    return Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url, HITL_POLICY=str(path),
                    HITL_SWEEP_SECONDS=60)


@pytest.fixture
async def runtimes(tmp_path, database_url):
    """Three runtimes (workers) on one database; yields a list of them."""
    s = settings_for(tmp_path, database_url)
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(open_runtime(s)) for _ in range(3)]


async def ask(svc: ThreadService, text: str, t: str | None = None):
    """Send ``text`` in thread ``t`` (new by default) as Mia; returns (thread id, view after the run)."""
    t = t or str(uuid.uuid4())
    await svc.start_turn(t, text, owner=OWNER)
    await svc.wait(t)
    return t, await svc.load(t, viewer=MIA)


def rows(svc: ThreadService, model, **where):
    with Session(svc.engines.sync) as s:
        stmt = select(model)
        for key, value in where.items():
            stmt = stmt.where(getattr(model, key) == value)
        return list(s.exec(stmt))


def tool_outcomes(view) -> list[tuple[str, str]]:
    return [(m.tool_name, m.outcome) for m in view.messages if m.role == "tool"]


async def test_a_grant_lets_the_next_call_run_without_a_card_and_is_audited(runtimes):
    svc = runtimes[0].service
    t, view = await ask(svc, "email a@example.com about one")
    assert view.pending is not None and view.desk is not None
    assert view.desk.grant_scopes == [["call", "thread", "person"]]
    assert await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=MIA,
                                   grants=[{"scope": "thread", "hours": 1}]) is not None
    await svc.wait(t)
    _, view = await ask(svc, "email b@example.com about two", t)
    assert view.pending is None, "a call the grant covers must run without a card"
    assert tool_outcomes(view) == [("send_email", "executed"), ("send_email", "executed")]
    [grant] = rows(svc, GrantRecord)
    assert (grant.scope, grant.tool, grant.uses, grant.granted_by_name) == ("thread", "send_email", 1, "Mia")
    audited = [r for r in rows(svc, AuditRecord, thread_id=t) if r.via and r.via.startswith("grant:")]
    assert len(audited) == 1 and audited[0].via == f"grant:{grant.id}"
    assert audited[0].message.startswith("approved by grant: this tool in this thread, by Mia, until ")
    assert audited[0].args_executed == {"to": "b@example.com", "subject": "two", "body": ""}
    assert {m.to for m in rows(svc, OutboxMail)} == {"a@example.com", "b@example.com"}
    # the thread's line under the call comes from that audit row
    entry = (await svc.audit_for_thread(t))[audited[0].tool_call_id]
    assert entry.via == audited[0].via and entry.message == audited[0].message
    # another thread of Mia's is not covered by a thread grant
    _, other = await ask(svc, "email c@example.com about three")
    assert other.pending is not None


async def test_exact_call_grant_covers_only_the_same_arguments(runtimes):
    svc = runtimes[0].service
    t, view = await ask(svc, "email a@example.com about same")
    await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=MIA, grants=[{"scope": "call", "hours": 1}])
    await svc.wait(t)
    _, view = await ask(svc, "email a@example.com about same", t)
    assert view.pending is None
    _, view = await ask(svc, "email a@example.com about different", t)
    assert view.pending is not None


@pytest.mark.parametrize("end", ["revoked", "expired"])
async def test_a_revoked_or_expired_grant_asks_again(runtimes, end):
    svc = runtimes[0].service
    t, view = await ask(svc, "email a@example.com about one")
    await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=MIA, grants=[{"scope": "person", "hours": 24}])
    await svc.wait(t)
    _, view = await ask(svc, "email b@example.com about covered")  # person scope: any thread of Mia's
    assert view.pending is None
    [grant] = rows(svc, GrantRecord)
    if end == "revoked":
        with pytest.raises(ThreadError) as info:
            await svc.grants.revoke(grant.id, LEE)
        assert info.value.code == "forbidden"
        await svc.grants.revoke(grant.id, MIA)
    else:
        with Session(svc.engines.sync) as s:
            s.exec(update(GrantRecord).where(GrantRecord.id == grant.id).values(expires_at=utcnow() - timedelta(seconds=1)))
            s.commit()
    _, view = await ask(svc, "email c@example.com about asks again")
    assert view.pending is not None, f"a {end} grant must not cover the next call"
    assert rows(svc, GrantRecord)[0].uses == 1


async def test_a_forged_grant_for_a_non_grantable_tool_is_refused(runtimes):
    svc = runtimes[0].service
    t, view = await ask(svc, "pay 20 to Bob")
    assert view.desk.grant_scopes == [[]] and "does not allow grants" in view.desk.grant_notes[0]
    with pytest.raises(ReviewError) as info:
        await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=MIA, grants=[{"scope": "thread", "hours": 1}])
    assert info.value.code == "not_grantable"
    assert rows(svc, GrantRecord) == [] and rows(svc, AuditRecord, thread_id=t) == []
    again = await svc.load(t, viewer=MIA)
    assert again.pending is not None and again.pending.interrupt_id == view.pending.interrupt_id
    # a grant without an approval, or a malformed one, is refused too
    for grants, code in (([{"scope": "thread", "hours": 5}], "bad_request"), (["junk"], "bad_request")):
        with pytest.raises(ReviewError) as info:
            await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=MIA, grants=grants)
        assert info.value.code == code


async def sweep_all(runtimes, at) -> list[int]:
    sweepers = [r.service.sweeper(worker=f"w{i}") for i, r in enumerate(runtimes)]
    return list(await asyncio.gather(*(s.sweep(at) for s in sweepers)))


async def test_a_deadline_expires_exactly_once_with_three_sweepers(runtimes):
    svc = runtimes[0].service
    t, view = await ask(svc, "write notes/a.txt: hello")
    assert view.desk.deadline_at is not None and view.desk.deadline_tool == "write_file"
    assert await sweep_all(runtimes, view.desk.deadline_at - timedelta(seconds=1)) == [0, 0, 0], "not due yet"
    acted = await sweep_all(runtimes, view.desk.deadline_at + timedelta(seconds=1))
    assert sorted(acted) == [0, 0, 1]
    for r in runtimes:
        await r.service.wait(t)
    after = await svc.load(t, viewer=MIA)
    assert after.pending is None
    assert tool_outcomes(after) == [("write_file", "rejected")]
    tool_msg = next(m for m in after.messages if m.role == "tool")
    assert "Nobody approved writing the file in time" in tool_msg.text
    [audit] = rows(svc, AuditRecord, thread_id=t)
    assert (audit.decision_type, audit.via, audit.reviewer) == ("reject", "deadline", "policy")
    assert audit.message == "rejected by the policy: the deadline of card 1 passed (2 s without a decision)"
    assert [e.status for e in rows(svc, ReviewExpiry)] == ["expired"]
    assert [e.kind for e in rows(svc, ReviewEvent, thread_id=t)] == ["expired"]
    assert await sweep_all(runtimes, utcnow() + timedelta(seconds=10)) == [0, 0, 0], "never twice"


async def test_an_expired_review_leaves_the_inboxes_at_once(runtimes):
    """The policy's rejection tells the inboxes at once, as a person's Submit does: a browser's sidebar
    still said "Reviews 1" after the deadline passed (only a run that ends on a new review announced)."""
    svc = runtimes[0].service
    t, view = await ask(svc, "write notes/e.txt: hello")
    async with svc._session() as session:
        assert len(await pending_reviews(session=session, person=MIA, rights=svc.rights)) == 1
    seen = await svc.bus.reviews.version()
    assert await svc.sweeper(worker="w0").sweep(view.desk.deadline_at + timedelta(seconds=1)) == 1
    assert await svc.bus.reviews.version() > seen, "the inboxes were not told the review is answered"
    async with svc._session() as session:  # what they read then: nothing waits
        assert await pending_reviews(session=session, person=MIA, rights=svc.rights) == []
    await svc.wait(t)


async def test_a_card_without_a_deadline_is_rejected_with_its_sibling_and_every_line_says_by_the_policy(runtimes):
    """Issue 23: the mail has no deadline, the file write (card 1) has 2 s; when it passes, the whole
    review is answered: the mail's tool message, audit row and the agent's summary say the policy
    rejected it because card 1's deadline passed, never "no reviewer decided within 0 s" or "the
    reviewer rejected it"."""
    svc = runtimes[0].service
    t, view = await ask(svc, "write notes/c.txt: hello and email b@example.com about lunch")
    assert [a.name for a in view.pending.action_requests] == ["write_file", "send_email"]
    assert sum(await sweep_all(runtimes, view.desk.deadline_at + timedelta(seconds=1))) == 1
    for r in runtimes:
        await r.service.wait(t)
    after = await svc.load(t, viewer=MIA)
    assert tool_outcomes(after) == [("write_file", "rejected"), ("send_email", "rejected")]
    own, sibling = [m.text for m in after.messages if m.role == "tool"]
    assert "Rejected by the policy: the deadline of card 1 passed (2 s without a decision)." in own
    assert "Nobody approved writing the file in time" in own  # the policy's own message for its tool
    assert sibling.startswith(
        "User rejected the tool call for `send_email` with reason: Rejected by the policy: the deadline of card 1 passed "
        "(2 s without a decision). That answered the whole review, so the send_email call did not run."
    )
    assert "0 s" not in sibling
    audit = sorted(rows(svc, AuditRecord, thread_id=t), key=lambda r: r.action_index)
    assert [(a.reviewer, a.via) for a in audit] == [("policy", "deadline"), ("policy", "deadline")]
    assert audit[0].message == "rejected by the policy: the deadline of card 1 passed (2 s without a decision)"
    assert audit[1].message == audit[0].message + ", which answered the whole review"
    summary = next(m.text for m in reversed(after.messages) if m.role == "assistant").replace("\\", "")
    assert "reviewer rejected" not in summary
    assert summary.count("rejected by the policy: the deadline of card 1 passed") == 2


async def test_a_deadline_expires_across_a_restart(tmp_path, database_url):
    # an hour's deadline: each runtime's own first sweep (at start, on the real clock) finds it not
    # due however slow the machine is; the test's sweeps name the time
    s = settings_for(tmp_path, database_url, policy=POLICY.replace('deadline = "2s"', 'deadline = "1h"'))
    async with open_runtime(s) as first:
        t, view = await ask(first.service, "write notes/b.txt: hello")
        due = view.desk.deadline_at
    # the first worker is gone; a new one on the same database finds the due review
    async with open_runtime(s) as second:
        assert await second.service.sweeper().sweep(due - timedelta(seconds=1)) == 0, "not due yet"
        assert await second.service.sweeper().sweep(due + timedelta(seconds=1)) == 1
        await second.service.wait(t)
        after = await second.service.load(t, viewer=MIA)
        assert after.pending is None and tool_outcomes(after) == [("write_file", "rejected")]
        assert await second.service.sweeper().sweep(due + timedelta(seconds=5)) == 0


async def test_the_sweeper_task_started_with_the_runtime_expires_a_review(tmp_path, database_url):
    s = settings_for(tmp_path, database_url).model_copy(update={"sweep_seconds": 0.2})
    async with open_runtime(s) as rt:
        t, view = await ask(rt.service, "write notes/c.txt: hello")
        async with asyncio.timeout(60):  # the 2 s deadline, then the next 0.2 s sweep, on a loaded machine
            while (await rt.service.load(t, viewer=MIA)).pending is not None or await rt.service.is_running(t):
                await asyncio.sleep(0.1)
        after = await rt.service.load(t, viewer=MIA)
        assert after.pending is None and tool_outcomes(after) == [("write_file", "rejected")]


async def test_an_escalated_deadline_lets_the_role_decide(runtimes):
    svc = runtimes[0].service
    t, view = await ask(svc, "delete notes/x.txt")
    with pytest.raises(ReviewError) as info:  # before the deadline only the owner decides
        await svc.submit_review(t, view.pending.interrupt_id, [{"type": "reject", "message": "no"}], person=ADA)
    assert info.value.code == "forbidden"
    acted = await sweep_all(runtimes, view.desk.deadline_at + timedelta(seconds=1))
    assert sorted(acted) == [0, 0, 1]
    after = await svc.load(t, viewer=MIA)
    assert after.pending is not None and after.desk.escalated_to == "admin"
    assert [e.note for e in rows(svc, ReviewEvent, thread_id=t)] == ["expired after 2 s, escalated to admin by policy"]
    await svc.submit_review(t, view.pending.interrupt_id, [{"type": "reject", "message": "no"}], person=ADA)
    await svc.wait(t)
    assert tool_outcomes(await svc.load(t, viewer=MIA)) == [("delete_file", "rejected")]


async def test_undo_puts_the_review_back_and_the_window_resumes_exactly_once(runtimes):
    svc = runtimes[0].service
    t, view = await ask(svc, "wait 0 seconds")
    iid = view.pending.interrupt_id
    assert await svc.submit_review(t, iid, APPROVE, person=MIA) is None, "the run waits out the undo window"
    waiting = await svc.load(t, viewer=MIA)
    assert waiting.pending is not None and waiting.desk.undo_until is not None and waiting.desk.undo_by == "Mia"
    assert [(d.tool, d.verb) for d in waiting.desk.decided] == [("slow_task", "approved")], "what the window runs"
    with pytest.raises(ReviewError) as info:  # decided: nobody else decides it meanwhile
        await svc.submit_review(t, iid, [{"type": "reject"}], person=MIA)
    assert (info.value.code, info.value.message) == ("already_decided", "You already decided this review; nothing more was sent.")
    with pytest.raises(ThreadError) as denied:
        await svc.desk.undo(t, iid, LEE)
    assert denied.value.code == "forbidden"
    await svc.desk.undo(t, iid, MIA)
    back = await svc.load(t, viewer=MIA)
    assert back.pending is not None and back.pending.interrupt_id == iid and back.desk.undo_until is None
    assert back.desk.decided == []
    assert rows(svc, AuditRecord, thread_id=t) == [], "the claim is released: answerable again"
    later = back.desk.requested_at + timedelta(minutes=10)  # the inbox counts from the interrupt, not the undo
    async with svc._session() as session:
        [item] = await pending_reviews(session=session, person=MIA, rights=svc.rights, now=later)
    assert item.waited_seconds == 600
    assert await sweep_all(runtimes, utcnow() + timedelta(seconds=10)) == [0, 0, 0], "an undone window never runs"
    # submit again; the window ends; three workers sweep at once: one resumes
    await svc.submit_review(t, iid, APPROVE, person=MIA)
    acted = await sweep_all(runtimes, utcnow() + timedelta(seconds=3))
    assert sorted(acted) == [0, 0, 1]
    for r in runtimes:
        await r.service.wait(t)
    done = await svc.load(t, viewer=MIA)
    assert done.pending is None and tool_outcomes(done) == [("slow_task", "executed")]
    kinds = [e.kind for e in rows(svc, ReviewEvent, thread_id=t)]
    assert kinds == ["submitted", "undone", "submitted", "resumed"]
    with pytest.raises(ThreadError) as too_late:
        await svc.desk.undo(t, iid, MIA)
    assert too_late.value.code == "too_late"


async def test_a_second_decision_in_the_undo_window_is_refused_as_already_decided_naming_who(runtimes, caplog):
    """The slower of two reviewers, a double-clicked Submit: refused, and the log says why
    (before: ``code=forbidden: This thread belongs to someone else.``)."""
    svc = runtimes[0].service
    t, view = await ask(svc, "wait 0 seconds")
    iid = view.pending.interrupt_id
    assert await svc.submit_review(t, iid, APPROVE, person=REX) is None, "Rex's approval opens the undo window"
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(ReviewError) as slower:
        await svc.submit_review(t, iid, [{"type": "reject", "message": "no"}], person=RITA)
    assert slower.value.code == "already_decided"
    assert slower.value.message == "Rex already decided this review; your choices were not sent."
    [line] = [r.getMessage() for r in caplog.records if "review decision refused" in r.getMessage()]
    assert "code=already_decided: Rex already decided this review; your choices were not sent." in line
    with pytest.raises(ReviewError) as twice:  # Rex's double click
        await svc.submit_review(t, iid, APPROVE, person=REX)
    assert twice.value.message == "You already decided this review; nothing more was sent."
    after = await svc.load(t, viewer=MIA)
    assert after.desk.undo_by == "Rex" and [(d.tool, d.verb) for d in after.desk.decided] == [("slow_task", "approved")]
