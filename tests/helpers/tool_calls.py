"""Call a tool as LangGraph's ToolNode does (a ToolCall with the runtime injected), without a graph."""

from __future__ import annotations

from langchain.tools import ToolRuntime


def runtime(call_id: str, thread_id: str = "t1") -> ToolRuntime:
    """The ``ToolRuntime`` a ToolNode injects for tool call ``call_id`` on ``thread_id``."""
    return ToolRuntime(
        state={}, context=None, config={"configurable": {"thread_id": thread_id}},
        stream_writer=lambda _: None, tool_call_id=call_id, store=None,
    )


def call(tool, call_id: str, thread_id: str = "t1", **args):
    """Invoke like the ToolNode does: a ToolCall dict with the runtime injected -> ToolMessage."""
    return tool.invoke(
        {"type": "tool_call", "id": call_id, "name": tool.name,
         "args": {**args, "runtime": runtime(call_id, thread_id)}}
    )
