"""Keep every tool call answered, whatever way a run ended.

Model providers refuse a history in which an assistant message's tool calls are not each followed
by a tool message answering it (OpenAI: HTTP 400 "An assistant message with 'tool_calls' must be
followed by tool messages responding to each 'tool_call_id'"). A run can end with such calls open:
Stop while a tool runs, a run limit, a failure, or a worker that died. ``answer_open_calls`` writes
one ``ToolMessage(status="error")`` for each open call into the checkpoint, as if the ``tools``
node had answered them, so the next model call sees a paired history and the thread shows why
each call has no result. Results of tool calls that finished before the end are kept.
"""

# Tested by: tests/integration/threads/test_run_endings.py - every way a run ends leaves each tool call answered

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

CANCEL_SOURCE = "hitl_run_cancelled"
"""``additional_kwargs["lc_source"]`` of a tool message written for a call the run never answered."""

EndReason = Literal["stopped", "time_limit", "step_limit", "failed", "abandoned"]
"""Why a call was left open: Stop, the run's time or step limit, a failed run, or a run that
ended without a trace (a worker that died) and was followed by a new message."""

_TEXTS: dict[EndReason, str] = {
    "stopped": "Cancelled by the user (Stop) before this tool call reported a result.",
    "time_limit": "Cancelled: the run reached its time limit before this tool call reported a result.",
    "step_limit": "Not run: the agent reached its step limit before this tool call ran.",
    "failed": "Not run: the run failed before this tool call reported a result.",
    "abandoned": "Cancelled: the run ended before this tool call reported a result (the server stopped).",
}
_AFTER = (
    " If it had already started, its effect may have happened. Do not retry it unless the user asks."
)


def cancel_text(reason: EndReason) -> str:
    """The text of the tool message written for an open call ended by ``reason``."""
    return _TEXTS[reason] + (_AFTER if reason != "step_limit" else " Do not retry it unless the user asks.")


def open_tool_calls(messages: list[BaseMessage]) -> list[ToolCall]:
    """Tool calls of the last assistant message that no tool message answers yet (in order).

    Returns ``[]`` when the last assistant message has no calls, or when a user message follows it.
    """
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, HumanMessage):
            return []
        if isinstance(message, AIMessage):
            answered = {m.tool_call_id for m in messages[i + 1 :] if isinstance(m, ToolMessage)}
            return [tc for tc in message.tool_calls if tc.get("id") and tc["id"] not in answered]
    return []


def was_stopped(snapshot: Any) -> bool:
    """True when the snapshot's pending tasks carry the cancellation LangGraph records on Stop."""
    for task in getattr(snapshot, "tasks", None) or ():
        error = getattr(task, "error", None)
        if isinstance(error, asyncio.CancelledError) or str(error or "").startswith("CancelledError"):
            return True
    return False


def _finished_results(snapshot: Any) -> dict[str, ToolMessage]:
    """Tool messages of tool tasks that completed in the step the run ended in (by call id)."""
    out: dict[str, ToolMessage] = {}
    for task in getattr(snapshot, "tasks", None) or ():
        result = getattr(task, "result", None)
        found = result.get("messages", []) if isinstance(result, dict) else []
        for message in found if isinstance(found, list) else [found]:
            if isinstance(message, ToolMessage):
                out[message.tool_call_id] = message
    return out


async def answer_open_calls(graph: Any, config: dict[str, Any], reason: EndReason, snapshot: Any = None) -> int:
    """Answer the thread's open tool calls in its checkpoint; returns how many got a cancel message.

    Does nothing while a review is pending (those calls wait for the reviewer). ``snapshot`` is the
    thread's current ``StateSnapshot`` if the caller has it. The messages are written with
    ``aupdate_state`` as the ``tools`` node when the graph has one, so the next step is the model.

    Raises whatever the checkpointer raises (the caller decides whether a failure matters).
    """
    snapshot = snapshot if snapshot is not None else await graph.aget_state(config)
    if any(getattr(i, "value", None) is not None for i in snapshot.interrupts or ()):
        return 0
    calls = open_tool_calls(list((snapshot.values or {}).get("messages", [])))
    if not calls:
        return 0
    finished = _finished_results(snapshot)
    answers: list[ToolMessage] = []
    for call in calls:
        done = finished.get(call["id"] or "")  # open_tool_calls returns calls with an id only
        answers.append(
            done
            if done is not None
            else ToolMessage(
                content=cancel_text(reason),
                tool_call_id=call["id"],
                name=call["name"],
                status="error",
                additional_kwargs={"lc_source": CANCEL_SOURCE, "lc_data": {"reason": reason}},
            )
        )
    as_node = "tools" if "tools" in getattr(graph, "nodes", {}) else None
    await graph.aupdate_state(config, {"messages": answers}, as_node=as_node)
    return sum(1 for a in answers if a.additional_kwargs.get("lc_source") == CANCEL_SOURCE)
