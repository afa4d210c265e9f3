"""The diff a reviewer sees before submitting an edit, and the one-line summary in the thread."""

from __future__ import annotations

from hitl_app.review.diff import FieldChange, diff_args, show_value, summarize

PROPOSED = {"to": "alice@example.com", "subject": "Hi", "body": "Hello", "priority": "low"}


def test_changed_added_removed_in_stable_order():
    edited = {"cc": "carol@example.com", "body": "Hello", "to": "bob@example.com", "subject": "Hi"}
    changes = diff_args(PROPOSED, edited)
    assert [(c.path, c.kind) for c in changes] == [("to", "changed"), ("priority", "removed"), ("cc", "added")]
    assert [c.text for c in changes] == [
        "to: alice@example.com -> bob@example.com",
        "priority: removed low",
        "cc: added carol@example.com",
    ]


def test_equal_arguments_have_no_changes():
    assert diff_args(PROPOSED, dict(reversed(PROPOSED.items()))) == []
    assert summarize([]) == "no changes"


def test_nested_objects_and_lists_by_path():
    proposed = {"order": {"address": {"city": "Oslo", "zip": "0150"}, "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]}}
    edited = {
        "order": {
            "address": {"city": "Bergen", "zip": "0150"},
            "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 3}, {"sku": "c", "qty": 1}]
        }
    }
    assert diff_args(proposed, edited) == [
        FieldChange("order.address.city", "changed", "Oslo", "Bergen"),
        FieldChange("order.items.1.qty", "changed", 2, 3),
        FieldChange("order.items.2", "added", None, {"sku": "c", "qty": 1}),
    ]
    shorter = {"order": {**edited["order"], "items": [{"sku": "a", "qty": 1}]}}
    assert [(c.path, c.kind) for c in diff_args(proposed, shorter)][-1] == ("order.items.1", "removed")


def test_type_changes_are_changes_and_bool_is_not_a_number():
    assert [c.kind for c in diff_args({"n": 1}, {"n": True})] == ["changed"]
    assert diff_args({"n": 1}, {"n": 1.0}) == []
    change = diff_args({"to": "a@example.com"}, {"to": {"name": "A"}})[0]
    assert change.text == 'to: a@example.com -> {"name": "A"}'


def test_values_shown_short_and_unambiguous():
    assert show_value("") == '""'
    assert show_value(" padded") == '" padded"'
    assert show_value("two\nlines") == '"two\\nlines"'
    assert show_value(None) == "null"
    long = show_value("x" * 500)
    assert len(long) == 60 and long.endswith("…")


def test_summary_is_one_line_with_a_count_of_the_rest():
    edited = {"to": "bob@example.com", "subject": "Re", "body": "Bye", "priority": "high"}
    line = summarize(diff_args(PROPOSED, edited), limit=2)
    assert line == "to: alice@example.com -> bob@example.com; subject: Hi -> Re (+2 more)"
    assert "\n" not in summarize(diff_args({"b": "x"}, {"b": "multi\nline"}))
