"""Each owner has its own outbox, files sandbox and demo records; tools and the Workspace panel
show only one's own. Also: plain errors for bad input, path characters, the sandbox quota."""

from __future__ import annotations

import json
import sqlite3

import pytest
from langchain.tools import ToolRuntime

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.sandbox import SandboxError, resolve_in_sandbox
from hitl_app.agent.tools import build_tools
from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.store import inspect
from hitl_app.store.owners import owner_space

ALICE, BOB = "9e5d18e9-3866-4d3d-870c-340d03a88290", "1b7c6f3e-7f1d-4a55-9a4e-2f0b3b0c5a11"


def call(tool, call_id: str, owner: str, thread_id: str, **args):
    rt = ToolRuntime(state={}, context=None, config={"configurable": {"thread_id": thread_id, "owner": owner}},
                     stream_writer=lambda _: None, tool_call_id=call_id, store=None)
    return tool.invoke({"type": "tool_call", "id": call_id, "name": tool.name, "args": {**args, "runtime": rt}})


def test_two_owners_see_only_their_own_mail(tools, workspace):
    sent = call(tools["send_email"], "e1", ALICE, "thread-a", to="ceo@victim.example", subject="Q3", body="secret")
    assert sent.status == "success"
    assert json.loads(call(tools["read_data"], "r1", BOB, "thread-b", table="outbox").text) == []
    mine = json.loads(call(tools["read_data"], "r2", ALICE, "thread-a", table="outbox").text)
    assert [(m["to"], m["subject"]) for m in mine] == [("ceo@victim.example", "Q3")]
    assert set(mine[0]) == {"to", "subject", "sent_at"}  # no body, no tool call id (it names the thread)
    assert "thread-a" not in call(tools["read_data"], "r3", ALICE, "thread-a", table="outbox").text
    # the Workspace panel's view
    assert [m.recipient for m in inspect.outbox(engine=workspace.engine, owner=ALICE)] == ["ceo@victim.example"]
    assert inspect.outbox(engine=workspace.engine, owner=BOB) == []
    assert inspect.outbox(engine=workspace.engine, owner="") == []


def test_two_owners_have_separate_files_and_records(tools, workspace):
    assert call(tools["write_file"], "w1", ALICE, "ta", path="drafts/plan.md", content="alice's plan").status == "success"
    assert call(tools["write_file"], "w2", BOB, "tb", path="drafts/plan.md", content="bob's").status == "success"
    assert call(tools["delete_file"], "d1", BOB, "tb", path="notes/old.txt").status == "success"
    a, b = workspace.space(ALICE), workspace.space(BOB)
    assert a.files_dir != b.files_dir and ALICE not in str(a.files_dir)  # the folder name does not reveal the id
    assert (a.files_dir / "drafts/plan.md").read_text() == "alice's plan"
    assert (a.files_dir / "notes/old.txt").exists()
    assert call(tools["execute_sql"], "q1", BOB, "tb", query="DELETE FROM records").text == "10 rows affected."
    assert len(json.loads(call(tools["read_data"], "r1", ALICE, "ta", table="records").text)) == 10
    # the Workspace panel's view, through the same layout the UI uses
    space = owner_space(files_root=workspace.files_root, demo_db_path=workspace.demo_db_path, owner=ALICE)
    assert {f.path for f in inspect.files(root=space.files_dir)} >= {"drafts/plan.md", "notes/old.txt"}
    assert len(inspect.records(db_path=space.demo_db)[1]) == 10
    bob_space = owner_space(files_root=workspace.files_root, demo_db_path=workspace.demo_db_path, owner=BOB)
    assert inspect.records(db_path=bob_space.demo_db)[1] == []
    assert "notes/old.txt" not in {f.path for f in inspect.files(root=bob_space.files_dir)}


def test_workspace_file_listing_is_limited(workspace):
    root = workspace.space("").files_dir
    for i in range(30):
        (root / f"bulk-{i:02d}.txt").write_text("x")
    rows = inspect.files(root=root, limit=5)
    assert [r.path for r in rows] == [f"bulk-{i:02d}.txt" for i in range(5)]
    assert inspect.files(root=root / "missing") == []


@pytest.mark.parametrize(
    "path",
    ["notes/a\x01b.txt", "notes/tab\there", "notes/del\x7f", "invoice\u202eFDP.exe", "zero\u200bwidth.txt",
     "isolate\u2066x", "mark\u200fx"],
)
def test_paths_with_invisible_or_control_characters_are_refused(workspace, path):
    with pytest.raises(SandboxError, match="invisible or control character"):
        resolve_in_sandbox(workspace.space().files_dir, path)


def test_paths_are_nfc_normalised(tools, workspace):
    decomposed = "drafts/cafe\u0301.txt"
    assert call(tools["write_file"], "n1", "", "t", path=decomposed, content="x").status == "success"
    assert (workspace.space().files_dir / "drafts/caf\u00e9.txt").exists()


