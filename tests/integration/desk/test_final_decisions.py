"""One door for the final decisions of a review (F1), on SQLite and PostgreSQL, through the real runtime.

Every path that resumes a run builds the decisions from the drafts and the rights as they are at
that moment: an approval whose reviewer was disabled or demoted, a grant revoked, or a grant whose
maker can no longer approve alone counts for nothing, and the thread says why.

- The deadline: a reviewer approves the payment card, is disabled, the owner answers the other card;
  when the deadline passes the payment is rejected by the policy (it used to be paid).
- The undo window: the submitter is disabled inside the window; when it ends the run does not go on,
  the review is answerable again and its card says why.
- Grants: a card a grant pre-approved stops counting once the grant is revoked, or once its maker
  could no longer approve alone (with a developer's agent the rights are the owner's alone, so the
  maker is the owner, and what takes their standing away is a disabled account).
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import Session, select

from hitl_app import auth
from hitl_app.auth import SYSTEM, Principal, Role
from hitl_app.review import ReviewError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.accounts import Account
from hitl_app.store.desk_tables import GrantRecord, ReviewEvent
from hitl_app.store.tables import AuditRecord, utcnow
from hitl_app.threads.service import ThreadService
from tests.fixtures.grants_agent import effects

APPROVE = {"type": "approve"}

PAY_WITH_DEADLINE = """
[tools.transfer_funds]
allowed_decisions = ["approve", "reject"]
description = "Pay {amount} to {to}"
reviewers = ["reviewer"]
deadline = "2s"
on_timeout = "reject"

[tools.ask_user]
allowed_decisions = ["respond"]
description = "Question for you: {question}"

