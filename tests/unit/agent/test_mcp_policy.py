"""MCP tools' review policy: annotations set the default, trust is opt-in per server, the policy
file's server and tool tables decide; names never clash; edits are checked with inputSchema."""

from __future__ import annotations

import pytest
from langchain_core.tools import StructuredTool

from hitl_app.agent.build import arg_names
from hitl_app.agent.mcp.client import McpServers, ServerStatus, cut_result, qualified_name
from hitl_app.agent.mcp.config import SERVER_NAME
from hitl_app.agent.mcp.policy import McpToolInfo, check_mcp_tables, mcp_rules
from hitl_app.agent.policy import PolicyError
from hitl_app.review.json_args import json_schema_args_validator
from hitl_app.review.tool_origin import hint_words
from hitl_app.review.validate import ArgsError, args_json_schema

SEARCH = McpToolInfo("notes__search", "notes", "search", "Search notes", {"readOnlyHint": True, "openWorldHint": False})
WRITE = McpToolInfo("notes__add", "notes", "add", "Add a note", {"readOnlyHint": False, "destructiveHint": False,
                                                                "openWorldHint": False})
DELETE = McpToolInfo("notes__delete", "notes", "delete", "Delete {x}", {"destructiveHint": True})
BARE = McpToolInfo("web__get", "web", "get", "get", {})


def asking(rules):
    return {r.tool: r for r in rules}


def test_untrusted_server_never_skips_a_card_on_its_word():
    rules, origins = mcp_rules([SEARCH, WRITE, DELETE, BARE], server_tables={}, tool_tables={})
    assert set(asking(rules)) == {"notes__search", "notes__add", "notes__delete", "web__get"}
    assert asking(rules)["notes__add"].allowed_decisions == ["approve", "edit", "reject"]
    assert asking(rules)["notes__add"].risk.level == ""
    assert asking(rules)["notes__delete"].risk.level == "high"
    assert asking(rules)["web__get"].risk.level == "high"  # the spec's default: not read-only is destructive
    assert origins["notes__search"].hints == ("read-only",) and not origins["notes__search"].trusted
    assert origins["web__get"].hints == ("destructive", "reaches outside")
    # braces in a title stay text: the description template fills to itself
    assert asking(rules)["notes__delete"].description.format() == "Delete {x} (MCP server notes)"


def test_trusted_read_only_runs_without_a_card_and_tables_override():
    rules, origins = mcp_rules(
        [SEARCH, WRITE, DELETE],
        server_tables={"notes": {"trusted": True, "reviewers": ["reviewer"], "deadline": "30m"}},
        tool_tables={"notes__delete": {"allowed_decisions": ["approve", "reject"], "approvals": 2},
                     "notes__add": {"review": False}},
    )
    by = asking(rules)
    assert set(by) == {"notes__delete"}  # search trusted read-only; add: the admin said no review
    assert by["notes__delete"].allowed_decisions == ["approve", "reject"]
    assert by["notes__delete"].rights.base.approvals == 2 and by["notes__delete"].desk.deadline_s == 1800
    assert origins["notes__search"].trusted


def test_review_true_forces_a_card_on_a_trusted_read_only_tool():
    rules, _ = mcp_rules([SEARCH], server_tables={"notes": {"trusted": True}}, tool_tables={"notes__search": {"review": True}})
    assert [r.tool for r in rules] == ["notes__search"]


@pytest.mark.parametrize(("servers", "tools", "words"), [
    ({"github": {}}, {}, ["[servers.github]", "no MCP server named 'github'"]),
    ({}, {"notes__nope": {}}, ["[tools.notes__nope]", "server 'notes' has no tool 'nope'"]),
    ({"notes": {"trusted": "yes"}}, {}, ["[servers.notes] trusted"]),
    ({"notes": {"deadline": "soon"}}, {}, ["[servers.notes]", "deadline"]),
    ({"notes": {"colour": 1}}, {}, ["[servers.notes]", "unknown key"]),
])
def test_policy_errors_name_the_server_and_tool(servers, tools, words):
    with pytest.raises(PolicyError) as err:
        check_mcp_tables(server_tables=servers, tool_tables=tools, configured=["notes"],
                         loaded={"notes": ["search"]}, source="team.toml")
    for word in words:
        assert word in str(err.value)


def test_a_bad_tool_key_names_server_and_tool():
    with pytest.raises(PolicyError, match=r"team.toml: \[tools.notes__add\] \(server notes, tool add\) allowed_decisions"):
        mcp_rules([WRITE], server_tables={}, tool_tables={"notes__add": {"allowed_decisions": ["maybe"]}}, source="team.toml")


def test_names_never_clash():
    assert qualified_name("github", "create issue/v2") == "github__create_issue_v2"
    # a server name has no "__", so <server>__<tool> splits one way only, and a built-in tool
    # (no "__") is never shadowed
    assert not SERVER_NAME.match("a__b") and SERVER_NAME.match("a_b") and SERVER_NAME.match("my-server")
    assert qualified_name("a", "b__c") != qualified_name("a_b", "_c")


