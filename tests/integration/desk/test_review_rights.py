"""Review rights at the thread service, on SQLite and PostgreSQL, with examples/policies/team.toml.

Every refusal of issue 10 ("Roles and review rights"): a member deciding a card that needs a
reviewer, self-approval where it is off, the same reviewer approving twice toward a two-person
rule, a decision on a card or interrupt that is not pending, a forged decision type, a signed-out
session, a stranger. Each one: a clear message, nothing runs (no payment, no audit row), the
review stays answerable (a right decision afterwards works), and the refusal is logged.
Then the drafts: two reviewers on two cards, two approvals toward a two-person rule (also sent at
once from two workers: exactly one resume, one payment), and the audit rows naming everyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

import pytest
from sqlmodel import Session, select

from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent.payments import payments
from hitl_app.agent.policy import load_policy_toml, rights_by_tool
from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.agent_loader import validators_for
from hitl_app.auth.types import Principal, Role
from hitl_app.review import ReviewError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.db import create_schema, make_engines
from hitl_app.store.tables import AuditRecord, DecisionDraft
from hitl_app.threads.service import ThreadError, ThreadService
from tests.helpers.paths import ROOT

TEAM = ROOT / "examples" / "policies" / "team.toml"
MIA = Principal(1, "Mia", Role.MEMBER, "mia@example.com")  # asks for the payments
LEE = Principal(2, "Lee", Role.MEMBER, "lee@example.com")
DANA = Principal(3, "Dana", Role.REVIEWER, "dana@example.com")
RAY = Principal(4, "Ray", Role.REVIEWER, "ray@example.com")
ADA = Principal(5, "Ada", Role.ADMIN, "ada@example.com")
OWNER = str(MIA.account_id)
APPROVE = [{"type": "approve"}]


@pytest.fixture
async def service(database_url, workspace, saver):
    """The demo agent under the team policy, its rights given to the service."""
    from hitl_app.agent.build import build_demo_agent

    rules = load_policy_toml(TEAM)
    engines = make_engines(database_url)
    create_schema(engines)
    bundle = build_demo_agent(
        model=DemoChatModel(words_per_second=0), workspace=workspace, checkpointer=saver, policy_rules=rules
    )
    try:
        yield ThreadService(
            bundle.graph, engines, validators_for(bundle.tools_by_name), flush_interval=0.01, rights=rights_by_tool(rules)
        )
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


async def ask(svc: ThreadService, text: str, owner: Principal = MIA) -> tuple[str, str]:
    """A new thread of ``owner`` asking ``text``; returns (thread id, pending interrupt id)."""
    t = str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(owner.account_id))
    await svc.wait(t)
    view = await svc.load(t, viewer=owner)
    assert view.pending is not None, view
    return t, view.pending.interrupt_id


def paid(workspace: DemoWorkspace) -> list[tuple[float, str]]:
    return [(p.amount, p.recipient) for p in payments(workspace.space(OWNER).demo_db)]


def audit(svc: ThreadService, t: str) -> list[AuditRecord]:
    with Session(svc.engines.sync) as s:
        return list(s.exec(select(AuditRecord).where(AuditRecord.thread_id == t).order_by(AuditRecord.action_index)))


async def refused(svc, caplog, t, iid, decisions, person, *, code: str, words: str, error=ReviewError, pending=None, owner=MIA):
    """Submit, expect the refusal (code + words), a log line, and nothing decided (``pending``, or
    ``iid``, still the open review)."""
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(error) as info:
        await svc.submit_review(t, iid, decisions, person=person)
    assert info.value.code == code and words in info.value.message, (info.value.code, info.value.message)
    assert any("review decision refused" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    assert audit(svc, t) == []
    view = await svc.load(t, viewer=owner)
    assert view.status == "review" and view.pending.interrupt_id == (pending or iid)
    return info.value


async def test_every_refusal_leaves_the_payment_unpaid_and_the_review_answerable(service, workspace, caplog):
    t, iid = await ask(service, "pay 500 to Bob")
    # the member who asked: the card needs a reviewer
    await refused(
        service, caplog, t, iid, APPROVE, MIA, code="forbidden", words="transfer_funds needs a reviewer; you are a member"
    )
    # another member cannot even open the thread
    await refused(service, caplog, t, iid, APPROVE, LEE, code="forbidden", words="belongs to someone else", error=ThreadError)
    with pytest.raises(ThreadError) as info:
        await service.load(t, viewer=LEE)
    assert info.value.code == "forbidden"
    # a forged decision type the card does not allow (transfer_funds: approve or reject)
    forged = [{"type": "edit", "edited_action": {"name": "transfer_funds", "args": {"amount": 1, "to": "Eve"}}}]
    await refused(service, caplog, t, iid, forged, DANA, code="not_allowed", words="Edit is not allowed for transfer_funds")
    await refused(service, caplog, t, iid, [{"type": "respond", "message": "ok"}], DANA, code="not_allowed", words="not allowed")
    # an interrupt that is not pending
    await refused(service, caplog, t, str(uuid.uuid4()), APPROVE, DANA, code="stale", words="already decided", pending=iid)
    # signed out
    await refused(service, caplog, t, iid, APPROVE, None, code="forbidden", words="Sign in", error=ThreadError)
    assert paid(workspace) == []
    # still answerable: the reviewer approves and the payment runs once
    assert await service.submit_review(t, iid, APPROVE, person=DANA)
    await service.wait(t)
    assert paid(workspace) == [(500.0, "Bob")]
    [row] = audit(service, t)
    assert (row.reviewer, row.reviewer_id, row.reviewer_role, row.decision_type) == ("Dana", "3", "reviewer", "approve")
    assert row.asked == "|reviewer|admin|"


async def test_self_approval_off_and_withdrawing_own_request(service, workspace, caplog):
    t, iid = await ask(service, "pay 200 to Bob", owner=DANA)  # a reviewer asks
    await refused(service, caplog, t, iid, APPROVE, DANA, code="forbidden", words="someone else must approve it", owner=DANA)
    # they may withdraw it (reject), which decides the card at once
    assert await service.submit_review(t, iid, [{"type": "reject", "message": "wrong"}], person=DANA)
    await service.wait(t)
    [row] = audit(service, t)
    assert (row.decision_type, row.reviewer, row.reviewer_id) == ("reject", "Dana", "3")


async def test_two_person_rule_same_reviewer_twice_refused_then_second_reviewer_completes(service, workspace, caplog):
    t, iid = await ask(service, "pay 1500 to Bob")
    assert await service.submit_review(t, iid, APPROVE, person=DANA) is None  # drafted, waiting
    assert paid(workspace) == []
    view = await service.load(t, viewer=MIA)
    assert view.cards[0].progress == "1 of 2 approvals: Dana" and not view.cards[0].complete
    assert view.cards[0].allowed == ["reject"] and view.read_only is False  # Mia may withdraw only
    dana_view = await service.load(t, viewer=DANA)
    assert dana_view.read_only and dana_view.cards[0].allowed == ["reject"]
    assert "already approved" in dana_view.cards[0].note
    await refused_keep_draft(service, caplog, t, iid, DANA, words="You already approved this; it needs a second reviewer")
    assert (await service.load(t, viewer=RAY)).cards[0].allowed == ["approve", "reject"]
    run = await service.submit_review(t, iid, APPROVE, person=ADA)  # an admin counts as a reviewer
    assert run
    await service.wait(t)
    assert paid(workspace) == [(1500.0, "Bob")]
    [row] = audit(service, t)
    assert row.reviewer == "Dana and Ada" and (row.reviewer_id, row.reviewer_role) == ("5", "admin")
    assert [(d["display_name"], d["role"], d["type"]) for d in row.deciders] == [
        ("Dana", "reviewer", "approve"),
        ("Ada", "admin", "approve"),
    ]
    # the review is decided: one more approval is refused as stale, nothing runs again
    with pytest.raises(ReviewError) as info:
        await service.submit_review(t, iid, APPROVE, person=RAY)
    assert info.value.code == "stale"
    assert paid(workspace) == [(1500.0, "Bob")]


async def refused_keep_draft(svc, caplog, t, iid, person, *, words):
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(ReviewError) as info:
        await svc.submit_review(t, iid, APPROVE, person=person)
    assert info.value.code == "forbidden" and words in info.value.message
    assert any("refused" in r.getMessage() for r in caplog.records)
    assert audit(svc, t) == []
    assert (await svc.load(t, viewer=MIA)).cards[0].progress == "1 of 2 approvals: Dana"


async def test_two_reviewers_decide_different_cards_and_drafts_survive(service, workspace):
    t, iid = await ask(service, "pay 1500 to Bob and pay 30 to Cat")
    with pytest.raises(ReviewError) as partial:  # C5: both cards are Dana's to decide, so both at once
        await service.submit_review(t, iid, [{"type": "approve"}, None], person=DANA)
    assert partial.value.code == "count" and "1 of 2 decided" in partial.value.message
    assert await service.submit_review(t, iid, [{"type": "approve"}] * 2, person=DANA) is None  # 1500 needs two
    # a new service on the same database (a reload, another worker): the drafts are there
    fresh = ThreadService(service.graph, service.engines, service.validators, rights=service.rights)
    view = await fresh.load(t, viewer=RAY)
    assert [c.progress for c in view.cards] == ["1 of 2 approvals: Dana", "Approved by Dana"]
    assert view.cards[0].allowed == ["approve", "reject"] and view.cards[1].allowed == []
    # deciding card 2 again is refused as already decided
    with pytest.raises(ReviewError) as info:
        await fresh.submit_review(t, iid, [{"type": "reject"}, {"type": "reject"}], person=RAY)
    assert info.value.code == "stale" and info.value.card_index == 1
    assert await fresh.submit_review(t, iid, [{"type": "reject", "message": "no"}, None], person=RAY)
    await fresh.wait(t)
    assert paid(workspace) == [(30.0, "Cat")]
    rows = audit(service, t)
    assert [(r.decision_type, r.reviewer) for r in rows] == [("reject", "Ray"), ("approve", "Dana")]


def settings_for(tmp_path, database_url) -> Settings:
    return Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url, HITL_POLICY=str(TEAM))


@pytest.mark.parametrize("rounds", [3])
async def test_concurrent_two_person_approvals_from_two_workers_resume_exactly_once(tmp_path, database_url, rounds):
    s = settings_for(tmp_path, database_url)
    async with contextlib.AsyncExitStack() as stack:
        one = await stack.enter_async_context(open_runtime(s))
        two = await stack.enter_async_context(open_runtime(s))
        ws = DemoWorkspace(s.files_dir, one.engines.sync, s.demo_db_path)
        for _ in range(rounds):
            t, iid = await ask(one.service, "pay 2500 to Bob")
            results = await asyncio.gather(
                one.service.submit_review(t, iid, APPROVE, person=DANA),
                two.service.submit_review(t, iid, APPROVE, person=RAY),
                return_exceptions=True,
            )
            assert not any(isinstance(r, Exception) for r in results), results
            assert sum(1 for r in results if r) == 1, results  # exactly one started the run
            await one.service.wait(t)
            await two.service.wait(t)
            for _ in range(100):
                if (await one.service.load(t, viewer=MIA)).status == "idle":
                    break
                await asyncio.sleep(0.05)
            with Session(one.engines.sync) as db:
                [row] = db.exec(select(AuditRecord).where(AuditRecord.thread_id == t)).all()
                assert sorted(d["display_name"] for d in row.deciders) == ["Dana", "Ray"]
                assert len(db.exec(select(DecisionDraft).where(DecisionDraft.interrupt_id == iid)).all()) == 2
        assert [p.amount for p in payments(ws.space(OWNER).demo_db)] == [2500.0] * rounds


async def test_same_reviewer_twice_at_once_counts_once(service, workspace):
    t, iid = await ask(service, "pay 1500 to Bob")
    other = ThreadService(service.graph, service.engines, service.validators, rights=service.rights)  # another worker
    results = await asyncio.gather(
        service.submit_review(t, iid, APPROVE, person=DANA),
        other.submit_review(t, iid, APPROVE, person=DANA),
        return_exceptions=True,
    )
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 1 and errors[0].code == "forbidden" and "already approved" in errors[0].message, results
    assert (await service.load(t, viewer=MIA)).cards[0].progress == "1 of 2 approvals: Dana"
    assert paid(workspace) == []


async def test_audit_filter_admin_all_reviewer_decided_or_asked_member_own(service, workspace):
    from hitl_app.store.audit import list_decisions, to_csv

    t_pay, iid = await ask(service, "pay 1500 to Bob")  # Mia's; Dana and Ada approve
    await service.submit_review(t_pay, iid, APPROVE, person=DANA)
    await service.submit_review(t_pay, iid, APPROVE, person=ADA)
    await service.wait(t_pay)
    t_mail, iid = await ask(service, "ask me which colour", owner=LEE)  # only Lee answers his own question
    await service.submit_review(t_mail, iid, [{"type": "respond", "message": "=cmd|' /C calc'!A0"}], person=LEE)
    await service.wait(t_mail)
    t_own, iid = await ask(service, "pay 5 to Cat", owner=RAY)  # asked of reviewers: Dana may see it
    await service.submit_review(t_own, iid, [{"type": "reject"}], person=RAY)
    await service.wait(t_own)

    async def seen(person):
        return sorted(r.thread_id for r in await list_decisions(engine=service.engines.async_, viewer=person))

    assert await seen(ADA) == sorted([t_pay, t_mail, t_own])
    assert await seen(MIA) == [t_pay]  # her own thread
    assert await seen(LEE) == [t_mail]  # his own thread only: nobody asked members
    assert await seen(DANA) == sorted([t_pay, t_own])  # decided one, asked (as a reviewer) for the other
    [row] = await list_decisions(engine=service.engines.async_, viewer=MIA)
    assert row.deciders == "Dana (reviewer, #3) approved; Ada (admin, #5) approved" and row.reviewer == "Dana and Ada"
    text = to_csv(rows=await list_decisions(engine=service.engines.async_, viewer=LEE))
    assert "'=cmd|" in text and ",=cmd" not in text
