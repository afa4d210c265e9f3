"""What the UI rows show: typed card arguments (C13) and tool rows in the cards' order."""

from __future__ import annotations

import json

from hitl_app.review.types import ActionRequest, PendingReview, ReviewConfig
from hitl_app.threads.views import MessageView, ToolCallView
from hitl_app.ui.cards.card_rows import card_rows, json_type
from hitl_app.ui.rows import message_rows


def _review(args: dict) -> PendingReview:
    return PendingReview(
        thread_id="t",
        interrupt_id="i",
        action_requests=(ActionRequest(name="send_email", args=args, description="Send an email to a@example.com"),),
        review_configs=(ReviewConfig(action_name="send_email", allowed_decisions=("approve", "reject")),),
    )


def test_card_shows_nested_and_typed_arguments_with_their_json_types():
    args = {"to": "a@example.com", "cc": ["b@example.com"], "priority": 2, "urgent": True, "meta": {"k": None}}
    [card] = card_rows(_review(args))
    shown = {a.key: (a.value, a.type_name) for a in card.args}
    assert shown == {
        "to": ('"a@example.com"', "string"),
        "cc": ('["b@example.com"]', "list"),
        "priority": ("2", "number"),
        "urgent": ("true", "boolean"),
        "meta": ('{"k": null}', "object"),
    }
    assert [a.key for a in card.args] == ["to", "cc", "priority", "urgent", "meta"]
    assert json.loads(card.args_json) == args  # the editor starts from the exact arguments
    assert card.allowed == ["approve", "reject"]
    assert card.description == "Send an email to a@example.com"


def test_json_type_names():
    assert [json_type(v) for v in ("x", 1, 1.5, False, None, [1], (1,), {"a": 1})] == [
        "string", "number", "number", "boolean", "null", "list", "list", "object",
    ]


def test_no_review_means_no_cards():
    assert card_rows(None) == []


def test_tool_rows_follow_the_call_order_not_the_checkpoint_order():
    calls = [ToolCallView(id=f"c{i}", name=n, args={}) for i, n in enumerate(["send_email", "send_email", "delete_file"])]
    views = [
        MessageView(key="u", role="user", text="three things"),
        MessageView(key="a", role="assistant", text="I'll do three things.", tool_calls=calls),
        # the middleware writes the rejected result first, then the tool node the executed ones
        MessageView(key="t1", role="tool", text="no", tool_name="send_email", tool_call_id="c1", outcome="rejected"),
        MessageView(key="t0", role="tool", text="sent", tool_name="send_email", tool_call_id="c0", outcome="executed"),
        MessageView(key="t2", role="tool", text="gone", tool_name="delete_file", tool_call_id="c2", outcome="executed"),
        MessageView(key="s", role="assistant", text="Done."),
    ]
    rows = message_rows(views, {})
    assert [r.key for r in rows] == ["u", "a", "t0", "t1", "t2", "s"]
    assert [r.outcome for r in rows if r.role == "tool"] == ["executed", "rejected", "executed"]


def test_an_edit_in_the_thread_says_what_changed():
    from datetime import UTC, datetime

    from hitl_app.store.reviews import AuditEntry
    from hitl_app.ui.rows import audit_line

    when = datetime(2026, 1, 2, 14, 3, tzinfo=UTC)
    edited = AuditEntry(
        "c1", "send_email", "edit", "Dana", when, 120.0, None,
        args_proposed={"to": "alice@example.com", "subject": "s"}, args_executed={"to": "bob@example.com", "subject": "s"},
    )
    assert audit_line(edited) == "edited by Dana: to: alice@example.com -> bob@example.com · 14:03 UTC, waited 2 min"
    approved = AuditEntry(
        "c2", "send_email", "approve", "Dana", when, 5.0, None, args_proposed={"to": "a"}, args_executed={"to": "a"}
    )
    assert audit_line(approved) == "approved by Dana, 14:03 UTC, waited 5 s"
    rejected = AuditEntry("c3", "delete_file", "reject", "Dana", when, 5.0, "keep it,\n we need it")
    assert audit_line(rejected) == "rejected by Dana: “keep it, we need it” · 14:03 UTC, waited 5 s"  # QA C5: the reason


