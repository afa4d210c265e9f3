"""The review policy: conditions, descriptions, TOML loading and its errors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hitl_app.agent.policy import (
    DEFAULT_POLICY,
    PolicyError,
    PolicyRule,
    interrupt_on_from_policy,
    load_policy_toml,
)
from hitl_app.agent.review_need import REVIEW_NEED_KEY, ReviewNeedMemo
from hitl_app.agent.sql_guard import is_read_only_sql


@pytest.fixture
def interrupt_on(workspace):
    return interrupt_on_from_policy(DEFAULT_POLICY, workspace.demo_db_path)


def pauses(interrupt_on, name, args) -> bool:
    config = interrupt_on.get(name)
    if config is None:
        return False
    when = config.get("when")
    return True if when is None else when(SimpleNamespace(tool_call={"name": name, "args": args, "id": "c"}))


def test_default_policy_decisions(interrupt_on):
    assert interrupt_on["send_email"]["allowed_decisions"] == ["approve", "edit", "reject"]
    assert interrupt_on["ask_user"]["allowed_decisions"] == ["respond"]
    assert interrupt_on["execute_sql"]["allowed_decisions"] == ["approve", "reject"]
    assert "read_data" not in interrupt_on


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("drafts/a.md", False),
        ("./drafts/sub/b.md", False),
        ("notes/a.md", True),
        ("drafts", True),
        ("drafts/../notes/a.md", True),
        ("/drafts/a.md", True),
        ("draftsX/a.md", True),
    ],
)
def test_write_pauses_outside_drafts(interrupt_on, path, expected):
    assert pauses(interrupt_on, "write_file", {"path": path, "content": "x"}) is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT * FROM records", False),
        ("select name from records where amount > 100;", False),
        ("UPDATE records SET amount = 0", True),
        ("SELECT 1; DROP TABLE records", True),
        ("DELETE FROM records", True),
        ("PRAGMA writable_schema = 1", True),
        ("ATTACH DATABASE 'x.db' AS x", True),
        ("SELECT * FROM no_such_table", True),
        ("not sql at all", True),
    ],
)
def test_sql_pauses_unless_read_only(interrupt_on, workspace, query, expected):
    assert pauses(interrupt_on, "execute_sql", {"query": query}) is expected
    assert is_read_only_sql(query) is (not expected)


def test_read_only_check_does_not_run_the_statement(workspace):
    import sqlite3

    is_read_only_sql("DELETE FROM records")
    with sqlite3.connect(workspace.space().demo_db) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 10


def test_descriptions_fill_templates_and_fall_back(interrupt_on):
    describe = interrupt_on["send_email"]["description"]
    call = {"name": "send_email", "args": {"to": "a@example.com", "subject": "Hi", "body": ""}, "id": "c"}
    assert describe(call, {}, None) == "Send an email to a@example.com: Hi"
    bad = {"name": "send_email", "args": {"to": "a@example.com"}, "id": "c"}
    assert describe(bad, {}, None) == "Tool send_email"


def test_load_policy_toml(tmp_path):
    p = tmp_path / "policy.toml"
    p.write_text(
        '[tools.send_email]\nallowed_decisions = ["approve", "reject"]\ndescription = "Send an email to {to}"\n'
        '[tools.write_file]\nallowed_decisions = ["approve"]\ncondition = "outside_drafts"\n'
    )
    rules = load_policy_toml(p)
    assert rules == [
        PolicyRule("send_email", ["approve", "reject"], "Send an email to {to}", None),
        PolicyRule("write_file", ["approve"], "Run write_file", "outside_drafts"),
    ]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("[tools.send_email\nallowed_decisions = []", ["invalid TOML", "line 1"]),
        ('[tools.send_email]\nallowed_decisions = ["approve", "maybe"]', ["[tools.send_email]", "allowed_decisions", "'maybe'"]),
        ("[tools.send_email]\nallowed_decisions = []", ["[tools.send_email]", "non-empty"]),
        ('[tools.send_email]\nallowed_decisions = ["approve"]\ncondition = "weekends"', ["condition", "'weekends'"]),
        ('[tools.send_email]\nallowed_decisions = ["approve"]\nallowed_decision = ["x"]', ["unknown key", "allowed_decision"]),
        (
            '[tools.send_email]\nallowed_decisions = ["approve"]\ndescription = "{to.__class__}"',
            ["description", "plain argument name"]
        ),
        ("[other]\nx = 1", ["[tools.<name>]"]),
    ],
)
def test_policy_errors_name_file_key_and_reason(tmp_path, text, needles):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_policy_toml(p)
    message = str(info.value)
    assert str(p) in message
    for needle in needles:
        assert needle in message


def test_missing_policy_file(tmp_path):
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy_toml(tmp_path / "nope.toml")


def test_invalid_rule_in_code_is_refused(workspace):
    with pytest.raises(PolicyError, match="non-empty"):
        interrupt_on_from_policy([PolicyRule("x", [], "d")], workspace.demo_db_path)


def test_the_review_need_is_taken_once_per_tool_call_and_survives_a_schema_change(interrupt_on, workspace):
    """A SELECT that needed no review when proposed keeps that answer after its table is dropped."""
    import sqlite3

    from langchain_core.messages import AIMessage

    select = {"name": "execute_sql", "args": {"query": "SELECT count(*) FROM records"}, "id": "c1"}
    update = {"name": "execute_sql", "args": {"query": "UPDATE records SET amount = 0"}, "id": "c2"}
    email = {"name": "send_email", "args": {"to": "a@example.com"}, "id": "c3"}
    state = {"messages": [AIMessage("", tool_calls=[select, update, email])]}
    memo = ReviewNeedMemo(interrupt_on).after_model(state, None)
    assert memo == {REVIEW_NEED_KEY: {"c1": False, "c2": True}}  # send_email has no condition

    with sqlite3.connect(workspace.space().demo_db) as conn:
        conn.execute("DROP TABLE records")
    # SQL is classified against the fixed demo schema, so the live answer does not change either
    assert pauses(interrupt_on, "execute_sql", select["args"]) is False
    when = interrupt_on["execute_sql"]["when"]
    stored = {**state, REVIEW_NEED_KEY: {"c1": True, "c2": True}}
    assert when(SimpleNamespace(tool_call=select, state=stored)) is True  # a stored answer wins over the live one
    resumed = {**state, **memo}
    assert when(SimpleNamespace(tool_call=select, state=resumed)) is False
    assert ReviewNeedMemo(interrupt_on).after_model(resumed, None) == memo  # re-entry keeps it
