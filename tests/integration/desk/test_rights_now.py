"""Rights that act later are checked against the call and the accounts as they are NOW, on SQLite
and PostgreSQL, through the real runtime (demo agent, grant gate, app database, accounts).

- A grant stands in for its maker only: it auto-approves a new call only when its maker could
  have approved THAT call alone (the rule its arguments choose, who may decide it, self-approval);
  a tool whose rights may need two approvals, or that is high risk, takes no grant at all.
- An approval counted toward a two-person rule is re-checked when the last one completes the card:
  a reviewer demoted (or disabled) in between no longer counts.
- A reviewer who decided (or was asked to decide) a card of a thread may keep reading it.
"""

from __future__ import annotations

import contextlib
import uuid
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
from hitl_app.store.desk_tables import GrantRecord
from hitl_app.store.tables import AuditRecord, utcnow
from hitl_app.threads.service import ThreadService
from tests.helpers.paths import ROOT

TEAM = ROOT / "examples" / "policies" / "team.toml"
APPROVE = [{"type": "approve"}]

# team.toml's transfer_funds as it was before grantable/risk were set: the server must hold anyway
PAY_TWO_PERSON = """
[tools.transfer_funds]
allowed_decisions = ["approve", "reject"]
description = "Pay {amount} to {to}"
reviewers = ["reviewer"]
self_approval = false

[[tools.transfer_funds.rules]]
when = "amount > 1000"
approvals = 2
"""

# one approval everywhere, but a big payment needs an admin
PAY_ADMIN_ABOVE = """
[tools.transfer_funds]
allowed_decisions = ["approve", "reject"]
description = "Pay {amount} to {to}"
reviewers = ["reviewer"]
self_approval = false

[[tools.transfer_funds.rules]]
when = "amount > 1000"
reviewers = ["admin"]
"""


@contextlib.asynccontextmanager
async def runtime_with(tmp_path: Path, database_url: str, policy: str | Path):
    """A runtime under ``policy`` (TOML text or a file) with accounts Mo (member), Rita
    (reviewer), Rex (reviewer) and Ada (admin); yields ``(service, people by name)``."""
    if isinstance(policy, str):
        path = tmp_path / "policy.toml"
        path.write_text(policy)
        policy = path
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url, HITL_POLICY=str(policy),
                        HITL_SWEEP_SECONDS=60)
    async with open_runtime(settings) as rt:
        people = {}
        for name, role in (("Mo", Role.MEMBER), ("Rita", Role.REVIEWER), ("Rex", Role.REVIEWER), ("Ada", Role.ADMIN)):
            people[name] = await auth.add_account(
                engine=rt.engines.async_, email=f"{name.lower()}@example.com", display_name=name, role=role,
                password="correct horse battery", by=SYSTEM,
            )
        yield rt.service, people


async def ask(svc: ThreadService, who: Principal, text: str, t: str | None = None):
    """``who`` sends ``text`` in thread ``t`` (new by default); returns (thread id, view after the run)."""
    t = t or str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(who.account_id))
    await svc.wait(t)
    return t, await svc.load(t, viewer=who)


def paid(svc: ThreadService, t: str) -> list[dict]:
    """The transfer_funds calls of ``t`` that ran (their audit rows), by grant or by a person."""
    with Session(svc.engines.sync) as s:
        rows = s.exec(select(AuditRecord).where(AuditRecord.thread_id == t, AuditRecord.tool_name == "transfer_funds"))
        return [r.args_executed for r in rows if r.decision_type == "approve"]


def set_role(svc: ThreadService, who: Principal, role: str, *, disabled: bool = False) -> None:
    with Session(svc.engines.sync) as s:
        s.exec(update(Account).where(Account.id == who.account_id).values(role=role, disabled=disabled))
        s.commit()


async def test_a_grant_on_a_small_payment_never_pays_a_big_one(tmp_path, database_url):
    """The QA report: Ada approves Mo's `pay 20` with "always allow in all of Mo's threads"; Mo's
    `pay 5000` (a two-person rule) must still get a card."""
    async with runtime_with(tmp_path, database_url, PAY_TWO_PERSON) as (svc, p):
        mo, ada = p["Mo"], p["Ada"]
        t, view = await ask(svc, mo, "pay 20 to Zed")
        assert view.pending is not None
        ada_view = await svc.load(t, viewer=ada)
        assert ada_view.desk.grant_scopes == [[]], "a tool that may need two approvals offers no grant"
        assert "may need 2 approvals" in ada_view.desk.grant_notes[0]
        with pytest.raises(ReviewError) as info:
            await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=ada,
                                    grants=[{"scope": "person", "hours": 1}])
        assert info.value.code == "not_grantable" and "may need 2 approvals" in info.value.message
        assert await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=ada) is not None
        await svc.wait(t)
        # a grant that exists anyway (made before this rule, or written by hand) stands in for Ada only
        with Session(svc.engines.sync) as s:
            now = utcnow()
            s.add(GrantRecord(scope="person", tool="transfer_funds", owner_id=str(mo.account_id), owner_name="Mo",
                              granted_by_id=str(ada.account_id), granted_by_name="Ada", granted_by_role="admin",
                              interrupt_id=view.pending.interrupt_id, created_at=now, expires_at=now.replace(year=now.year + 1)))
            s.commit()
        _, big = await ask(svc, mo, "pay 5000 to Mallory", t)
        assert big.pending is not None, "a 5000 payment needs two approvals: one person's grant must not pay it"
        assert paid(svc, t) == [{"amount": 20, "to": "Zed"}]


