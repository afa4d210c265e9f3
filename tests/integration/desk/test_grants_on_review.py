"""Grants made and used around a review, on SQLite and PostgreSQL, through the real runtime.

1. A grant is written when its maker's approval is recorded, also when the review still waits on
   other cards or other people; an undone submission withdraws the grants made with it (and only
   those).
2. Grants cover a developer's agent (``HITL_AGENT``, no ``GrantGate``): a review every card of which
   a grant covers resumes at once, audited; a review some cards of which are covered shows those
   as decided by the grant, the others wait. The run's step limit counts across such resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from hitl_app.auth.types import Principal, Role
from hitl_app.review import ReviewError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.desk_tables import GrantRecord
from hitl_app.store.tables import AuditRecord, DecisionDraft, utcnow
from hitl_app.threads.service import ThreadService
from tests.fixtures.grants_agent import effects

MO = Principal(1, "Mo", Role.MEMBER, "mo@example.com")
RITA = Principal(2, "Rita", Role.REVIEWER, "rita@example.com")
OWNER = str(MO.account_id)
APPROVE = {"type": "approve"}
THREAD_GRANT = {"scope": "thread", "hours": 24}
HOLD_S = 1.0  # the boundary hold in the grant-check test: a slow machine may publish it before the check, never during

POLICY = """
[tools.send_email]
allowed_decisions = ["approve", "edit", "reject"]
description = "Send an email to {to}"
reviewers = ["owner", "reviewer"]

[tools.delete_file]
allowed_decisions = ["approve", "reject"]
description = "Delete the file {path}"
reviewers = ["reviewer"]
self_approval = false

[tools.slow_task]
allowed_decisions = ["approve", "reject"]
description = "Wait {seconds} seconds"
undo_seconds = 2

