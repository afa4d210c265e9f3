"""Read-only means read-only: SQL is classified by what its bytecode does, and every statement
runs on a guarded connection (no ATTACH / VACUUM INTO even when approved, reads on a read-only
connection)."""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace

import pytest

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.policy import DEFAULT_POLICY, interrupt_on_from_policy
from hitl_app.agent.sql_exec import run_read
from hitl_app.agent.sql_guard import QueryCancel, is_read_only_sql
from tests.helpers.tool_calls import call

REFUSED = [
    "VACUUM",
    "VACUUM INTO '/tmp/hitl-vacuum-into.db'",
    "VACUUM main INTO 'x.db'",
    "REINDEX",
    "REINDEX records",
    "ANALYZE",
    "DROP TABLE IF EXISTS missing",
    "DROP INDEX IF EXISTS nope",
    "DROP TABLE records",
    "ATTACH DATABASE 'x.db' AS x",
    "DETACH DATABASE x",
    "PRAGMA writable_schema = 1",
    "PRAGMA query_only = 0",
    "PRAGMA journal_mode = delete",
    "PRAGMA user_version = 7",
    "PRAGMA table_info(records)",
    "SELECT load_extension('/tmp/evil.so')",
    "WITH x AS (SELECT 1) DELETE FROM records",
    "WITH x AS (SELECT 1) UPDATE records SET amount = 0",
    "WITH x AS (SELECT 1) INSERT INTO records(name, category, amount) SELECT 'a', 'b', 1 FROM x",
    "SELECT 1; DROP TABLE records",
    "SELECT 1; SELECT 2",
    "BEGIN",
    "COMMIT",
    "SAVEPOINT a",
    "CREATE TEMP TABLE t(x)",
    "CREATE TABLE t2 AS SELECT * FROM records",
    "CREATE VIEW v AS SELECT 1",
    "INSERT INTO records(name, category, amount) VALUES ('a', 'b', 1) RETURNING id",
    "DELETE FROM records RETURNING *",
    "UPDATE records SET amount = 1",
    "SELECT * FROM hitl_tool_effects",
    "SELECT * FROM no_such_table",
    "EXPLAIN SELECT 1",
    "not sql",
    "",
    "SELECT 1\x00; DROP TABLE records",
]
PASSES = [
    "SELECT * FROM records",
    "select name from records where amount > 100;",
    "SELECT 1 -- a comment",
    "WITH big AS (SELECT * FROM records WHERE amount > 500) SELECT name FROM big",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) SELECT x FROM c",
    "SELECT a.name, b.name FROM records a JOIN records b ON a.category = b.category",
    "SELECT category, sum(amount) FROM records GROUP BY category ORDER BY 2 DESC",
    "SELECT DISTINCT category FROM records UNION SELECT 'other'",
    "VALUES (1), (2)",
]


def pauses(query: str) -> bool:
    when = interrupt_on_from_policy(DEFAULT_POLICY, ".")["execute_sql"]["when"]
    return when(SimpleNamespace(tool_call={"name": "execute_sql", "args": {"query": query}, "id": "c"}))


@pytest.mark.parametrize("query", REFUSED)
def test_statements_that_are_not_plain_reads_are_refused_or_carded(query):
    assert is_read_only_sql(query) is False
    assert pauses(query) is True


@pytest.mark.parametrize("query", PASSES)
def test_plain_reads_pass_without_a_card(query):
    assert is_read_only_sql(query) is True
    assert pauses(query) is False


def test_approved_vacuum_into_and_attach_still_cannot_write_elsewhere(tools, workspace, tmp_path):
    target = tmp_path / "outside.db"
    msg = call(tools["execute_sql"], "v1", query=f"VACUUM INTO '{target}'")
    assert msg.status == "error" and not target.exists()
    msg = call(tools["execute_sql"], "v2", query=f"ATTACH DATABASE '{tmp_path / 'a.db'}' AS a")
    assert msg.status == "error" and "not allowed" in msg.text
    assert not (tmp_path / "a.db").exists()
    for query in ("PRAGMA writable_schema = 1", "BEGIN", "SELECT load_extension('x')", "DELETE FROM hitl_tool_effects"):
        assert call(tools["execute_sql"], f"p-{query}", query=query).status == "error", query


def test_the_read_connection_cannot_write_even_if_asked(workspace):
    db = workspace.space().demo_db
    for query in ("DELETE FROM records", "CREATE TABLE t(x)", "PRAGMA query_only = 0", f"VACUUM INTO '{db}.copy'"):
        with pytest.raises(Exception, match="SQL error|not allowed"):
            run_read(db, query, ToolLimits(), QueryCancel())
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 10
    assert not db.with_name(db.name + ".copy").exists()
