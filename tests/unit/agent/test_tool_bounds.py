"""Every tool call is bounded (time, size, count), Stop really stops it, and an approved write
happens exactly once across Stop and Continue."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sqlite3
import time
import uuid

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.tools import build_tools
from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.store.db import make_engines
from tests.helpers.tool_calls import call, runtime

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
SLOW_UPDATE = (
    "UPDATE records SET amount = amount + 1 WHERE (SELECT count(*) FROM (WITH RECURSIVE c(x) AS "
    "(SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000000) SELECT x FROM c)) > 0"
)


@pytest.fixture
def make_tools(tmp_path):
    engines = []

    def _make(**limits):
        e = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
        engines.append(e)
        ws = DemoWorkspace(tmp_path / "files", e.sync, tmp_path / "demo.sqlite", limits=ToolLimits(**limits))
        ws.ensure()
        return ws, {t.name: t for t in build_tools(ws)}

    yield _make
    for e in engines:
        e.sync.dispose()


def ainvoke(tool, call_id, **args):
    return tool.ainvoke({"type": "tool_call", "id": call_id, "name": tool.name,
                         "args": {**args, "runtime": runtime(call_id)}})


def total(ws) -> float:
    with sqlite3.connect(ws.space().demo_db) as conn:
        return conn.execute("SELECT round(sum(amount), 2) FROM records").fetchone()[0]


async def cancel_after(task: asyncio.Task, seconds: float) -> float:
    """Cancel ``task`` after ``seconds``; return how long the cancellation took to finish."""
    await asyncio.sleep(seconds)
    task.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    return time.monotonic() - started


def test_a_query_that_runs_too_long_is_stopped_with_a_plain_message(make_tools):
    _, tools = make_tools(sql_timeout_s=0.5)
    started = time.monotonic()
    msg = call(tools["execute_sql"], "q1", query=ENDLESS)
    assert time.monotonic() - started < 30  # the query never ends on its own
    assert msg.status == "error" and "ran longer than 0.5 s" in msg.text


def test_huge_values_are_refused_and_big_results_are_cut(make_tools):
    _, tools = make_tools()
    for i, q in enumerate(["SELECT hex(randomblob(2500000))", "SELECT zeroblob(999999999)"]):
        msg = call(tools["execute_sql"], f"b{i}", query=q)
        assert msg.status == "error" and "1,000,000-byte limit" in msg.text
    msg = call(tools["execute_sql"], "big", query="SELECT id, hex(randomblob(20000)) AS h FROM records")
    data = json.loads(msg.text)
    assert len(msg.text) <= 65_536 and data["truncated"] is True and "truncated" in data["note"]
    assert 1 <= len(data["rows"]) < 10 and data["rows"][0][0] == 1


async def test_stop_interrupts_the_running_query_and_frees_the_thread(make_tools):
    _, tools = make_tools(sql_timeout_s=60)
    loop = asyncio.get_running_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=1))
    task = asyncio.create_task(ainvoke(tools["execute_sql"], "r1", query=ENDLESS))
    assert await cancel_after(task, 0.5) < 30  # the query's own limit is 60 s: half of it shows Stop ended it
    # the only worker thread is free again: new work runs
    await asyncio.wait_for(loop.run_in_executor(None, lambda: None), 30)


async def test_stop_ends_a_slow_task_at_once_and_records_nothing(make_tools):
    ws, tools = make_tools()
    task = asyncio.create_task(ainvoke(tools["slow_task"], "s1", seconds=20))
    assert await cancel_after(task, 0.3) < 10, "Stop waited for the 20 s task"
    assert ws.recorded_result("t1:s1") is None


async def test_an_approved_write_stopped_midway_then_continued_applies_exactly_once(make_tools):
    """Stop cancels the tool's task during an approved UPDATE; Continue replays the same tool call."""
    ws, tools = make_tools(sql_timeout_s=60)
    before = total(ws)
    task = asyncio.create_task(ainvoke(tools["execute_sql"], "u1", query=SLOW_UPDATE))
    await cancel_after(task, 0.3)
    assert total(ws) == before  # interrupted and rolled back
    msg = await ainvoke(tools["execute_sql"], "u1", query=SLOW_UPDATE)
    assert msg.text == "10 rows affected."
    assert total(ws) == round(before + 10, 2)
    # a later replay (another Continue, or a restart) returns the recorded result, changes nothing
    again = await ainvoke(build_tools(DemoWorkspace(ws.files_root, ws.engine, ws.demo_db_path))[3], "u1", query=SLOW_UPDATE)
    assert again.text == "10 rows affected." and total(ws) == round(before + 10, 2)


def test_the_write_and_its_record_commit_together(make_tools):
    ws, tools = make_tools()
    assert call(tools["execute_sql"], "w1", query="UPDATE records SET amount = 0 WHERE id = 1").status == "success"
    failed = call(tools["execute_sql"], "w2", query="INSERT INTO records (name) VALUES ('no category')")
    assert failed.status == "error"
    with sqlite3.connect(ws.space().demo_db) as conn:
        keys = [r[0] for r in conn.execute("SELECT tool_call_id FROM hitl_tool_effects")]
    assert keys == ["t1:w1"]  # a failed statement leaves neither a change nor a record


async def test_one_message_starts_at_most_the_limit_of_tool_calls(tmp_path):
    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    ws = DemoWorkspace(
        tmp_path / "files", engines.sync, tmp_path / "demo.sqlite", limits=ToolLimits(max_tool_calls_per_message=3)
    )
    graph = build_demo_agent(model=DemoChatModel(words_per_second=0), workspace=ws, checkpointer=InMemorySaver()).graph
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    text = "; ".join(f"write drafts/fan/{i}.txt: x{i}" for i in range(5))
    await graph.ainvoke({"messages": [{"role": "user", "content": text}]}, config)
    written = sorted(p.name for p in (ws.space().files_dir / "drafts/fan").iterdir())
    assert written == ["0.txt", "1.txt", "2.txt"]
    state = await graph.aget_state(config)
    refused = [m for m in state.values["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(refused) == 2 and "at most 3 tool calls" in refused[0].text
    # gated calls beyond the limit raise no card either
    text = "; ".join(f"email p{i}@example.com about s: b" for i in range(5))
    await graph.ainvoke({"messages": [{"role": "user", "content": text}]}, config)
    [intr] = (await graph.aget_state(config)).interrupts
    assert len(intr.value["action_requests"]) == 3
    engines.sync.dispose()


def test_approved_statements_with_results_are_recorded_too(make_tools):
    ws, tools = make_tools()
    q = "INSERT INTO records (name, category, amount) VALUES ('Desk lamp', 'furniture', 30) RETURNING id, name"
    first = call(tools["execute_sql"], "i1", query=q)
    assert json.loads(first.text)["rows"] == [[11, "Desk lamp"]]
    assert call(tools["execute_sql"], "i1", query=q).text == first.text  # replay: recorded, not inserted again
    assert call(tools["execute_sql"], "c1", query="CREATE TABLE notes (body TEXT)").text == "0 rows affected."
    rows = json.loads(call(tools["execute_sql"], "s1", query="SELECT count(*) FROM notes").text)["rows"]
    assert rows == [[0]]
    with sqlite3.connect(ws.space().demo_db) as conn:
        assert conn.execute("SELECT count(*) FROM records WHERE name = 'Desk lamp'").fetchone()[0] == 1