[tools.transfer_funds]
allowed_decisions = ["approve", "reject"]
description = "Pay {amount} to {to}"
grantable = false
"""


@pytest.fixture
async def team(tmp_path: Path, database_url: str):
    policy = tmp_path / "team.toml"
    policy.write_text(POLICY)
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url, HITL_POLICY=str(policy),
                        HITL_SWEEP_SECONDS=60)
    async with open_runtime(settings) as rt:
        yield rt.service


@contextlib.asynccontextmanager
async def grants_agent(tmp_path: Path, database_url: str, max_steps: int):
    """A runtime on ``tests.fixtures.grants_agent`` (``HITL_AGENT``) with ``HITL_RUN_MAX_STEPS``."""
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url,
                        HITL_AGENT="tests.fixtures.grants_agent:make_agent", HITL_SWEEP_SECONDS=60,
                        HITL_RUN_MAX_STEPS=max_steps)
    async with open_runtime(settings) as rt:
        yield rt.service


@pytest.fixture
async def own_agent(tmp_path: Path, database_url: str, monkeypatch):
    monkeypatch.setenv("HITL_DATA_DIR", str(tmp_path))
    async with grants_agent(tmp_path, database_url, 30) as svc:
        yield svc


@pytest.fixture
async def long_agent(tmp_path: Path, database_url: str, monkeypatch):
    monkeypatch.setenv("HITL_DATA_DIR", str(tmp_path))
    async with grants_agent(tmp_path, database_url, 10_000) as svc:
        yield svc


async def ask(svc: ThreadService, text: str, t: str | None = None, who: Principal = MO):
    t = t or str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(who.account_id))
    await svc.wait(t)
    return t, await svc.load(t, viewer=who)


def rows(svc: ThreadService, model, **where):
    with Session(svc.engines.sync) as s:
        stmt = select(model)
        for key, value in where.items():
            stmt = stmt.where(getattr(model, key) == value)
        return list(s.exec(stmt))


def outcomes(view) -> list[tuple[str, str]]:
    return [(m.tool_name, m.outcome) for m in view.messages if m.role == "tool"]


# ---------------------------------------------------------------- 1. saved with the approval


async def test_a_grant_is_saved_when_its_approval_is_even_if_the_review_waits_for_someone_else(team):
    t, view = await ask(team, "email bob@example.com about one; delete notes.txt")
    assert [a.name for a in view.pending.action_requests] == ["send_email", "delete_file"]
    iid = view.pending.interrupt_id
    assert await team.submit_review(t, iid, [APPROVE, None], person=MO, grants=[THREAD_GRANT, None]) is None
    [grant] = rows(team, GrantRecord)
    assert (grant.tool, grant.scope, grant.granted_by_name, grant.completing) == ("send_email", "thread", "Mo", False)
    assert [g.tool for g in await team.grants.list_grants(MO)] == ["send_email"], "the Grants page lists it at once"
    # Rita decides the other card: the review goes on; the grant was not written twice
    await team.submit_review(t, iid, [None, {"type": "reject", "message": "keep it"}], person=RITA)
    await team.wait(t)
    assert len(rows(team, GrantRecord)) == 1
    _, after = await ask(team, "email carol@example.com about two", t)
    assert after.pending is None, "the next mail in this thread runs by Mo's grant"
    assert outcomes(after)[-1] == ("send_email", "executed")
    assert rows(team, GrantRecord)[0].uses == 1


async def test_a_grant_for_a_non_grantable_tool_is_refused_in_a_partial_submission_too(team):
    t, view = await ask(team, "pay 20 to Bob; delete notes.txt")
    with pytest.raises(ReviewError) as info:
        await team.submit_review(t, view.pending.interrupt_id, [APPROVE, None], person=MO, grants=[THREAD_GRANT, None])
    assert info.value.code == "not_grantable"
    assert rows(team, GrantRecord) == [] and rows(team, DecisionDraft, interrupt_id=view.pending.interrupt_id) == []


async def test_undo_withdraws_the_grants_of_the_undone_submission_only(team):
    t, view = await ask(team, "email a@example.com about one; wait 0 seconds")
    iid = view.pending.interrupt_id
    await team.submit_review(t, iid, [APPROVE, None], person=RITA, grants=[THREAD_GRANT, None])  # partial: Rita has only card 1
    assert await team.submit_review(t, iid, [None, APPROVE], person=MO, grants=[None, THREAD_GRANT]) is None  # undo window
    assert sorted((g.tool, g.completing) for g in rows(team, GrantRecord)) == [("send_email", False), ("slow_task", True)]
    await team.desk.undo(t, iid, MO)
    assert [g.tool for g in rows(team, GrantRecord)] == ["send_email"], "the undone approval's grant is gone, card 1's stays"
    back = await team.load(t, viewer=MO)
    assert [c.complete for c in back.cards] == [True, False]
    # decided again without a grant; the window ends: the run goes on
    await team.submit_review(t, iid, [None, APPROVE], person=MO)
    assert await team.sweeper().sweep(utcnow() + timedelta(seconds=3)) == 1
    await team.wait(t)
    assert outcomes(await team.load(t, viewer=MO)) == [("send_email", "executed"), ("slow_task", "executed")]
    assert [g.tool for g in rows(team, GrantRecord)] == ["send_email"]


# ---------------------------------------------------------------- 2. grants cover HITL_AGENT agents


async def test_a_grant_covers_the_next_call_of_a_developers_agent(own_agent, tmp_path):
    svc = own_agent
    t, view = await ask(svc, "refund A-1 5")
    assert view.desk.grant_scopes == [["call", "thread", "person"]]
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MO, grants=[THREAD_GRANT])
    await svc.wait(t)
    _, view = await ask(svc, "refund A-2 6", t)
    assert view.pending is None and view.status == "idle", "a call the grant covers must not wait for a person"
    assert outcomes(view) == [("refund_payment", "executed"), ("refund_payment", "executed")]
    assert "Refunded 6.00 on A-2." in view.messages[-1].text
    [grant] = rows(svc, GrantRecord)
    assert grant.uses == 1
    call_id = view.messages[-2].tool_call_id
    [row] = rows(svc, AuditRecord, tool_call_id=call_id)
    assert (row.via, row.reviewer, row.decision_type) == (f"grant:{grant.id}", "Mo", "approve")
    assert row.message.startswith("approved by grant: this tool in this thread, by Mo, until ")
    assert (await svc.audit_for_thread(t))[call_id].message == row.message  # the line under the call
    assert [(e["tool"], e["order_id"]) for e in effects(tmp_path)] == [("refund_payment", "A-1"), ("refund_payment", "A-2")]
    _, other = await ask(svc, "refund A-3 1")
    assert other.pending is not None, "a thread grant covers nothing in another thread"


async def test_no_tab_is_told_to_read_the_thread_while_the_grants_are_asked(own_agent):
    """A held ``boundary`` that fired while the grants were checked made every watching tab read the
    paused thread and show a card that the grant then answered (seen as a flaky "no card for a
    covered call" on PostgreSQL under load). The boundary now waits for the run to go on."""
    svc = own_agent
    t, view = await ask(svc, "refund A-1 5")
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MO, grants=[THREAD_GRANT])
    await svc.wait(t)
    log: list[str] = []
    runs, asked, publish = svc.runs, svc.runs.on_interrupt, svc.runs.bus.publish
    assert asked is not None
    runs.boundary_hold_s = HOLD_S

    async def slow(review, owner):
        log.append("asking")
        # the hold's timer started before the check began, so an unpaused hold fires before this
        # same-length wait ends (the loop runs due timers in order): no race with the machine's speed
        await asyncio.sleep(HOLD_S)
        decisions = await asked(review, owner)
        log.append("answered")
        return decisions

    def spy(thread_id, event):
        log.append(event.kind)
        return publish(thread_id, event)

    runs.on_interrupt, runs.bus.publish = slow, spy  # type: ignore[method-assign]
    _, view = await ask(svc, "refund A-2 6", t)
    assert view.pending is None and outcomes(view)[-1] == ("refund_payment", "executed")
    asking, answered = log.index("asking"), log.index("answered")
    assert "boundary" not in log[asking:answered], log
    assert "boundary" in log, "the tool call message still reaches the tabs once the run goes on"


