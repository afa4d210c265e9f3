"""A decided review in words (``review.decided``): what the undo window shows for each card."""

from __future__ import annotations

import json

from hitl_app.review.decided import decided_lines
from hitl_app.review.types import ActionRequest, PendingReview, ReviewConfig

EMAIL = {"to": "bob@example.com", "subject": "plans", "body": "hi"}


def review() -> PendingReview:
    tools = [("send_email", EMAIL), ("slow_task", {"seconds": 0}), ("ask_user", {"question": "which day?"}),
             ("write_file", {"path": "notes/a.txt", "content": "hi"})]
    return PendingReview(
        thread_id="t", interrupt_id="i",
        action_requests=tuple(ActionRequest(name=n, args=a) for n, a in tools),
        review_configs=tuple(ReviewConfig(action_name=n, allowed_decisions=("approve", "edit", "reject")) for n, _ in tools),
    )


def test_each_card_says_its_tool_and_decision_with_the_edit_args_the_reason_and_the_answer():
    edited = {**EMAIL, "to": "alice@example.com"}
    lines = decided_lines(review(), [
        {"type": "edit", "edited_action": {"name": "send_email", "args": edited}},
        {"type": "approve"},
        {"type": "respond", "message": " Tuesday "},
        {"type": "reject", "message": "not now"},
    ])
    assert [(x.tool, x.verb, x.detail) for x in lines] == [
        ("send_email", "edited", "to: bob@example.com -> alice@example.com"),
        ("slow_task", "approved", ""),
        ("ask_user", "answered", "Tuesday"),
        ("write_file", "rejected", "not now"),
    ]
    assert json.loads(lines[0].args) == edited
    assert [x.args for x in lines[1:]] == ["seconds: 0", "", ""], "an approval shows what runs, compact"
    assert [x.index for x in lines] == [0, 1, 2, 3]


def test_a_reject_without_reason_and_an_unreadable_or_missing_decision():
    lines = decided_lines(review(), [{"type": "reject"}, {"type": "maybe"}, "junk"])
    assert [(x.decision, x.verb, x.detail) for x in lines] == [
        ("reject", "rejected", ""), ("", "decided", ""), ("", "decided", ""), ("", "decided", ""),
    ]


def test_each_line_names_who_decided_its_card_and_an_approval_shows_its_arguments_compact():
    lines = decided_lines(review(), [{"type": "approve"}] * 4, {0: "Rex and Rita", 1: "Max"})
    assert [x.by for x in lines] == ["Rex and Rita", "Max", "", ""]
    assert lines[0].args == "to: bob@example.com, subject: plans, body: hi"
    assert lines[3].args == "path: notes/a.txt, content: hi"


def test_an_edit_quotes_both_sides_of_a_change_alike_and_a_cut_value_keeps_its_closing_quote():
    """QA shot 63: ``body: please find the figures below -> "Dear board, … they lo…``."""
    body = "Dear board, the numbers for the quarter are in and they look good overall; "
    edit = {"type": "edit", "edited_action": {"name": "send_email", "args": {**EMAIL, "body": body}}}
    line = decided_lines(review(), [edit])[0]
    assert line.detail == 'body: "hi" -> "Dear board, the numbers for the quarter are in and they l…"'
