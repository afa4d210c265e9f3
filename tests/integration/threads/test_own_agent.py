"""HITL_AGENT: a developer's agent (factory or compiled graph) on the app's checkpointer; HITL_POLICY."""

from __future__ import annotations

import json

import pytest

from hitl_app.desk.cards import BrowserPerson
from hitl_app.errors import StartupError
from hitl_app.review import ReviewError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings

OWNER = "b-1"
TID = "9a3e2f10-4c55-4b8e-9d61-2b7c3a1e5f00"


def settings_for(tmp_path, database_url, **env) -> Settings:
    return Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=database_url, **env)


@pytest.mark.parametrize(
    "spec",
    [
        "examples.support_agent.agent:make_agent",
        "tests.fixtures.agents:compiled_without_checkpointer",
        "tests.fixtures.agents:compiled_with_memory_saver",
    ],
)
async def test_own_agent_reviews_validates_edits_by_schema_and_runs_the_tool(tmp_path, database_url, monkeypatch, spec):
    monkeypatch.setenv("HITL_DATA_DIR", str(tmp_path))
    async with open_runtime(settings_for(tmp_path, database_url, HITL_AGENT=spec)) as rt:
        service = rt.service
        await service.start_turn(TID, "refund A-1001 12.50", owner=OWNER)
        await service.wait(TID)
        view = await service.load(TID, owner=OWNER)
        assert view.status == "review"
        [action] = view.pending.action_requests
        assert (action.name, action.args) == ("refund_payment", {"order_id": "A-1001", "amount": 12.5})
        assert action.description == "Refund 12.5 on order A-1001"
        assert view.pending.review_configs[0].allowed_decisions == ("approve", "edit", "reject")

        bad = [{"type": "edit", "edited_action": {"name": "refund_payment", "args": {"order_id": "A-1001", "amount": "a lot"}}}]
        with pytest.raises(ReviewError, match="amount"):
            await service.submit_review(TID, view.pending.interrupt_id, bad, person=BrowserPerson(OWNER, "ann"))

        good = [{"type": "edit", "edited_action": {"name": "refund_payment", "args": {"order_id": "A-1001", "amount": 10}}}]
        await service.submit_review(TID, view.pending.interrupt_id, good, person=BrowserPerson(OWNER, "ann"))
        await service.wait(TID)
        view = await service.load(TID, owner=OWNER)
        assert view.status == "idle"
        assert "Refunded 10.00 on order A-1001." in view.messages[-1].text
    # the checkpoint is in the app database, not in the graph's own saver: a new runtime sees it
    async with open_runtime(settings_for(tmp_path, database_url, HITL_AGENT=spec)) as rt:
        view = await rt.service.load(TID, owner=OWNER)
        assert "Refunded 10.00 on order A-1001." in view.messages[-1].text
    lines = [json.loads(line) for line in (tmp_path / "support_actions.jsonl").read_text().splitlines()]
    assert [(a["kind"], a["order_id"], a["amount"]) for a in lines] == [("refund", "A-1001", 10)]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("no_such_pkg.agent:make_agent", "module 'no_such_pkg' not found"),
        ("examples.support_agent.agent:nope", "has no attribute 'nope'"),
        ("tests.fixtures.agents:NOT_AN_AGENT", "is a int: expected a compiled graph"),
        ("tests.fixtures.agents:factory_returning_junk", "returned str, not a compiled graph"),
        ("tests.fixtures.agents:factory_that_raises", "the factory raised RuntimeError: no API key"),
        ("just_a_module", "must look like 'package.module:attribute'"),
    ],
)
async def test_bad_hitl_agent_stops_startup_in_one_line(tmp_path, database_url, spec, words):
    with pytest.raises(StartupError) as info:
        async with open_runtime(settings_for(tmp_path, database_url, HITL_AGENT=spec)):
            pass
    assert words in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith(f"HITL_AGENT={spec!r}")


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ("[tools.send_email]\nallowed_decisions = ['approve', 'maybe']\n", "unknown decision type 'maybe'"),
        ("[tools.send_email\n", "invalid TOML"),
        ("[tools.launch_rocket]\nallowed_decisions = ['approve']\n", "[tools.launch_rocket]: no such tool"),
        ("[tools.execute_sql]\nallowed_decisions = ['approve']\ncondition = 'on_tuesdays'\n", "unknown condition 'on_tuesdays'"),
    ],
)
async def test_bad_policy_file_stops_startup_with_the_reason(tmp_path, database_url, toml, words):
    path = tmp_path / "policy.toml"
    path.write_text(toml)
    with pytest.raises(StartupError) as info:
        async with open_runtime(settings_for(tmp_path, database_url, HITL_POLICY=str(path))):
            pass
    line = str(info.value)
    assert words in line and str(path) in line and "\n" not in line


async def test_custom_policy_file_changes_the_cards(tmp_path, database_url):
    path = tmp_path / "policy.toml"
    path.write_text(
        "[tools.send_email]\n"
        "allowed_decisions = ['approve', 'reject']\n"
        "description = 'Mail to {to}: {subject}'\n"
        "[tools.write_file]\n"
        "allowed_decisions = ['approve']\n"
        "condition = 'outside_drafts'\n"
    )
    async with open_runtime(settings_for(tmp_path, database_url, HITL_POLICY=str(path))) as rt:
        service = rt.service
        await service.start_turn(TID, "write drafts/a.txt: hello", owner=OWNER)
        await service.wait(TID)
        view = await service.load(TID, owner=OWNER)
        assert view.status == "idle", "a write inside drafts/ runs without a review under this policy"
        await service.start_turn(TID, "email bob@example.com about lunch: at noon", owner=OWNER)
        await service.wait(TID)
        view = await service.load(TID, owner=OWNER)
        assert view.pending.review_configs[0].allowed_decisions == ("approve", "reject")
        assert view.pending.action_requests[0].description == "Mail to bob@example.com: lunch"