def test_hint_words_follow_the_spec_defaults():
    assert hint_words({}) == ("destructive", "reaches outside")
    assert hint_words({"readOnlyHint": True, "destructiveHint": True, "openWorldHint": False}) == ("read-only",)
    assert hint_words({"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True}) == ("reaches outside",)


SCHEMA = {"type": "object", "required": ["title"], "properties": {
    "title": {"type": "string", "minLength": 1}, "tags": {"type": "array", "items": {"type": "string"}}}}


@pytest.mark.parametrize(("args", "message"), [
    ({"title": 5}, "field `title` must be string (got 5)"),
    ({}, "field `title` is required"),
    ({"title": "a", "colour": "red"}, "unknown field `colour` (this tool takes: tags, title)"),
    ({"title": "a", "tags": [1]}, "field `tags.0` must be string (got 1)"),
    ({"title": ""}, "field `title`:"),
])
def test_edits_are_checked_with_the_input_schema(args, message):
    check = json_schema_args_validator(SCHEMA)
    with pytest.raises(ArgsError) as err:
        check(args)
    assert str(err.value).startswith(message)
    check({"title": "milk", "tags": ["food"]})
    assert args_json_schema(check) == SCHEMA  # the card's form and editor use the same schema


def test_arg_names_of_an_mcp_tool():
    async def run(**_: object) -> str:
        return ""

    tool = StructuredTool(name="notes__add", description="d", args_schema=SCHEMA, coroutine=run)
    assert arg_names(tool) == {"title", "tags"}


def test_a_huge_result_is_cut_with_a_note():
    from mcp.types import CallToolResult, ImageContent, TextContent

    result = CallToolResult(content=[TextContent(type="text", text="x" * 5000),
                                     ImageContent(type="image", data="AAAA", mimeType="image/png")],
                            structuredContent={"result": "y" * 5000})
    cut = cut_result(result, 1000)
    [block] = cut.content
    assert block.text.startswith("x" * 1000) and "[cut: the result was 5,029 characters; the first 1,000 are shown]" in block.text
    assert cut.structuredContent is None and "structured content left out" in block.text


def test_loaded_lists_connected_servers():
    servers = McpServers(infos=[SEARCH], statuses={"notes": ServerStatus("notes", "stdio: x", connected=True),
                                                   "down": ServerStatus("down", "stdio: y")})
    assert servers.loaded() == {"notes": ["search"]}


def test_a_question_card_and_its_answers():
    from mcp.types import ElicitRequestFormParams

    from hitl_app.agent.mcp.elicit import answer_from, question_request

    params = ElicitRequestFormParams(message="Delete all 2 notes?", requestedSchema={
        "type": "object", "properties": {"confirm": {"type": "boolean"}, "reason": {"type": "string", "default": "n/a"},
                                         "count": {"type": "integer"}}, "required": ["confirm"]})
    value = question_request("notes", "clear_notes", params)
    [request] = value["action_requests"]
    assert request["name"] == "notes__clear_notes:question" and request["args"] == {"confirm": False, "reason": "n/a", "count": 0}
    assert value["review_configs"] == [{"action_name": "notes__clear_notes:question", "allowed_decisions": ["edit", "reject"]}]
    edit = {"decisions": [{"type": "edit", "edited_action": {"name": "x", "args": {"confirm": True}}}]}
    assert answer_from(edit).action == "accept" and answer_from(edit).content == {"confirm": True}
    assert answer_from({"decisions": [{"type": "reject", "message": "no"}]}).action == "decline"
    assert answer_from({"decisions": [{"type": "approve"}]}).action == "decline"  # a grant never answers a question
    assert answer_from("garbage").action == "decline"


def test_control_and_bidi_characters_are_shown_not_interpreted():
    from mcp.types import CallToolResult, TextContent

    raw = "ok\x1b[31mred\x1b[0m \u202eevil\u202c\nnext\tcol"
    [block] = cut_result(CallToolResult(content=[TextContent(type="text", text=raw)]), 1000).content
    assert block.text == "ok<U+001B>[31mred<U+001B>[0m <U+202E>evil<U+202C>\nnext\tcol"


def test_a_questions_three_answers_reach_the_server_as_the_spec_names_them():
    from hitl_app.agent.mcp.elicit import answer_from
    from hitl_app.review.types import EditDecision, EditedAction, RejectDecision, resume_value

    accept = resume_value([EditDecision(type="edit", edited_action=EditedAction(name="n__t:question",
                                                                                args={"confirm": True}))])
    assert answer_from(accept).model_dump(exclude_none=True) == {"action": "accept", "content": {"confirm": True}}
    assert answer_from(resume_value([RejectDecision(type="reject", message="no")])).action == "decline"
    assert answer_from(resume_value([RejectDecision(type="reject")])).action == "decline"
    assert answer_from(resume_value([RejectDecision(type="reject", cancel=True)])).action == "cancel"
    assert answer_from(resume_value([RejectDecision(type="reject", message="later", cancel=True)])).action == "cancel"
    assert answer_from(None).action == "decline"


def test_a_servers_question_takes_its_tools_deadline_is_never_granted_and_is_the_owners_to_answer():
    """Issue 20: an MCP server's question (elicitation) card has its tool's deadline, no grants,
    and the default rights (the thread's owner answers it), whatever the tool's own rights say."""
    from hitl_app.agent_loader import LoadedAgent
    from hitl_app.review.types import QUESTION_SUFFIX

    rules, origins = mcp_rules([WRITE], server_tables={"notes": {"reviewers": ["reviewer"], "deadline": "90s"}},
                               tool_tables={})
    question = WRITE.name + QUESTION_SUFFIX  # mcp_rules gives every tool a question origin
    agent = LoadedAgent(graph=None, validators={}, rules=rules, origins=origins)
    desk = agent.desks()[question]
    assert desk.deadline_s == 90 and desk.grantable is False
    assert agent.desks()[WRITE.name].grantable is True
    assert question not in agent.rights() and WRITE.name in agent.rights()  # the owner's: the default rights
