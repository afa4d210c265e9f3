"""MCP servers as the agent's tools, against real servers started on loopback (stdio and Streamable
HTTP) and the real agent on SQLite and PostgreSQL: a trusted read-only call runs with no card, a
write pauses, is edited through its inputSchema and runs with the edited arguments, a reject
reaches the model, an untrusted server's read-only hint gets a card; failures stay plain."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator

import pytest
from langgraph.types import Command

from hitl_app.agent.mcp.client import McpServers, connect_servers
from hitl_app.agent.mcp.config import McpServer
from hitl_app.agent.mcp.policy import mcp_rules
from hitl_app.agent.policy import DEFAULT_POLICY
from hitl_app.agent_loader import validators_for
from hitl_app.review.validate import ArgsError
from tests.helpers.mcp_servers import FAULTY, NOTES, http_server, stdio_server
from tests.helpers.pairing import assert_pairing
from tests.integration.conftest import drive


@contextlib.contextmanager
def notes_server(transport: str, tmp_path) -> Iterator[McpServer]:
    env = {"NOTES_FILE": str(tmp_path / "notes.json")}
    if transport == "stdio":
        yield stdio_server("notes", NOTES, **env)
    else:
        with http_server("notes", NOTES, **env) as server:
            yield server


_OPEN: list[McpServers] = []


@pytest.fixture(autouse=True)
async def _close_servers():
    """Every test's MCP sessions end with it (stdio: its processes), as they do with the app."""
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


async def agent_with(make_agent, servers: list[McpServer], *, server_tables=None, tool_tables=None, timeout_s=60.0,
                     max_chars=65_536) -> tuple[object, McpServers, dict]:
    mcp = await connect_servers(servers, timeout_s=timeout_s, max_result_chars=max_chars)
    _OPEN.append(mcp)
    rules, _origins = mcp_rules(mcp.infos, server_tables=server_tables or {}, tool_tables=tool_tables or {})
    bundle = make_agent(policy_rules=[*DEFAULT_POLICY, *rules], extra_tools=mcp.tools)
    return bundle.graph, mcp, validators_for(bundle.tools_by_name)


def config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4()), "owner": "1"}}