def test_a_question_card_shows_its_question_once_other_cards_every_argument():
    """QA C3: "Question for you: which region?" is not repeated in a ``question`` row."""
    from hitl_app.ui.cards.card_rows import _arg_rows

    asked = _arg_rows({"question": "which region?"}, "Question for you: which region?", ["respond"])
    assert asked == []
    mail = _arg_rows({"to": "a@example.com"}, "Send an email to a@example.com", ["approve", "reject"])
    assert [r.key for r in mail] == ["to"]  # C13: every argument of a card that asks for approval


def test_a_policys_on_reject_stop_opens_the_card_with_reject_and_stop_ticked(tmp_path):
    """Issue 20: ``on_reject = "stop"`` per tool is the card's default; other tools "reject and tell"."""
    from hitl_app.agent.policy import load_policy_toml
    from hitl_app.review.risk_policy import risks_by_tool

    policy = tmp_path / "policy.toml"
    policy.write_text('[tools.send_email]\nallowed_decisions = ["approve", "reject"]\non_reject = "stop"\n\n'
                      '[tools.delete_file]\nallowed_decisions = ["approve", "reject"]\n')
    risks = risks_by_tool(load_policy_toml(policy))
    review = _review({"to": "a@example.com"})
    [card] = card_rows(review, risks=risks)
    assert card.reject_stop is True
    other = PendingReview(thread_id="t", interrupt_id="i",
                          action_requests=(ActionRequest(name="delete_file", args={"path": "x"}),),
                          review_configs=(ReviewConfig(action_name="delete_file", allowed_decisions=("approve", "reject")),))
    assert card_rows(other, risks=risks)[0].reject_stop is False


def test_scrolling_up_adds_as_many_rows_again_so_the_top_of_a_long_thread_is_a_few_reads_away():
    from hitl_app.ui.rows import EARLIER_STEP_MAX, MESSAGE_PAGE, WINDOW_ROWS, earlier_step, shown_range, step_up

    assert earlier_step(0) == MESSAGE_PAGE and earlier_step(MESSAGE_PAGE) == MESSAGE_PAGE
    assert earlier_step(200) == 200 and earlier_step(50_000) == EARLIER_STEP_MAX
    start, end, reads, held = -1, -1, 0, []
    while shown_range(start, end, 10_000)[0] > 0:  # from the end of 10,000 messages to the first
        start, end = step_up(start, end, 10_000)
        first, stop = shown_range(start, end, 10_000)
        held.append(stop - first)
        reads += 1
    assert reads <= 25, reads
    assert max(held) == WINDOW_ROWS and held[-1] == WINDOW_ROWS, "the tab's window never holds more than WINDOW_ROWS"
    assert shown_range(start, end, 10_000) == (0, WINDOW_ROWS)


def test_a_new_window_shows_the_last_page_and_follows_the_end_as_rows_arrive():
    from hitl_app.ui.rows import MESSAGE_PAGE, shown_range

    assert shown_range(-1, -1, 10) == (0, 10)
    assert shown_range(-1, -1, 500) == (500 - MESSAGE_PAGE, 500)
    assert shown_range(450, -1, 503) == (450, 503), "a window that follows the end takes new rows"
    assert shown_range(100, 400, 503) == (100, 400), "a window that left the end does not"
    assert shown_range(480, 490, 495) == (440, 490), "never shorter than a page where the thread has the rows"


def test_scrolling_back_down_brings_the_later_rows_back_and_follows_the_end_again():
    from hitl_app.ui.rows import EARLIER_STEP_MAX, WINDOW_ROWS, shown_range, step_down, step_up

    start, end = -1, -1
    while shown_range(start, end, 10_000)[0] > 0:
        start, end = step_up(start, end, 10_000)
    assert end == WINDOW_ROWS
    seen_end = shown_range(start, end, 10_000)[1]
    while end != -1:
        start, end = step_down(start, end, 10_000)
        first, stop = shown_range(start, end, 10_000)
        assert first == 0, "no row leaves the top on the way down (the reader's place would move)"
        assert 0 < stop - seen_end <= EARLIER_STEP_MAX, (first, stop)
        seen_end = stop
    assert shown_range(start, end, 10_003)[1] == 10_003, "back at the end, it follows new rows again"
    assert step_down(200, 250, 260) == (200, -1), "a step past the end follows it"
