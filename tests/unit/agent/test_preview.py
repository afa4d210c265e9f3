"""Effect previews: the file diff, the formatted SQL and the rows a write would touch, counted in a
transaction that is rolled back (the data is unchanged, and the guards still refuse)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.preview import preview_call, preview_sql, preview_write_file
from hitl_app.store.owners import OwnerSpace


def _db(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, name TEXT, category TEXT, amount REAL)")
        conn.executemany(
            "INSERT INTO records (name, category, amount) VALUES (?, ?, ?)",
            [("a", "food", 1), ("b", "food", 2), ("c", "tools", 3)],
        )
    return path


def _count(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM records").fetchone()[0]


def test_write_file_preview_is_a_diff_of_the_current_file_and_writes_nothing(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/x.txt").write_text("one\ntwo\n")
    p = preview_write_file(tmp_path, "notes/x.txt", "one\nthree\n")
    assert p.kind == "diff" and p.title == "notes/x.txt: 1 added, 1 removed"
    assert "-two" in p.body.splitlines() and "+three" in p.body.splitlines()
    assert (tmp_path / "notes/x.txt").read_text() == "one\ntwo\n"
    new = preview_write_file(tmp_path, "notes/new.txt", "a\nb")
    assert new.title == "notes/new.txt: new file, 2 lines" and not (tmp_path / "notes/new.txt").exists()
    assert "refused" in preview_write_file(tmp_path, "../etc/passwd", "x").title
    assert preview_write_file(tmp_path, "notes/x.txt", "one\ntwo\n").title == "notes/x.txt: no change (same content)"


def test_sql_preview_formats_and_counts_rows_in_a_rolled_back_transaction(tmp_path):
    db = _db(tmp_path / "d.sqlite")
    p = preview_sql(db, "delete from records where category='food'", ToolLimits())
    assert p.body == "DELETE\nFROM records\nWHERE category='food'"
    assert p.note == "Would change 2 rows (counted, then rolled back)."
    assert _count(db) == 3
    assert preview_sql(db, "update records set amount = 0", ToolLimits()).note.startswith("Would change 3 rows")
    assert preview_sql(db, "select * from records", ToolLimits()).title == "SQL statement (reads only)"
    assert "not rows" in preview_sql(db, "drop table records", ToolLimits()).note and _count(db) == 3


def test_sql_preview_keeps_the_write_guards(tmp_path):
    db = _db(tmp_path / "d.sqlite")
    attach = preview_sql(db, f"ATTACH DATABASE '{tmp_path / 'other.sqlite'}' AS o", ToolLimits())
    assert attach.note.startswith("Would fail now") and not (tmp_path / "other.sqlite").exists()
    assert preview_sql(db, "delete from records; delete from records", ToolLimits()).note.startswith("Would fail now")
    assert preview_sql(db, "delete from hitl_tool_effects", ToolLimits()).note.startswith("Would fail now")
    assert _count(db) == 3


def test_only_write_file_and_execute_sql_have_previews(tmp_path):
    space = OwnerSpace(key="k", files_dir=tmp_path, demo_db=tmp_path / "none.sqlite")
    assert preview_call(space, "send_email", {"to": "a@b.co"}, ToolLimits()) is None
    preview = preview_call(space, "execute_sql", {"query": "delete from records"}, ToolLimits())
    assert preview.note == "The demo database does not exist yet."
