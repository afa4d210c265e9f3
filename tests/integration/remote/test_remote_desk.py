"""The review desk on a deployed agent (``open_runtime`` with ``HITL_AGENT_URL``, a real ``langgraph dev``):
a grant covers the deployment's next interrupt (approved at once, audited, run once); ``HITL_POLICY``
names the deployment's tools to add the app's rights (a member may not approve what needs a reviewer)
and deadlines (the sweeper rejects a card nobody decided and the server thread goes on)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from sqlmodel import Session, select

from hitl_app.auth.types import Principal, Role
from hitl_app.errors import ThreadError
from hitl_app.review import ReviewError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.desk_tables import GrantRecord
from hitl_app.store.tables import AuditRecord
from hitl_app.threads.service import ThreadService

MO = Principal(1, "Mo", Role.MEMBER, "mo@example.com")
RITA = Principal(2, "Rita", Role.REVIEWER, "rita@example.com")
APPROVE = {"type": "approve"}

POLICY = """
[tools.delete_file]
allowed_decisions = ["approve", "reject"]
description = "Delete the file {path}"
reviewers = ["reviewer"]
self_approval = false
"""


async def ask(svc: ThreadService, text: str, t: str | None = None):
    t = t or str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(MO.account_id))
    await svc.wait(t, 60)
    return t, await svc.load(t, viewer=MO)


def rows(svc: ThreadService, model, **where):
    with Session(svc.engines.sync) as s:
        stmt = select(model)
        for key, value in where.items():
            stmt = stmt.where(getattr(model, key) == value)
        return list(s.exec(stmt))


async def test_a_grant_covers_the_deployments_next_interrupt(deployment, tmp_path: Path):
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_AGENT_URL=deployment.url, HITL_SWEEP_SECONDS=60)
    async with open_runtime(settings) as rt:
        svc = rt.service
        t, view = await ask(svc, "delete granted-1.txt")
        assert view.desk.grant_scopes == [["call", "thread", "person"]]
        await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MO, grants=[{"scope": "thread", "hours": 24}])
        await svc.wait(t, 60)
        _, view = await ask(svc, "delete granted-2.txt", t)
        assert view.pending is None and view.status == "idle", "a call the grant covers must not wait for a person"
        assert [(m.tool_name, m.outcome) for m in view.messages if m.role == "tool"] == [("delete_file", "executed")] * 2
        [grant] = rows(svc, GrantRecord)
        [row] = rows(svc, AuditRecord, tool_call_id=view.messages[-2].tool_call_id)
        assert (row.via, row.reviewer, row.decision_type) == (f"grant:{grant.id}", "Mo", "approve")
    done = [a["path"] for a in deployment.actions() if a.get("path", "").startswith("granted-")]
    assert done == ["granted-1.txt", "granted-2.txt"]


async def test_a_policy_adds_the_apps_rights_to_the_deployments_tools(deployment, tmp_path: Path):
    policy = tmp_path / "team.toml"
    policy.write_text(POLICY)
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_AGENT_URL=deployment.url, HITL_POLICY=str(policy), HITL_SWEEP_SECONDS=60)
    async with open_runtime(settings) as rt:
        svc = rt.service
        t, view = await ask(svc, "delete team.txt")
        assert "approve" not in view.cards[0].allowed and "reviewer" in view.cards[0].note
        with pytest.raises((ReviewError, ThreadError)):
            await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MO)
        assert rows(svc, AuditRecord) == []
        rita_view = await svc.load(t, viewer=RITA)
        assert rita_view.cards[0].allowed == ["approve", "reject"]
        await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=RITA)
        await svc.wait(t, 60)
        assert (await svc.load(t, viewer=MO)).status == "idle"
        [row] = rows(svc, AuditRecord)
        assert (row.reviewer, row.decision_type) == ("Rita", "approve")
    assert [a for a in deployment.actions() if a.get("path") == "team.txt"] == [{"kind": "delete_file", "path": "team.txt"}]


DEADLINE_POLICY = """
[tools.delete_file]
allowed_decisions = ["approve", "reject"]
deadline = "2s"
on_timeout = "reject"
"""


async def test_a_deadline_rejects_the_deployments_card_and_the_server_thread_goes_on(deployment, tmp_path: Path):
    policy = tmp_path / "deadline.toml"
    policy.write_text(DEADLINE_POLICY)
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_AGENT_URL=deployment.url, HITL_POLICY=str(policy), HITL_SWEEP_SECONDS=0.5)
    async with open_runtime(settings) as rt:
        svc = rt.service
        t, view = await ask(svc, "delete deadline.txt")
        assert view.pending is not None
        for _ in range(600):  # the sweeper acts after the deadline (waited for, 60 s)
            view = await svc.load(t, viewer=MO)
            if view.status == "idle" and not await svc.is_running(t):
                break
            await asyncio.sleep(0.1)
        assert [(m.tool_name, m.outcome) for m in view.messages if m.role == "tool"] == [("delete_file", "rejected")]
        [row] = rows(svc, AuditRecord)
        assert row.decision_type == "reject"
    assert not [a for a in deployment.actions() if a.get("path") == "deadline.txt"]
