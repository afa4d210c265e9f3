"""The repeated-rejection guard, on messages built by the real HITL middleware."""

from __future__ import annotations

from langchain.agents.middleware.human_in_the_loop import _answer_message
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from hitl_app.agent.guards import RepeatedRejectionGuard, call_signature, rejected_in_turn
from hitl_app.review.tool_messages import GUARD_SOURCE, Stopped, read_tool_message


def call(path: str, call_id: str) -> dict:
    return {"name": "delete_file", "args": {"path": path}, "id": call_id, "type": "tool_call"}


def test_rejected_in_turn_counts_only_rejections_since_the_last_user_message():
    old, first, answered = call("a.txt", "c0"), call("a.txt", "c1"), call("b.txt", "c2")
    messages = [
        HumanMessage("delete a.txt"),
        AIMessage("", tool_calls=[old]),
        _answer_message(old, {"type": "reject"}),
        HumanMessage("delete a.txt and b.txt"),
        AIMessage("", tool_calls=[first, answered]),
        _answer_message(first, {"type": "reject", "message": "keep it"}),
        ToolMessage("Deleted b.txt.", tool_call_id="c2", name="delete_file"),
    ]
    assert rejected_in_turn(messages) == {call_signature(first)}
    assert rejected_in_turn(messages[:4]) == set()  # the new user message starts a new turn


def test_an_identical_proposal_after_a_rejection_ends_the_turn_with_paired_answers():
    first, again, other = call("a.txt", "c1"), call("a.txt", "c2"), call("b.txt", "c3")
    state = {
        "messages": [
            HumanMessage("delete a.txt"),
            AIMessage("", tool_calls=[first]),
            _answer_message(first, {"type": "reject"}),
            AIMessage("", tool_calls=[again, other]),
        ]
    }
    update = RepeatedRejectionGuard().after_model(state, None)
    assert update is not None and update["jump_to"] == "end"
    answers = update["messages"][:2]
    assert [m.tool_call_id for m in answers] == ["c2", "c3"]
    assert all(isinstance(read_tool_message(m), Stopped) and m.status == "error" for m in answers)
    assert answers[0].additional_kwargs["lc_source"] == GUARD_SOURCE
    assert "Do not retry it unless the user explicitly asks" in answers[0].text
    assert update["messages"][2].text.startswith("I stopped here")
    state["messages"][-1] = AIMessage("", tool_calls=[other])
    assert RepeatedRejectionGuard().after_model(state, None) is None  # a different call goes on to review