def test_sandbox_quota_per_owner(tmp_path):
    from hitl_app.store.db import make_engines

    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    ws = DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite",
                       limits=ToolLimits(files_max_count=6, files_max_bytes=2_000))
    ws.ensure()
    tools = {t.name: t for t in build_tools(ws)}  # 4 seed files
    assert call(tools["write_file"], "q1", ALICE, "t", path="drafts/a.txt", content="a").status == "success"
    assert call(tools["write_file"], "q2", ALICE, "t", path="drafts/b.txt", content="b").status == "success"
    full = call(tools["write_file"], "q3", ALICE, "t", path="drafts/c.txt", content="c")
    assert full.status == "error" and "6 files" in full.text
    assert call(tools["write_file"], "q4", ALICE, "t", path="drafts/a.txt", content="again").status == "success"
    big = call(tools["write_file"], "q5", ALICE, "t", path="drafts/b.txt", content="x" * 3_000)
    assert big.status == "error" and "2000-byte limit" in big.text
    assert call(tools["write_file"], "q6", BOB, "t", path="drafts/c.txt", content="c").status == "success"
    engines.sync.dispose()


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"to": "a@example.com", "subject": "s\x00", "body": "b"}, "NUL"),
        ({"to": "a@example.com", "subject": "s", "body": "b\x00"}, "NUL"),
        ({"to": "a@example.com", "subject": "x" * 501, "body": "b"}, "one line of at most 500"),
        ({"to": "a@example.com", "subject": "two\nlines", "body": "b"}, "one line"),
        ({"to": "a@example.com", "subject": "s", "body": "x" * 100_001}, "longer than 100,000"),
        ({"to": "a" * 250 + "@example.com", "subject": "s", "body": "b"}, "not a valid email"),
    ],
)
def test_send_email_refuses_bad_fields_plainly(tools, workspace, args, reason):
    msg = call(tools["send_email"], "e1", ALICE, "t", **args)
    assert msg.status == "error" and reason in msg.text
    assert inspect.outbox(engine=workspace.engine, owner=ALICE) == []


def test_an_app_database_error_inside_a_tool_is_a_plain_tool_error(tools, workspace):
    with workspace.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE tool_effects")
    msg = call(tools["write_file"], "w1", ALICE, "t", path="drafts/x.txt", content="x")
    assert msg.status == "error" and msg.text.startswith("The app database could not be used")
    assert "no such table: tool_effects" in msg.text


def test_an_old_outbox_without_owner_column_is_migrated(tmp_path):
    from hitl_app.store.db import make_engines

    app = tmp_path / "app.sqlite"
    with sqlite3.connect(app) as conn:
        conn.execute("CREATE TABLE outbox (id INTEGER PRIMARY KEY, tool_call_id VARCHAR(200) UNIQUE NOT NULL, "
                     "\"to\" VARCHAR(320) NOT NULL, subject VARCHAR(500) NOT NULL, body VARCHAR NOT NULL, "
                     "sent_at DATETIME NOT NULL)")
        conn.execute("INSERT INTO outbox VALUES (1, 't:c', 'old@example.com', 's', 'b', '2024-01-01 00:00:00')")
    engines = make_engines(f"sqlite:///{app}")
    DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite").ensure()
    assert [m.recipient for m in inspect.outbox(engine=engines.sync, owner="")] == ["old@example.com"]
    assert inspect.outbox(engine=engines.sync, owner=ALICE) == []
    engines.sync.dispose()


async def test_the_agent_acts_in_the_owner_named_in_the_run_config(workspace):
    import uuid

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from hitl_app.agent.build import build_demo_agent
    from hitl_app.agent.demo import DemoChatModel

    graph = build_demo_agent(model=DemoChatModel(words_per_second=0), workspace=workspace, checkpointer=InMemorySaver()).graph
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "owner": ALICE}}
    own = owner_space(files_root=workspace.files_root, demo_db_path=workspace.demo_db_path, owner=ALICE)
    assert not own.files_dir.exists()
    await graph.ainvoke({"messages": [{"role": "user", "content": "email pat@example.com about budget: ok"}]}, config)
    # the run created the owner's seeded workspace, before any tool ran (the card is pending)
    assert (own.files_dir / "notes/old.txt").exists() and len(inspect.records(db_path=own.demo_db)[1]) == 10
    await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert [m.recipient for m in inspect.outbox(engine=workspace.engine, owner=ALICE)] == ["pat@example.com"]
    assert inspect.outbox(engine=workspace.engine, owner=BOB) == []


def test_quota_count_ignores_a_file_removed_while_it_is_counted(tmp_path, monkeypatch):
    """Another write's temp file can be renamed between listing a folder and reading a file's size.

    The quota count must skip it, not fail the tool call (seen in CI with 20 parallel writes).
    """
    import os

    from hitl_app.agent import sandbox

    (tmp_path / "kept.txt").write_text("12345")
    (tmp_path / ".tmp-x.part").write_text("gone soon")
    real_scandir = os.scandir

    def scandir_then_rename(path):
        entries = list(real_scandir(path))
        (tmp_path / ".tmp-x.part").rename(tmp_path / "renamed.txt")  # what a concurrent write does
        return iter(entries)

    monkeypatch.setattr(sandbox.os, "scandir", scandir_then_rename)
    assert sandbox.usage(tmp_path, stop_after=100) == (1, 5)
