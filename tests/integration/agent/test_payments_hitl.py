"""The real demo agent under examples/policies/team.toml: a payment pauses for approve/reject and
runs exactly once when approved; the card's review rights come from the same policy."""

from __future__ import annotations

import uuid

from langchain.tools import ToolRuntime
from langgraph.types import Command

from hitl_app.agent.payments import payments
from hitl_app.agent.policy import load_policy_toml, rights_by_tool
from hitl_app.auth.types import Principal, Role
from hitl_app.review.rights import Card, check_decision, progress
from tests.helpers.paths import ROOT
from tests.integration.conftest import drive

TEAM = ROOT / "examples" / "policies" / "team.toml"


async def test_team_policy_pays_once_after_two_reviewers_approve(make_agent, workspace):
    rules = load_policy_toml(TEAM)
    graph = make_agent(policy_rules=rules).graph
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "owner": "1"}}

    first = await drive(graph, {"messages": [{"role": "user", "content": "pay 1500 to Bob"}]}, config)
    [intr] = first.interrupts
    assert intr.value["action_requests"] == [
        {"name": "transfer_funds", "args": {"amount": 1500, "to": "Bob"}, "description": "Pay 1500 to Bob"}
    ]
    assert intr.value["review_configs"] == [{"action_name": "transfer_funds", "allowed_decisions": ["approve", "reject"]}]
    assert payments(workspace.space("1").demo_db) == []  # nothing is paid before the decision

    # The review rights of this card, from the same policy: the member who asked cannot approve,
    # and it takes two reviewers.
    card = Card.for_request(intr.value["action_requests"][0], ["approve", "reject"], owner_id="1",
                            rights=rights_by_tool(rules)["transfer_funds"])
    mia, dana, ada = Principal(1, "Mia", Role.MEMBER), Principal(3, "Dana", Role.REVIEWER), Principal(5, "Ada", Role.ADMIN)
    assert check_decision(card, mia, "approve").message == "transfer_funds needs a reviewer; you are a member"
    card = card.with_decision(dana, "approve")
    assert progress(card).text == "1 of 2 approvals: Dana" and not progress(card).complete
    card = card.with_decision(ada, "approve")
    assert progress(card).complete

    done = await drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert done.interrupts == [] and done.texts == ["Paid 1500 to Bob."]
    [row] = payments(workspace.space("1").demo_db)
    assert (row.amount, row.recipient) == (1500.0, "Bob")

    # A replay of the same tool call (Stop and Continue, a crash and a resume) does not pay again.
    state = await graph.aget_state(config)
    call_id = next(m for m in state.values["messages"] if getattr(m, "tool_calls", None)).tool_calls[0]["id"]
    tool = make_agent(policy_rules=rules)  # a fresh build: nothing remembered in memory
    transfer = tool.tools_by_name["transfer_funds"]
    again = transfer.invoke({"type": "tool_call", "id": call_id, "name": "transfer_funds", "args": {
        "amount": 1500, "to": "Bob", "runtime": ToolRuntime(
            state={}, context=None, config=config, stream_writer=lambda _: None, tool_call_id=call_id, store=None)}})
    assert again.text == "Paid 1,500.00 to Bob."
    assert len(payments(workspace.space("1").demo_db)) == 1


async def test_team_policy_reject_pays_nothing(make_agent, workspace):
    graph = make_agent(policy_rules=load_policy_toml(TEAM)).graph
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "owner": "1"}}
    await drive(graph, {"messages": [{"role": "user", "content": "pay 20 to Bob"}]}, config)
    done = await drive(graph, Command(resume={"decisions": [{"type": "reject", "message": "no invoice"}]}), config)
    assert done.texts == ["The payment of 20 to Bob did not happen: the reviewer rejected it (reason: no invoice)."]
    assert payments(workspace.space("1").demo_db) == []