async def test_a_review_partly_covered_shows_the_granted_card_decided_and_waits_for_the_rest(own_agent, tmp_path):
    svc = own_agent
    t, view = await ask(svc, "refund A-1 5")
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MO, grants=[THREAD_GRANT])
    await svc.wait(t)
    _, view = await ask(svc, "refund A-2 1; close T-1", t)
    assert view.status == "review" and [a.name for a in view.pending.action_requests] == ["refund_payment", "close_ticket"]
    granted, open_card = view.cards
    assert granted.complete and granted.allowed == [] and granted.standing == "complete"
    assert granted.progress == "Approved by grant: this tool in this thread, by Mo"
    assert not open_card.complete and open_card.allowed == ["approve", "reject"]
    with pytest.raises(ReviewError) as info:  # the granted card is not the person's to change
        await svc.submit_review(t, view.pending.interrupt_id, [{"type": "reject"}, APPROVE], person=MO)
    assert info.value.code == "stale"
    assert effects(tmp_path)[1:] == [], "nothing ran before the person decided"
    await svc.submit_review(t, view.pending.interrupt_id, [None, APPROVE], person=MO)
    await svc.wait(t)
    done = await svc.load(t, viewer=MO)
    assert done.status == "idle" and outcomes(done)[-2:] == [("refund_payment", "executed"), ("close_ticket", "executed")]
    refund_row, close_row = sorted(rows(svc, AuditRecord, interrupt_id=view.pending.interrupt_id), key=lambda r: r.action_index)
    assert refund_row.via and refund_row.via.startswith("grant:") and refund_row.reviewer == "Mo"
    assert refund_row.message.startswith("approved by grant: this tool in this thread, by Mo")
    assert close_row.via == "page" and close_row.reviewer == "Mo"
    assert rows(svc, GrantRecord)[0].uses == 1
    assert sorted(e["tool"] for e in effects(tmp_path)) == ["close_ticket", "refund_payment", "refund_payment"]


async def test_runs_resumed_by_grants_keep_the_step_limit(own_agent, tmp_path):
    svc = own_agent
    t, view = await ask(svc, "refund A-1 1 forever")
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MO, grants=[THREAD_GRANT])
    await svc.wait(t, timeout=60)
    view = await svc.load(t, viewer=MO)
    ran = len(effects(tmp_path))
    assert 2 <= ran <= 11, "grants resume the run, within the run's 30 steps (not a fresh budget per resume)"
    assert view.status == "review" and view.cards[0].allowed == ["approve", "edit", "reject"], (
        "with no steps left, the next review waits for a person"
    )
    assert len(rows(svc, AuditRecord, thread_id=t)) == ran, "each call that ran was approved exactly once"


async def test_stop_ends_a_run_that_grants_keep_resuming(long_agent, tmp_path):
    svc = long_agent
    t, view = await ask(svc, "refund A-1 1 forever")
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MO, grants=[THREAD_GRANT])
    async with asyncio.timeout(60):  # until grants approved a few calls (the loop goes on for thousands of steps)
        while len(effects(tmp_path)) < 4:
            await asyncio.sleep(0.02)
    assert await svc.stop(t, owner=OWNER), "the run was still going"
    assert not await svc.is_running(t)
    ran = len(effects(tmp_path))
    stopped = await svc.load(t, viewer=MO)
    claimed = {r.interrupt_id for r in rows(svc, AuditRecord, thread_id=t)}
    assert stopped.pending is None or stopped.pending.interrupt_id not in claimed, "no claim is left without its run"
    assert len(effects(tmp_path)) == ran, "nothing runs after Stop"