def say(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_read_only_runs_write_is_edited_through_the_schema(make_agent, tmp_path, transport):
    with notes_server(transport, tmp_path) as server:
        graph, mcp, validators = await agent_with(make_agent, [server], server_tables={"notes": {"trusted": True}})
        assert mcp.statuses["notes"].connected
        cfg = config()

        first = await drive(graph, say('call notes__add_note {"title": "milk", "text": "buy milk"}'), cfg)
        [intr] = first.interrupts
        [request] = intr.value["action_requests"]
        assert request["name"] == "notes__add_note" and request["description"] == "Add a note (MCP server notes)"
        assert intr.value["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
        assert not (tmp_path / "notes.json").exists()  # nothing ran before the decision
        # an edit the server would refuse is refused on the card first (the tool's own inputSchema)
        with pytest.raises(ArgsError, match="field `title` must be string"):
            validators["notes__add_note"]({"title": 5})
        with pytest.raises(ArgsError, match="unknown field `colour`"):
            validators["notes__add_note"]({"title": "eggs", "colour": "red"})
        edited = {"title": "eggs", "text": "buy eggs", "tags": ["food"]}
        validators["notes__add_note"](edited)
        done = await drive(graph, Command(resume={"decisions": [
            {"type": "edit", "edited_action": {"name": "notes__add_note", "args": edited}}]}), cfg)
        assert "Added the note 'eggs'" in done.texts[-1]

        # the trusted server's read-only search runs with no card, and sees the edited note only
        found = await drive(graph, say('call notes__search_notes {"query": ""}'), cfg)
        assert found.interrupts == []
        assert "eggs: buy eggs" in found.texts[-1] and "milk" not in found.texts[-1]
        assert_pairing((await graph.aget_state(cfg)).values["messages"])


async def test_a_reject_reaches_the_model_and_nothing_runs(make_agent, tmp_path):
    server = stdio_server("notes", NOTES, NOTES_FILE=str(tmp_path / "notes.json"))
    (tmp_path / "notes.json").write_text('[{"title": "keep", "text": "me", "tags": []}]', encoding="utf-8")
    graph, _mcp, _ = await agent_with(make_agent, [server])
    cfg = config()
    first = await drive(graph, say('call notes__delete_note {"title": "keep"}'), cfg)
    assert first.interrupts
    done = await drive(graph, Command(resume={"decisions": [{"type": "reject", "message": "we still need it"}]}), cfg)
    assert "rejected it (reason: we still need it)" in done.texts[-1]
    assert '"keep"' in (tmp_path / "notes.json").read_text(encoding="utf-8")
    state = await graph.aget_state(cfg)
    tool_message = [m for m in state.values["messages"] if m.type == "tool"][-1]
    assert "we still need it" in tool_message.text  # the model reads the reason
    assert_pairing(state.values["messages"])


async def test_an_untrusted_servers_read_only_hint_never_skips_a_card(make_agent, tmp_path):
    with http_server("faulty", FAULTY) as faulty:
        graph, mcp, _ = await agent_with(make_agent, [faulty], server_tables={"notes": {}})
        cfg = config()
        first = await drive(graph, say("call faulty__wipe"), cfg)
        [intr] = first.interrupts  # readOnlyHint: true, but the server is not marked trusted
        assert intr.value["action_requests"][0]["description"] == "Wipe everything (MCP server faulty)"
        done = await drive(graph, Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), cfg)
        assert "did not happen" in done.texts[-1]
        assert "faulty__ok" in mcp.statuses["faulty"].tools


@pytest.mark.slow
async def test_failures_are_plain_tool_errors_and_the_thread_goes_on(make_agent, tmp_path):
    trusted = {"faulty": {"trusted": True}, "notes": {"trusted": True}}
    broken = stdio_server("broken", FAULTY, FAULTY_FAIL_START="1")
    notes = stdio_server("notes", NOTES, NOTES_FILE=str(tmp_path / "notes.json"))
    faulty = stdio_server("faulty", FAULTY)
    graph, mcp, _ = await agent_with(make_agent, [broken, faulty, notes], server_tables=trusted, timeout_s=20,
                                     max_chars=2_000)
    # a server that does not start is reported; the others are used
    assert not mcp.statuses["broken"].connected
    assert mcp.statuses["broken"].error == ("the process exited during start-up (it closed its output); its last "
                                            "stderr line: cannot start: FAULTY_FAIL_START is set")
    assert mcp.statuses["faulty"].connected and mcp.statuses["notes"].connected
    cfg = config()

    hung = await drive(graph, say("call faulty__hang"), cfg)
    assert "faulty__hang failed: MCP server faulty did not answer within 20 s" in hung.texts[-1]
    assert "did not answer within 20 s" in mcp.statuses["faulty"].error

    crashed = await drive(graph, say("call faulty__crash"), cfg)
    assert ("faulty__crash failed: MCP server faulty failed during the call: its process exited or closed its "
            "output. The call may or may not have done its work; the server is started afresh for the next call"
            in crashed.texts[-1])

    # the next call starts the server afresh; the other server never noticed
    again = await drive(graph, say("call faulty__ok"), cfg)
    assert "Ran faulty__ok: pong" in again.texts[-1]
    assert mcp.statuses["faulty"].error == ""
    notes_ok = await drive(graph, say("call notes__search_notes"), cfg)
    assert "There are no notes yet" in notes_ok.texts[-1]

    big = await drive(graph, say('call faulty__big {"chars": 50000}'), cfg)
    state = await graph.aget_state(cfg)
    tool_message = [m for m in state.values["messages"] if m.type == "tool"][-1]
    assert len(tool_message.text) < 2_200 and "[cut: the result was 50,000 characters" in tool_message.text
    assert big.texts[-1].startswith("Ran faulty__big")
    assert_pairing(state.values["messages"])


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_servers_question_is_answered_from_a_card(make_agent, tmp_path, transport):
    (tmp_path / "notes.json").write_text('[{"title": "a", "text": "", "tags": []}, {"title": "b", "text": "", "tags": []}]',
                                         encoding="utf-8")
    with notes_server(transport, tmp_path) as server:
        graph, _mcp, validators = await agent_with(make_agent, [server], server_tables={"notes": {"trusted": True}})
        cfg = config()
        first = await drive(graph, say("call notes__clear_notes"), cfg)
        [intr] = first.interrupts  # destructive: the call itself asks first
        assert intr.value["action_requests"][0]["name"] == "notes__clear_notes"
        asked = await drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), cfg)
        [question] = asked.interrupts  # then the server asks its question: a card with its form
        [request] = question.value["action_requests"]
        assert request["name"] == "notes__clear_notes:question"
        assert request["description"] == "notes asks: Delete all 2 notes?"
        assert request["args"] == {"confirm": False, "reason": ""}
        assert request["args_schema"]["properties"]["confirm"]["type"] == "boolean"
        assert question.value["review_configs"][0]["allowed_decisions"] == ["edit", "reject"]
        assert len(json.loads((tmp_path / "notes.json").read_text(encoding="utf-8"))) == 2  # nothing deleted yet

        # the card's answer is checked with the requested schema
        from hitl_app.review.types import ActionRequest, PendingReview
        from hitl_app.review.validate import ReviewError, validate_edit_args

        review = PendingReview(thread_id="t", interrupt_id=question.id, action_requests=(ActionRequest(**request),),
                               review_configs=())
        with pytest.raises(ReviewError, match="field `confirm` must be boolean"):
            validate_edit_args(review, 0, {"confirm": "yes", "reason": ""}, validators)

        done = await drive(graph, Command(resume={question.id: {"decisions": [{"type": "edit", "edited_action": {
            "name": "notes__clear_notes:question", "args": {"confirm": True, "reason": "spring cleaning"}}}]}}), cfg)
        assert "Deleted 2 notes. Reason: spring cleaning" in done.texts[-1]
        assert json.loads((tmp_path / "notes.json").read_text(encoding="utf-8")) == []
        assert_pairing((await graph.aget_state(cfg)).values["messages"])

        # declined: the server goes on with "decline"
        await drive(graph, say("call notes__clear_notes"), cfg)
        asked = await drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), cfg)
        done = await drive(graph, Command(resume={asked.interrupts[0].id: {"decisions": [
            {"type": "reject", "message": "no"}]}}), cfg)
        assert "Nothing deleted: the user chose decline" in done.texts[-1]

        # cancelled (the card's Cancel: a reject with cancel): the server hears exactly "cancel"
        from hitl_app.review.types import RejectDecision, resume_value

        await drive(graph, say("call notes__clear_notes"), cfg)
        asked = await drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), cfg)
        done = await drive(graph, Command(resume={asked.interrupts[0].id: resume_value([
            RejectDecision(type="reject", cancel=True)])}), cfg)
        assert "Nothing deleted: the user chose cancel" in done.texts[-1]
        assert_pairing((await graph.aget_state(cfg)).values["messages"])


async def test_reject_and_stop_ends_the_run_and_the_next_turn_works(make_agent, tmp_path):
    from hitl_app.review.types import RejectDecision, resume_value

    server = stdio_server("notes", NOTES, NOTES_FILE=str(tmp_path / "notes.json"))
    graph, _mcp, _ = await agent_with(make_agent, [server])
    cfg = config()
    first = await drive(graph, say('call notes__add_note {"title": "x"} and call notes__add_note {"title": "y"}'), cfg)
    assert len(first.interrupts[0].value["action_requests"]) == 2
    done = await drive(graph, Command(resume=resume_value([
        RejectDecision(type="reject", message="wrong list", stop=True), RejectDecision(type="reject")])), cfg)
    assert done.texts[-1].startswith("Stopped: the reviewer rejected notes__add_note and stopped the run")
    state = await graph.aget_state(cfg)
    tool_messages = [m for m in state.values["messages"] if m.type == "tool"]
    assert "wrong list. The reviewer stopped the run" in tool_messages[0].text
    assert not (tmp_path / "notes.json").exists()
    assert_pairing(state.values["messages"])
    again = await drive(graph, say("call notes__search_notes"), cfg)
    assert again.interrupts  # the next turn works (an untrusted server's read-only tool still asks)