async def test_a_grant_covers_only_calls_its_maker_could_approve_alone(tmp_path, database_url):
    """Rita (reviewer) grants Mo's payments in this thread; a payment over 1000 needs an admin,
    so Rita's grant does not cover it; one under does; once Rita is demoted, nothing is covered."""
    async with runtime_with(tmp_path, database_url, PAY_ADMIN_ABOVE) as (svc, p):
        mo, rita = p["Mo"], p["Rita"]
        t, view = await ask(svc, mo, "pay 20 to Zed")
        rita_view = await svc.load(t, viewer=rita)
        assert rita_view.desk.grant_scopes == [["call", "thread"]]  # not "all of Mo's threads": not owner nor admin
        assert await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=rita,
                                       grants=[{"scope": "thread", "hours": 1}]) is not None
        await svc.wait(t)
        _, small = await ask(svc, mo, "pay 30 to Zed", t)
        assert small.pending is None, "a call Rita could approve alone runs by her grant"
        _, big = await ask(svc, mo, "pay 5000 to Mallory", t)
        assert big.pending is not None, "over 1000 needs an admin: Rita's grant must not stand in"
        assert await svc.submit_review(t, big.pending.interrupt_id, [{"type": "reject"}], person=mo) is not None  # withdrawn
        await svc.wait(t)
        set_role(svc, rita, "member")
        _, after = await ask(svc, mo, "pay 40 to Zed", t)
        assert after.pending is not None, "Rita is a member now: her grant approves nothing"
        assert paid(svc, t) == [{"amount": 20, "to": "Zed"}, {"amount": 30, "to": "Zed"}]


async def test_team_policy_payments_take_no_grant_and_are_high_risk(tmp_path, database_url):
    async with runtime_with(tmp_path, database_url, TEAM) as (svc, p):
        t, view = await ask(svc, p["Mo"], "pay 20 to Zed")
        ada_view = await svc.load(t, viewer=p["Ada"])
        assert ada_view.desk.grant_scopes == [[]] and "does not allow grants" in ada_view.desk.grant_notes[0]
        from hitl_app.runtime import get_runtime

        assert get_runtime().risks["transfer_funds"].high


@pytest.mark.parametrize("change", ["demoted", "disabled"])
async def test_an_approval_stops_counting_once_its_reviewer_is_demoted(tmp_path, database_url, change):
    """Rita approves 1 of 2; she is demoted (or disabled); Ada's approval must not complete the card."""
    async with runtime_with(tmp_path, database_url, TEAM) as (svc, p):
        mo, rita, rex, ada = p["Mo"], p["Rita"], p["Rex"], p["Ada"]
        t, view = await ask(svc, mo, "pay 1500 to Bob")
        iid = view.pending.interrupt_id
        assert await svc.submit_review(t, iid, APPROVE, person=rita) is None
        assert (await svc.load(t, viewer=mo)).cards[0].progress == "1 of 2 approvals: Rita"
        set_role(svc, rita, "member" if change == "demoted" else "reviewer", disabled=change == "disabled")
        assert await svc.submit_review(t, iid, APPROVE, person=ada) is None, "Rita no longer counts: still one to go"
        card = (await svc.load(t, viewer=ada)).cards[0]
        reason = "Rita is now a member" if change == "demoted" else "their account is disabled"
        assert card.progress == f"1 of 2 approvals: Ada (Rita's approval no longer counts: {reason})", card.progress
        assert not card.complete and paid(svc, t) == []
        # a second current reviewer completes it; the audit names the two who count
        assert await svc.submit_review(t, iid, APPROVE, person=rex) is not None
        await svc.wait(t)
        assert paid(svc, t) == [{"amount": 1500, "to": "Bob"}]
        with Session(svc.engines.sync) as s:
            [row] = s.exec(select(AuditRecord).where(AuditRecord.thread_id == t)).all()
        assert row.reviewer == "Ada and Rex"


async def test_a_reviewer_who_decided_or_was_asked_keeps_reading_the_thread(tmp_path, database_url):
    """After Rita decides Mo's card (nothing is pending for her any more) she, and Rex who was
    asked too, still read the thread read-only; a member never asked is refused."""
    async with runtime_with(tmp_path, database_url, TEAM) as (svc, p):
        mo, rita, rex = p["Mo"], p["Rita"], p["Rex"]
        lee = await auth.add_account(engine=svc.engines.async_, email="lee@example.com", display_name="Lee",
                                     role=Role.MEMBER, password="correct horse battery", by=SYSTEM)
        t, view = await ask(svc, mo, "pay 500 to Bob")
        assert await svc.submit_review(t, view.pending.interrupt_id, APPROVE, person=rita) is not None
        await svc.wait(t)
        for who in (rita, rex):
            seen = await svc.load(t, viewer=who)
            assert seen.read_only and seen.pending is None and seen.status == "idle", who.display_name
        from hitl_app.threads.service import ThreadError

        with pytest.raises(ThreadError) as info:
            await svc.load(t, viewer=lee)
        assert info.value.code == "forbidden"
