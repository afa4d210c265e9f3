"""The demo tools: sandbox refusals, real effects, idempotency per tool call id."""

from __future__ import annotations

import json
import os

import pytest
from sqlmodel import Session, select

from hitl_app.agent.sandbox import SandboxError, resolve_in_sandbox
from hitl_app.store.tables import OutboxMail, ToolEffect
from tests.helpers.tool_calls import call


def outbox(workspace):
    with Session(workspace.engine) as s:
        return s.exec(select(OutboxMail)).all()


def test_ensure_seeds_files_and_records(workspace):
    assert (workspace.space().files_dir / "notes/old.txt").is_file()
    assert (workspace.space().files_dir / "drafts/README.md").is_file()
    (workspace.space().files_dir / "notes/old.txt").unlink()
    workspace.ensure()  # the folder is not new: nothing re-seeded
    assert not (workspace.space().files_dir / "notes/old.txt").exists()


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.txt", "'..'"),
        ("notes/../../x", "'..'"),
        ("/etc/passwd", "Absolute"),
        ("notes/a\x00b", "NUL"),
        ("a" * 256, "255 bytes"),
        ("a/" * 600 + "x", "1024 bytes"),
        ("", "empty"),
        (".", "workspace itself"),
    ],
)
def test_sandbox_refuses(workspace, path, reason):
    with pytest.raises(SandboxError, match=reason):
        resolve_in_sandbox(workspace.space().files_dir, path)


def test_sandbox_refuses_symlinks_anywhere_on_the_path(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, workspace.space().files_dir / "link")
    os.symlink(outside / "secret.txt", workspace.space().files_dir / "notes/leaf.txt")
    for p in ("link/secret.txt", "link/new.txt", "notes/leaf.txt"):
        with pytest.raises(SandboxError, match="Symlink"):
            resolve_in_sandbox(workspace.space().files_dir, p)


def test_refusal_is_an_error_tool_message_and_nothing_happens(tools, workspace, tmp_path):
    msg = call(tools["write_file"], "c1", path="../escape.txt", content="x")
    assert msg.status == "error" and "Refused path" in msg.text
    assert not (workspace.files_root.parent / "escape.txt").exists()
    msg = call(tools["delete_file"], "c2", path="/etc/hostname")
    assert msg.status == "error" and "Absolute" in msg.text


def test_write_and_delete_have_real_effects(tools, workspace):
    msg = call(tools["write_file"], "w1", path="drafts/new/plan.md", content="héllo")
    assert msg.status == "success"
    assert (workspace.space().files_dir / "drafts/new/plan.md").read_text(encoding="utf-8") == "héllo"
    assert not [p for p in (workspace.space().files_dir / "drafts/new").iterdir() if p.name.startswith(".tmp-")]
    msg = call(tools["delete_file"], "d1", path="notes/x.txt")
    assert msg.status == "success" and not (workspace.space().files_dir / "notes/x.txt").exists()


def test_delete_missing_file_is_an_error(tools):
    msg = call(tools["delete_file"], "d1", path="notes/none.txt")
    assert msg.status == "error" and msg.text == "File not found: notes/none.txt"


def test_send_email_is_idempotent_per_tool_call_id(tools, workspace):
    first = call(tools["send_email"], "e1", to="a@example.com", subject="s", body="b")
    again = call(tools["send_email"], "e1", to="a@example.com", subject="s", body="b")
    assert first.text == again.text
    mails = outbox(workspace)
    assert [(m.to, m.tool_call_id, m.owner) for m in mails] == [("a@example.com", "t1:e1", "anonymous")]
    # the same call id in another thread is another call
    call(tools["send_email"], "e1", thread_id="t2", to="a@example.com", subject="s", body="b")
    assert len(outbox(workspace)) == 2
    with Session(workspace.engine) as s:
        assert s.get(ToolEffect, "t1:e1").tool_name == "send_email"


def test_send_email_validates_the_address(tools, workspace):
    msg = call(tools["send_email"], "e1", to="bob", subject="s", body="b")
    assert msg.status == "error" and "not a valid email address" in msg.text
    assert outbox(workspace) == []


def test_delete_replay_does_not_fail(tools, workspace):
    assert call(tools["delete_file"], "d1", path="notes/y.txt").status == "success"
    replay = call(tools["delete_file"], "d1", path="notes/y.txt")
    assert replay.status == "success" and replay.text == "Deleted notes/y.txt."


