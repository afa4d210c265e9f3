"""MCP tools through the whole app (``open_runtime`` with ``HITL_MCP`` and ``HITL_POLICY``), on SQLite
and PostgreSQL, against real MCP servers on loopback: a two-person rule and a grant from the policy
file's MCP tables, the card's server and hints, and pairing after Stop during an MCP call."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

from hitl_app.auth.types import Principal, Role
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.threads.service import ThreadService
from tests.helpers.mcp_servers import FAULTY, NOTES
from tests.helpers.pairing import assert_pairing

MIA = Principal(1, "Mia", Role.MEMBER, "mia@example.com")
DANA = Principal(3, "Dana", Role.REVIEWER, "dana@example.com")
RAY = Principal(4, "Ray", Role.REVIEWER, "ray@example.com")
APPROVE = {"type": "approve"}
POLICY = """
[servers.notes]
trusted = true

[servers.faulty]
trusted = true

[tools.notes__delete_note]
allowed_decisions = ["approve", "reject"]
reviewers = ["reviewer"]
approvals = 2
"""


def settings(tmp_path, database_url) -> Settings:
    import sys

    mcp = {"mcpServers": {
        "notes": {"command": sys.executable, "args": [str(NOTES)], "env": {"NOTES_FILE": str(tmp_path / "notes.json")}},
        "faulty": {"command": sys.executable, "args": [str(FAULTY)], "env": {"FAULTY_MARK": str(tmp_path / "hang.started")}},
    }}
    (tmp_path / "mcp.json").write_text(json.dumps(mcp), encoding="utf-8")
    (tmp_path / "policy.toml").write_text(POLICY, encoding="utf-8")
    return Settings(HITL_DATA_DIR=tmp_path / "data", HITL_DEMO_WPS=0, DATABASE_URL=database_url,
                    HITL_MCP=str(tmp_path / "mcp.json"), HITL_POLICY=str(tmp_path / "policy.toml"))


async def ask(svc: ThreadService, text: str, thread: str | None = None):
    t = thread or str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(MIA.account_id))
    await svc.wait(t, timeout=60)
    return t, await svc.load(t, viewer=MIA)


def notes(tmp_path) -> list[str]:
    path = tmp_path / "notes.json"
    return [n["title"] for n in json.loads(path.read_text(encoding="utf-8"))] if path.exists() else []


async def test_two_person_rule_and_grant_on_mcp_tools(tmp_path, database_url):
    async with open_runtime(settings(tmp_path, database_url)) as rt:
        svc = rt.service
        assert rt.mcp.statuses["notes"].connected and rt.origins["notes__delete_note"].server == "notes"
        # a grant beside an approval covers the next add_note in this thread: no second card
        t, view = await ask(svc, 'call notes__add_note {"title": "a"}')
        [action] = view.pending.action_requests
        assert action.name == "notes__add_note"
        await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=MIA,
                                grants=[{"scope": "thread", "hours": 1}])
        await svc.wait(t, timeout=60)
        _, view = await ask(svc, 'call notes__add_note {"title": "b"}', t)
        assert view.pending is None and notes(tmp_path) == ["a", "b"]

        # the policy's two-person rule on an MCP tool: a member cannot, one reviewer is not enough
        t, view = await ask(svc, 'call notes__delete_note {"title": "a"}')
        iid = view.pending.interrupt_id
        assert await svc.submit_review(t, iid, [APPROVE], person=DANA) is None
        assert notes(tmp_path) == ["a", "b"]
        assert await svc.submit_review(t, iid, [APPROVE], person=RAY)
        await svc.wait(t, timeout=60)
        assert notes(tmp_path) == ["b"]
        view = await svc.load(t, viewer=MIA)
        assert "Deleted the note 'a'" in view.messages[-1].text
        assert_pairing([m for m in (await svc.graph.aget_state({"configurable": {"thread_id": t}})).values["messages"]])


async def test_stop_during_an_mcp_call_keeps_pairing_and_the_thread_goes_on(tmp_path, database_url):
    async with open_runtime(settings(tmp_path, database_url)) as rt:
        svc = rt.service
        t = str(uuid.uuid4())
        await svc.start_turn(t, "call faulty__hang", owner=str(MIA.account_id))
        deadline = time.monotonic() + 60
        while not (tmp_path / "hang.started").exists():
            assert time.monotonic() < deadline, "the MCP call never started"
            await asyncio.sleep(0.05)
        assert await svc.stop(t, owner=str(MIA.account_id))
        await svc.wait(t, timeout=60)
        _, view = await ask(svc, "call faulty__ok", t)
        assert "pong" in view.messages[-1].text
        state = await svc.graph.aget_state({"configurable": {"thread_id": t}})
        assert_pairing(state.values["messages"])
        [hung] = [m for m in state.values["messages"] if m.type == "tool" and m.name == "faulty__hang"]
        assert "Cancelled" in hung.text
