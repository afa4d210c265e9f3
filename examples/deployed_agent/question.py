"""A custom graph of the example deployment that pauses with its own ``interrupt(...)`` (not a tool-call
review): hitl_app shows the question as a notice in the thread and never crashes on it.

Served as the graph ``question`` (``langgraph.json``); point the app at it with ``HITL_ASSISTANT_ID=question``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt


def ask(state: MessagesState) -> dict[str, Any]:
    """Ask which colour, then say the answer."""
    answer = interrupt("Which colour should the button be?")
    return {"messages": [AIMessage(f"The button will be {answer}.")]}


builder = StateGraph(MessagesState)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
graph = builder.compile()
