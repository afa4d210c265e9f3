"""Decision validation (review/validate.py): every refusal names the card and says what to do."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from hitl_app.review import (
    MAX_EDIT_JSON_CHARS,
    ActionRequest,
    ApproveDecision,
    EditDecision,
    PendingReview,
    RejectDecision,
    ReviewConfig,
    ReviewError,
    resume_value,
)
from hitl_app.review.types import CANCEL_NOTE
from hitl_app.review.validate import parse_args_json, pydantic_args_validator, validate_submission


class EmailArgs(BaseModel):
    to: str = Field(pattern=r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", description="an email address like name@example.com")
    subject: str
    body: str


class DeleteArgs(BaseModel):
    path: str


VALIDATORS = {"send_email": pydantic_args_validator(EmailArgs), "delete_file": pydantic_args_validator(DeleteArgs)}
EMAIL = {"to": "alice@example.com", "subject": "s", "body": "b"}


def review(*extra: tuple[str, dict, tuple[str, ...]]) -> PendingReview:
    items = [
        ("send_email", EMAIL, ("approve", "edit", "reject")), ("delete_file", {"path": "notes/x.txt"}, ("approve", "reject")),
        *extra
    ]
    return PendingReview(
        thread_id="t",
        interrupt_id="i1",
        action_requests=tuple(ActionRequest(name=n, args=a) for n, a, _ in items),
        review_configs=tuple(ReviewConfig(action_name=n, allowed_decisions=d) for n, _, d in items),
    )


def refused(raw, *, interrupt_id="i1", pending=None) -> ReviewError:
    with pytest.raises(ReviewError) as info:
        validate_submission(pending if pending is not None else review(), interrupt_id, raw, VALIDATORS)
    return info.value


def test_valid_submission_keeps_the_order_and_drops_empty_fields():
    out = validate_submission(
        review(),
        "i1",
        [
            {"type": "edit", "edited_action": {"name": "send_email", "args": {**EMAIL, "to": "bob@example.com"}}},
            {"type": "reject"}
        ],
        VALIDATORS,
    )
    assert isinstance(out[0], EditDecision) and isinstance(out[1], RejectDecision)
    assert out[0].edited_action.args["to"] == "bob@example.com" and out[1].message is None
    assert resume_value(out)["decisions"] == [
        {"type": "edit", "edited_action": {"name": "send_email", "args": {**EMAIL, "to": "bob@example.com"}}},
        {"type": "reject"},
    ]


def test_nothing_pending_or_another_interrupt_is_stale():
    with pytest.raises(ReviewError) as info:
        validate_submission(None, "i1", [{"type": "approve"}], VALIDATORS)
    assert info.value.code == "stale"
    err = refused([{"type": "approve"}, {"type": "approve"}], interrupt_id="old-id")
    assert err.code == "stale" and "already decided" in err.message


@pytest.mark.parametrize("raw", [[{"type": "approve"}], [{"type": "approve"}] * 3, {"decisions": []}, "approve"])
def test_wrong_count_or_shape_is_refused(raw):
    err = refused(raw)
    assert err.code in ("count", "malformed")
    if err.code == "count":
        assert "Decide every card" in err.message


def test_decision_type_not_in_the_review_config_is_refused_on_its_card():
    err = refused([{"type": "approve"}, {"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "y"}}}])
    assert (err.code, err.card_index) == ("not_allowed", 1)
    assert "Edit is not allowed for delete_file" in err.message


def test_unknown_decision_type_and_extra_keys_are_refused():
    assert refused([{"type": "bogus"}, {"type": "approve"}]).code == "malformed"
    assert refused([{"type": "approve", "sneaky": 1}, {"type": "approve"}]).code == "malformed"


def test_an_edit_cannot_rename_the_tool():
    err = refused([{"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "x"}}}, {"type": "approve"}])
    assert (err.code, err.card_index) == ("renamed", 0)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({**EMAIL, "to": 5}, "`to` must be a string (got 5)"),
        ({"to": "a@example.com", "subject": "s"}, "`body` is required"),
        ({**EMAIL, "bcc": "x@example.com"}, "unknown field `bcc`"),
        ({**EMAIL, "to": "not an address"}, "`to` has the wrong format (expected an email address like name@example.com)"),
    ],
)
def test_edited_args_must_fit_the_tool_schema(args, words):
    err = refused([{"type": "edit", "edited_action": {"name": "send_email", "args": args}}, {"type": "approve"}])
    assert (err.code, err.card_index) == ("bad_args", 0)
    assert words in err.message


@pytest.mark.parametrize("message", [None, "", "   \n "])
def test_respond_needs_a_real_answer(message):
    pending = review(("ask_user", {"question": "colour?"}, ("respond",)))
    decision = {"type": "respond"} if message is None else {"type": "respond", "message": message}
    err = refused([{"type": "approve"}, {"type": "approve"}, decision], pending=pending)
    assert (err.code, err.card_index) == ("missing_message", 2)


def test_oversize_edit_is_refused():
    big = {**EMAIL, "body": "x" * (MAX_EDIT_JSON_CHARS + 1)}
    assert refused(
        [{"type": "edit", "edited_action": {"name": "send_email", "args": big}}, {"type": "approve"}]
    ).code == "too_large"


def test_parse_args_json_errors_say_where():
    with pytest.raises(ReviewError) as info:
        parse_args_json('{"to": "a@')
    assert info.value.code == "bad_json" and "line 1" in info.value.message and "at at" not in info.value.message
    with pytest.raises(ReviewError) as info:
        parse_args_json("[1, 2]")
    assert "must be a JSON object" in info.value.message
    with pytest.raises(ReviewError) as info:
        parse_args_json(" " * (MAX_EDIT_JSON_CHARS + 1))
    assert info.value.code == "too_large"


def test_an_edit_that_changed_nothing_counts_as_an_approval_where_the_card_allows_one():
    """QA: opening the editor and submitting without a change was recorded (and told to the model)
    as an edit; it is an approval. A card that allows no approval keeps the edit."""
    unchanged = {"type": "edit", "edited_action": {"name": "send_email", "args": dict(EMAIL)}}
    out = validate_submission(review(), "i1", [unchanged, {"type": "approve"}], VALIDATORS)
    assert isinstance(out[0], ApproveDecision)
    edit_only = review(("send_email", EMAIL, ("edit", "reject")))
    kept = validate_submission(edit_only, "i1", [{"type": "approve"}, {"type": "approve"}, unchanged], VALIDATORS)
    assert isinstance(kept[2], EditDecision)


def test_cancel_answers_only_a_servers_question():
    error = refused([{"type": "approve"}, {"type": "reject", "cancel": True}])
    assert error.code == "not_allowed" and error.card_index == 1
    assert str(error) == "Cancel answers an MCP server's question; delete_file is a tool call: reject it instead."
    question = review(("notes__clear_notes:question", {"confirm": False}, ("edit", "reject")))
    out = validate_submission(question, "i1", [{"type": "approve"}, {"type": "reject"}, {"type": "reject", "cancel": True}],
                              VALIDATORS)
    assert resume_value(out)["decisions"][2] == {"type": "reject", "message": CANCEL_NOTE}