def test_execute_sql_reads_and_writes(tools, workspace):
    msg = call(tools["execute_sql"], "q1", query="SELECT name, amount FROM records WHERE category = 'food' ORDER BY id")
    data = json.loads(msg.text)
    assert data["columns"] == ["name", "amount"] and data["rows"] == [["Team lunch", 214.75], ["Coffee beans", 42.3]]
    msg = call(tools["execute_sql"], "q2", query="UPDATE records SET amount = 0 WHERE category = 'food'")
    assert msg.text == "2 rows affected."
    replay = call(tools["execute_sql"], "q2", query="UPDATE records SET amount = 0 WHERE category = 'food'")
    assert replay.text == "2 rows affected."
    msg = call(tools["execute_sql"], "q3", query="SELECT 1; DROP TABLE records")
    assert msg.status == "error" and "SQL error" in msg.text


def test_execute_sql_caps_rows(tools):
    q = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 80) SELECT x FROM c"
    data = json.loads(call(tools["execute_sql"], "q1", query=q).text)
    assert len(data["rows"]) == 50 and data["truncated"] is True


def test_read_data_and_other_tools(tools):
    rows = json.loads(call(tools["read_data"], "r1", table="records").text)
    assert len(rows) == 10 and rows[0]["name"] == "Office chairs"
    assert call(tools["read_data"], "r2", table="users").status == "error"
    assert call(tools["ask_user"], "a1", question="?").text == "No answer was given."
    assert call(tools["slow_task"], "s1", seconds=0).text == "Waited 0 s"


def test_read_records_after_the_table_was_dropped_is_a_tool_error_not_a_crash(tmp_path):
    """QA: an approved `DROP TABLE records` must not make later reads crash the run."""
    import sqlite3

    from langchain_core.tools import ToolException

    from hitl_app.agent.workspace import DemoWorkspace
    from hitl_app.store.db import make_engines

    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    ws = DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite")
    ws.ensure()
    conn = sqlite3.connect(ws.space().demo_db)
    conn.execute("DROP TABLE records")
    conn.commit()
    conn.close()
    with pytest.raises(ToolException, match="records table cannot be read"):
        ws.read_data("t:c1", "records")
    ws.ensure()  # what a restart does
    assert "amount" in ws.read_data("t:c2", "records")


@pytest.mark.slow
def test_workspace_set_up_by_several_processes_at_once_seeds_once(tmp_path):
    """Prod with Redis starts several workers together; each runs ensure() at start-up."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from hitl_app.store.db import make_engines;"
        "from hitl_app.agent.workspace import DemoWorkspace; d=Path(sys.argv[1]);"
        "e=make_engines(f'sqlite:///{d}/app.sqlite'); DemoWorkspace(d/'files', e.sync, d/'demo.sqlite').ensure()"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)]) for _ in range(6)]
    assert [p.wait(timeout=240) for p in procs] == [0] * 6  # slow imports on a busy machine
    import sqlite3

    conn = sqlite3.connect(tmp_path / "demo" / "anonymous.sqlite")
    from hitl_app.agent.workspace import SEED_RECORDS

    assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == len(SEED_RECORDS)
    conn.close()
    assert (tmp_path / "files" / "anonymous" / "notes" / "old.txt").exists()


def test_tools_built_for_a_second_workspace_act_on_it_alone_and_describe_themselves_alike(tmp_path):
    """The argument schemas are inferred once per process (``tools._ARGS_SCHEMAS``); the tools built
    after that are still bound to their own workspace, and the model is shown the same tools."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from hitl_app.agent.tools import build_tools
    from hitl_app.agent.workspace import DemoWorkspace
    from hitl_app.store.db import make_engines

    spaces = []
    for name in ("a", "b"):
        engines = make_engines(f"sqlite:///{tmp_path / name / 'app.sqlite'}")
        ws = DemoWorkspace(tmp_path / name / "files", engines.sync, tmp_path / name / "demo.sqlite")
        ws.ensure()
        spaces.append((ws, {t.name: t for t in build_tools(ws)}))
    (first, first_tools), (second, second_tools) = spaces
    assert call(second_tools["write_file"], "w1", path="only-b.txt", content="b").status != "error"
    assert (second.space().files_dir / "only-b.txt").read_text() == "b"
    assert not (first.space().files_dir / "only-b.txt").exists()
    bad = call(second_tools["send_email"], "e1", to="not an address", subject="s", body="b")
    assert bad.status == "error" and "valid email address" in bad.text
    assert [convert_to_openai_tool(t) for t in first_tools.values()] == [
        convert_to_openai_tool(t) for t in second_tools.values()
    ]
