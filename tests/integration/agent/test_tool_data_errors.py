"""Review L5: data the app database refuses (PostgreSQL ``VARCHAR``/``TEXT`` limits, NUL bytes)
is a plain tool error on the call, never a failed run; the thread goes on. Run on both backends:
the finding was PostgreSQL-only, where a ``DataError`` escaped the tool and failed the run."""

from __future__ import annotations

import uuid

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from hitl_app.agent.tools import build_tools
from hitl_app.store import inspect
from tests.helpers.pairing import assert_pairing
from tests.integration.conftest import drive


async def test_an_approved_mail_the_database_would_refuse_is_a_tool_error_and_the_thread_goes_on(make_agent, workspace):
    graph = make_agent().graph
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    await drive(graph, {"messages": [{"role": "user", "content": f"email a@b.co about {'s' * 600}: x"}]}, config)
    done = await drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert done.interrupts == []
    state = await graph.aget_state(config)
    [tool_msg] = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert tool_msg.status == "error" and "at most 500" in tool_msg.text
    assert inspect.outbox(engine=workspace.engine, owner="") == []
    assert_pairing(state.values["messages"])
    follow = await drive(graph, {"messages": [{"role": "user", "content": "read records"}]}, config)
    assert follow.interrupts == [] and "Office chairs" in follow.texts[-1]


def test_a_value_too_long_for_a_column_is_a_plain_tool_error(workspace, database_url):
    """A tool call id longer than the idempotency key column (a model's own ids can be): on
    PostgreSQL the insert raises ``DataError``; the tool answers with a plain error instead."""
    tools = {t.name: t for t in build_tools(workspace)}
    call_id = "call_" + "x" * 400
    rt = ToolRuntime(state={}, context=None, config={"configurable": {"thread_id": "t-long"}},
                     stream_writer=lambda _: None, tool_call_id=call_id, store=None)
    msg = tools["write_file"].invoke({"type": "tool_call", "id": call_id, "name": "write_file",
                                      "args": {"path": "drafts/long.txt", "content": "x", "runtime": rt}})
    assert isinstance(msg, ToolMessage)
    if database_url.startswith("postgresql"):
        assert msg.status == "error" and msg.text.startswith("The app database could not be used"), msg.text
        assert "value too long" in msg.text
    else:  # SQLite does not enforce VARCHAR lengths: the write simply happens
        assert msg.status == "success", msg.text