[tools.slow_task]
allowed_decisions = ["approve", "reject"]
description = "Wait {seconds} seconds"
undo_seconds = 2
reviewers = ["owner", "reviewer"]
"""



@contextlib.asynccontextmanager
async def runtime_with(tmp_path: Path, database_url: str, policy: str = "", agent: str = ""):
    """A runtime under ``policy`` (or a developer's ``agent``) with accounts Mo (member) and Rex
    (reviewer); yields (service, people)."""
    extra = {"HITL_AGENT": agent} if agent else {}
    if policy:
        (tmp_path / "policy.toml").write_text(policy)
        extra["HITL_POLICY"] = str(tmp_path / "policy.toml")
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url, HITL_SWEEP_SECONDS=60, **extra)
    async with open_runtime(settings) as rt:
        people = {}
        for name, role in (("Mo", Role.MEMBER), ("Rex", Role.REVIEWER)):
            people[name] = await auth.add_account(
                engine=rt.engines.async_, email=f"{name.lower()}@example.com", display_name=name, role=role,
                password="correct horse battery", by=SYSTEM,
            )
        yield rt.service, people


async def ask(svc: ThreadService, who: Principal, text: str, t: str | None = None):
    t = t or str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(who.account_id))
    await svc.wait(t)
    return t, await svc.load(t, viewer=who)


def set_account(svc: ThreadService, who: Principal, *, role: str | None = None, disabled: bool = False) -> None:
    values = {"disabled": disabled} | ({"role": role} if role else {})
    with Session(svc.engines.sync) as s:
        s.exec(update(Account).where(Account.id == who.account_id).values(**values))
        s.commit()


def audit(svc: ThreadService, t: str) -> list[AuditRecord]:
    with Session(svc.engines.sync) as s:
        return sorted(s.exec(select(AuditRecord).where(AuditRecord.thread_id == t)).all(), key=lambda r: r.action_index)


def events(svc: ThreadService, t: str) -> list[ReviewEvent]:
    with Session(svc.engines.sync) as s:
        return list(s.exec(select(ReviewEvent).where(ReviewEvent.thread_id == t)).all())


def outcomes(view) -> list[tuple[str, str]]:
    return [(m.tool_name, m.outcome) for m in view.messages if m.role == "tool"]


async def test_a_disabled_reviewers_approval_is_not_paid_when_the_deadline_passes(tmp_path, database_url):
    """The F1 repro: Rex approves the payment card only, is disabled, Mo answers the question and
    submits; when the deadline passes the payment must not run, and the thread and audit say why."""
    async with runtime_with(tmp_path, database_url, PAY_WITH_DEADLINE) as (svc, p):
        mo, rex = p["Mo"], p["Rex"]
        t, view = await ask(svc, mo, "pay 500 to Bob; ask me why")
        assert [a.name for a in view.pending.action_requests] == ["transfer_funds", "ask_user"]
        iid = view.pending.interrupt_id
        assert await svc.submit_review(t, iid, [APPROVE, None], person=rex) is None
        set_account(svc, rex, disabled=True)
        assert await svc.submit_review(t, iid, [None, {"type": "respond", "message": "rent"}], person=mo) is None
        card = (await svc.load(t, viewer=mo)).cards[0]
        assert "Rex's approval no longer counts: their account is disabled" in card.progress and not card.complete
        due = (await svc.load(t, viewer=mo)).desk.deadline_at
        assert await svc.sweeper().sweep(due + timedelta(seconds=1)) == 1
        await svc.wait(t)
        done = await svc.load(t, viewer=mo)
        assert done.pending is None
        assert sorted(outcomes(done)) == [("ask_user", "answered"), ("transfer_funds", "rejected")]
        told = next(m.text for m in done.messages if m.role == "tool" and m.tool_name == "transfer_funds")
        assert "Rex's approval no longer counts: their account is disabled" in told, "the tool row says why"
        pay, answer = audit(svc, t)
        assert (pay.decision_type, pay.via, pay.reviewer) == ("reject", "deadline", "policy"), "the payment must not run"
        assert "Rex's approval no longer counts: their account is disabled" in pay.message
        assert (answer.decision_type, answer.reviewer) == ("respond", "Mo")


async def test_the_undo_window_ends_without_running_an_approval_whose_submitter_was_disabled(tmp_path, database_url):
    async with runtime_with(tmp_path, database_url, PAY_WITH_DEADLINE) as (svc, p):
        mo, rex = p["Mo"], p["Rex"]
        t, view = await ask(svc, mo, "wait 0 seconds")
        iid = view.pending.interrupt_id
        assert await svc.submit_review(t, iid, [APPROVE], person=rex) is None, "the run waits out the undo window"
        set_account(svc, rex, disabled=True)
        assert await svc.sweeper().sweep(utcnow() + timedelta(seconds=3)) == 1
        await svc.wait(t)
        after = await svc.load(t, viewer=mo)
        assert after.pending is not None and after.pending.interrupt_id == iid, "the run must not go on"
        assert outcomes(after) == []
        [card] = after.cards
        assert not card.complete and "Rex's approval no longer counts: their account is disabled" in card.progress
        assert audit(svc, t) == [], "the claim is released: the review is answerable again"
        assert [e.kind for e in events(svc, t)][-1] == "failed"
        assert "no longer counts" in events(svc, t)[-1].note
        # Mo (the owner) may decide it now; it runs once
        assert await svc.submit_review(t, iid, [APPROVE], person=mo) is None
        assert await svc.sweeper().sweep(utcnow() + timedelta(seconds=3)) == 1
        await svc.wait(t)
        assert outcomes(await svc.load(t, viewer=mo)) == [("slow_task", "executed")]


GRANTS_AGENT = "tests.fixtures.grants_agent:make_agent"


async def partly_granted(svc: ThreadService, mo: Principal, tmp_path: Path):
    """Mo approves a refund with a thread grant; the next review's refund card is pre-approved by
    it and its close card waits. Returns (thread, interrupt id)."""
    t, view = await ask(svc, mo, "refund A-1 5")
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=mo, grants=[{"scope": "thread", "hours": 1}])
    await svc.wait(t)
    _, view = await ask(svc, mo, "refund A-2 1; close T-1", t)
    granted, waiting = view.cards
    assert granted.complete and granted.progress.startswith("Approved by grant") and not waiting.complete
    assert len(effects(tmp_path)) == 1
    return t, view.pending.interrupt_id


async def test_a_card_a_revoked_grant_approved_no_longer_counts(tmp_path, database_url, monkeypatch):
    monkeypatch.setenv("HITL_DATA_DIR", str(tmp_path))
    async with runtime_with(tmp_path, database_url, agent=GRANTS_AGENT) as (svc, p):
        mo = p["Mo"]
        t, iid = await partly_granted(svc, mo, tmp_path)
        with Session(svc.engines.sync) as s:
            [grant] = s.exec(select(GrantRecord)).all()
        await svc.grants.revoke(grant.id, mo)
        with pytest.raises(ReviewError) as info:  # the refund card is open again: Mo's to decide
            await svc.submit_review(t, iid, [None, APPROVE], person=mo)
        assert info.value.code == "count" and "card 1 (refund_payment) has no decision yet" in info.value.message
        refund = (await svc.load(t, viewer=mo)).cards[0]
        assert not refund.complete and "no longer counts: the grant was revoked" in refund.progress, refund.progress
        assert len(effects(tmp_path)) == 1, "nothing ran"
        assert await svc.submit_review(t, iid, [APPROVE, APPROVE], person=mo) is not None
        await svc.wait(t)
        assert sorted(e["tool"] for e in effects(tmp_path)) == ["close_ticket", "refund_payment", "refund_payment"]


async def test_a_card_a_grant_approved_no_longer_counts_once_its_maker_may_not_approve(tmp_path, database_url, monkeypatch):
    monkeypatch.setenv("HITL_DATA_DIR", str(tmp_path))
    async with runtime_with(tmp_path, database_url, agent=GRANTS_AGENT) as (svc, p):
        mo = p["Mo"]
        t, iid = await partly_granted(svc, mo, tmp_path)
        set_account(svc, mo, disabled=True)
        with pytest.raises(ReviewError) as info:  # the refund card is open again
            await svc.submit_review(t, iid, [None, APPROVE], person=mo)
        assert info.value.code == "count" and "card 1 (refund_payment) has no decision yet" in info.value.message
        refund = (await svc.load(t, viewer=mo)).cards[0]
        assert not refund.complete and "no longer counts: Mo's account is disabled" in refund.progress, refund.progress
        assert len(effects(tmp_path)) == 1, "nothing ran"
        set_account(svc, mo, disabled=False)  # the maker may approve again: the grant's approval counts again
        assert (await svc.load(t, viewer=mo)).cards[0].complete


async def test_a_released_review_that_counts_again_goes_on_once_when_next_loaded(tmp_path, database_url):
    """QA: the undo window ends while Rex is disabled (nothing runs, the claim is released, his
    approval kept); once Rex is enabled again his approval counts and every card is complete, so
    the run must go on (it used to wait forever: no claim, no button), exactly once."""
    async with runtime_with(tmp_path, database_url, PAY_WITH_DEADLINE) as (svc, p):
        mo, rex = p["Mo"], p["Rex"]
        t, view = await ask(svc, mo, "wait 0 seconds")
        iid = view.pending.interrupt_id
        assert await svc.submit_review(t, iid, [APPROVE], person=rex) is None
        set_account(svc, rex, disabled=True)
        assert await svc.sweeper().sweep(utcnow() + timedelta(seconds=3)) == 1
        await svc.wait(t)
        assert (await svc.load(t, viewer=mo)).pending is not None, "nothing ran while Rex did not count"
        set_account(svc, rex, disabled=False)
        await svc.load(t, viewer=mo)  # noticed: every card is complete and nothing holds the review
        await svc.wait(t)
        await svc.load(t, viewer=mo)
        await svc.wait(t)
        after = await svc.load(t, viewer=mo)
        assert after.pending is None and outcomes(after) == [("slow_task", "executed")], "it went on, once"
        [row] = audit(svc, t)
        assert (row.decision_type, row.reviewer) == ("approve", "Rex")
        summary = next(s for s in await svc.list_threads(owner=str(mo.account_id)) if s.thread_id == t)
        assert not summary.pending_review, "the sidebar no longer says review"


PAY_NO_DEADLINE = PAY_WITH_DEADLINE.replace('deadline = "2s"\non_timeout = "reject"\n', "")


async def test_a_submission_that_waited_on_a_disabled_reviewer_goes_on_once_they_count_again(tmp_path, database_url):
    """The Submit path: Rex approves the payment card, is disabled, Mo answers the question (nothing
    runs: Rex's approval does not count); Rex is enabled again, every card is complete, and the run
    goes on when the thread is next loaded: paid once."""
    async with runtime_with(tmp_path, database_url, PAY_NO_DEADLINE) as (svc, p):
        mo, rex = p["Mo"], p["Rex"]
        t, view = await ask(svc, mo, "pay 500 to Bob; ask me why")
        iid = view.pending.interrupt_id
        assert await svc.submit_review(t, iid, [APPROVE, None], person=rex) is None
        set_account(svc, rex, disabled=True)
        assert await svc.submit_review(t, iid, [None, {"type": "respond", "message": "rent"}], person=mo) is None
        set_account(svc, rex, disabled=False)
        await svc.load(t, viewer=rex)
        await svc.wait(t)
        await svc.load(t, viewer=mo)
        await svc.wait(t)
        done = await svc.load(t, viewer=mo)
        assert done.pending is None
        assert sorted(outcomes(done)) == [("ask_user", "answered"), ("transfer_funds", "executed")]
        assert [(r.decision_type, r.reviewer) for r in audit(svc, t)] == [("approve", "Rex"), ("respond", "Mo")]
