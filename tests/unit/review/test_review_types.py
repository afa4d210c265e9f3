"""The review vocabulary and the interrupt reader (review/types.py)."""

from __future__ import annotations

import pytest

from hitl_app.review import DECISION_STYLES, DECISION_TYPES, parse_hitl_request
from hitl_app.review.types import (
    ApproveDecision,
    EditDecision,
    EditedAction,
    RejectDecision,
    RespondDecision,
    decision_message,
    describe_interrupt,
    executed_args,
    resume_value,
)

HITL_VALUE = {
    "action_requests": [{"name": "send_email", "args": {"to": "a@example.com"}, "description": "Send it"}],
    "review_configs": [{"action_name": "send_email", "allowed_decisions": ["approve", "reject"]}],
}


def test_every_decision_type_has_one_style_in_display_order():
    assert DECISION_TYPES == ("approve", "edit", "reject", "respond")
    assert tuple(DECISION_STYLES) == DECISION_TYPES
    assert [s.past for s in DECISION_STYLES.values()] == ["approved", "edited", "rejected", "answered"]


def test_a_hitl_interrupt_value_is_read_as_a_typed_request():
    request = parse_hitl_request(HITL_VALUE)
    assert request is not None
    assert request.action_requests[0].name == "send_email" and request.action_requests[0].description == "Send it"
    assert request.review_configs[0].allowed_decisions == ("approve", "reject")


@pytest.mark.parametrize(
    "value",
    [
        "What is your name?",  # a custom agent's own interrupt("...")
        {"question": "ok?"},
        {"action_requests": "send_email"},
        {"action_requests": []},
        {"action_requests": [{"args": {}}], "review_configs": []},  # no tool name
        {**HITL_VALUE, "review_configs": []},  # no config for the action
        {**HITL_VALUE, "review_configs": [{"action_name": "delete_file", "allowed_decisions": ["approve"]}]},
        {**HITL_VALUE, "review_configs": [{"action_name": "send_email", "allowed_decisions": ["obliterate"]}]},
        None,
    ],
)
def test_anything_else_is_not_a_hitl_request_and_never_raises(value):
    assert parse_hitl_request(value) is None


def test_the_resume_value_and_the_audit_fields_come_from_the_typed_decisions():
    decisions = [
        ApproveDecision(type="approve"),
        EditDecision(type="edit", edited_action=EditedAction(name="send_email", args={"to": "b@example.com"})),
        RejectDecision(type="reject"),
        RespondDecision(type="respond", message="blue"),
    ]
    assert resume_value(decisions) == {
        "decisions": [
            {"type": "approve"},
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "b@example.com"}}},
            {"type": "reject"},
            {"type": "respond", "message": "blue"},
        ]
    }
    proposed = {"to": "a@example.com"}
    assert [executed_args(d, proposed) for d in decisions] == [proposed, {"to": "b@example.com"}, None, None]
    assert [decision_message(d) for d in decisions] == [None, None, None, "blue"]


def test_an_interrupt_is_described_in_one_short_line():
    assert describe_interrupt("  Which\ncolour? ") == "Which colour?"
    assert len(describe_interrupt({"x": "y" * 500})) == 200


def test_a_review_configs_args_schema_gives_the_card_its_form():
    """A deployment whose interrupt brings the arguments' schema in its review config (LangChain's
    ``ReviewConfig.args_schema``) gets the schema form; one without it keeps the JSON editor only."""
    schema = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
    value = {
        "action_requests": [{"name": "send_email", "args": {"to": "a@b.c"}}, {"name": "delete_file", "args": {"path": "x"}}],
        "review_configs": [
            {"action_name": "send_email", "allowed_decisions": ["approve", "edit"], "args_schema": schema},
            {"action_name": "delete_file", "allowed_decisions": ["approve"]},
        ],
    }
    request = parse_hitl_request(value)
    assert request is not None
    assert [a.args_schema for a in request.action_requests] == [schema, None]
