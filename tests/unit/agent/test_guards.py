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


def test_the_repeat_is_answered_with_the_reviewers_reason():
    first, again = call("a.txt", "c1"), call("a.txt", "c2")
    first["name"] = again["name"] = "notes__delete_note"  # an MCP tool is guarded like a built-in one
    state = {"messages": [HumanMessage("x"), AIMessage("", tool_calls=[first]),
                          _answer_message(first, {"type": "reject", "message": "we still  need it"}),
                          AIMessage("", tool_calls=[again])]}
    update = RepeatedRejectionGuard().after_model(state, None)
    assert update is not None
    assert "(the reviewer rejected this exact call: we still need it)" in update["messages"][0].text


def test_reject_and_stop_ends_the_run_and_reject_and_tell_goes_on():
    from hitl_app.agent.guards import RejectAndStop
    from hitl_app.review.types import STOP_NOTE, RejectDecision, resume_value

    first = call("a.txt", "c1")
    [stop] = resume_value([RejectDecision(type="reject", message="not now", stop=True)])["decisions"]
    assert stop == {"type": "reject", "message": f"not now. {STOP_NOTE}"}  # the middleware knows no "stop" key
    [tell] = resume_value([RejectDecision(type="reject", message="not now")])["decisions"]
    assert tell == {"type": "reject", "message": "not now"}

    stopped = _answer_message(first, stop)
    reading = read_tool_message(stopped)
    assert reading.stopped and reading.reason == "not now"
    state = {"messages": [HumanMessage("x"), AIMessage("", tool_calls=[first]), stopped]}
    update = RejectAndStop().before_model(state, None)
    assert update is not None and update["jump_to"] == "end"
    assert update["messages"][0].text.startswith("Stopped: the reviewer rejected delete_file and stopped the run")
    state["messages"][-1] = _answer_message(first, tell)
    assert not read_tool_message(state["messages"][-1]).stopped
    assert RejectAndStop().before_model(state, None) is None  # reject and tell: the model hears the reason


def test_on_reject_policy_key():
    import pytest

    from hitl_app.review.risk_policy import RiskPolicyError, parse_tool_risk

    assert parse_tool_risk({"on_reject": "stop"}).reject_stops
    assert not parse_tool_risk({}).reject_stops
    with pytest.raises(RiskPolicyError, match='on_reject: must be "tell" or "stop"'):
        parse_tool_risk({"on_reject": "halt"})
