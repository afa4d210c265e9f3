"""Keep every tool call answered, whatever way a run ended.

Model providers refuse a history in which an assistant message's tool calls are not each followed
by a tool message answering it (OpenAI: HTTP 400 "An assistant message with 'tool_calls' must be
followed by tool messages responding to each 'tool_call_id'"). A run can end with such calls open:
Stop while a tool runs, a run limit, a failure, or a worker that died. ``answer_open_calls`` writes
one ``ToolMessage(status="error")`` for each open call into the checkpoint, as if the ``tools``
node had answered them, so the next model call sees a paired history and the thread shows why
each call has no result. Results of tool calls that finished before the end are kept.
"""

# Tested by: tests/integration/runs/test_run_endings.py - every way a run ends leaves each tool call answered

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.reviews import clear_executed, finished_after_end, restore_executed

CANCEL_SOURCE = "hitl_run_cancelled"
"""``additional_kwargs["lc_source"]`` of a tool message written for a call the run never answered."""

LATE_SOURCE = "hitl_finished_after_end"
"""``additional_kwargs["lc_source"]`` of a tool message whose call finished after its run ended
(a blocking tool that Stop could not interrupt): its real result, written over the cancel answer."""

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


async def answer_open_calls(
    graph: Any,
    config: dict[str, Any],
    reason: EndReason,
    snapshot: Any = None,
    *,
    session: Callable[[], AsyncSession] | None = None,
) -> int:
    """Answer the thread's open tool calls in its checkpoint; returns how many got a cancel message.

    A parallel call that finished in the step the run ended in has its result only as a pending
    write of that step (LangGraph commits a step's writes when all its tasks end); ``aget_state``
    shows it, but the checkpoint does not hold it. Those results are written here too, with the
    cancel messages of the calls that did not finish, so a finished call keeps its real result.

    Does nothing while a review is pending (those calls wait for the reviewer). ``snapshot`` is the
    thread's current ``StateSnapshot`` if the caller has it. The messages are written with
    ``aupdate_state`` as the ``tools`` node when the graph has one, so the next step is the model.
    ``session`` (opens an app database session): the audit rows of the cancelled calls then lose
    their executed arguments (the call never ran).

    Raises whatever the checkpointer raises (the caller decides whether a failure matters).
    """
    snapshot = snapshot if snapshot is not None else await graph.aget_state(config)
    if any(getattr(i, "value", None) is not None for i in snapshot.interrupts or ()):
        return 0
    calls = open_tool_calls(list((snapshot.values or {}).get("messages", [])))
    finished = list(_finished_results(snapshot).values())
    if not calls and not finished:
        return 0
    cancels = [
        ToolMessage(
            content=cancel_text(reason),
            tool_call_id=call["id"],
            name=call["name"],
            status="error",
            additional_kwargs={"lc_source": CANCEL_SOURCE, "lc_data": {"reason": reason}},
        )
        for call in calls
    ]
    as_node = "tools" if "tools" in getattr(graph, "nodes", {}) else None
    await graph.aupdate_state(config, {"messages": finished + cancels}, as_node=as_node)
    if session is not None and cancels:
        async with session() as db:
            thread_id = str((config.get("configurable") or {}).get("thread_id", ""))
            await clear_executed(session=db, thread_id=thread_id, tool_call_ids=[c.tool_call_id for c in cancels])
    return len(cancels)


def has_cancel_answers(messages: list[BaseMessage]) -> bool:
    """True when a cancel answer (``answer_open_calls``) is in ``messages``: a call it answered may
    have finished after all (``answer_late_results``)."""
    return bool(_cancel_answers(messages))


def _cancel_answers(messages: list[BaseMessage]) -> dict[str, ToolMessage]:
    """The cancel answers ``answer_open_calls`` wrote, by tool call id."""
    return {
        m.tool_call_id: m for m in messages
        if isinstance(m, ToolMessage) and (m.additional_kwargs or {}).get("lc_source") == CANCEL_SOURCE
    }


def _call_args(messages: list[BaseMessage]) -> dict[str, dict[str, Any]]:
    """Tool call id -> the arguments it ran with (the assistant message holds the edited ones)."""
    return {str(tc["id"]): dict(tc.get("args") or {}) for m in messages if isinstance(m, AIMessage)
            for tc in m.tool_calls if tc.get("id")}


async def answer_late_results(
    graph: Any, config: dict[str, Any], snapshot: Any = None, *, session: Callable[[], AsyncSession],
) -> int:
    """Put the real result over each cancel answer whose call finished after all: a blocking tool
    (e.g. ``send_email`` in a worker thread) that Stop or a limit could not interrupt goes on and
    records its result in the effect ledger (``finished_after_end``) after ``answer_open_calls``
    answered it "Cancelled". The thread then shows the call as done, the model reads what it did,
    and the audit row gets its executed arguments back (``restore_executed``). Returns how many
    answers were replaced.

    Does nothing while a review is pending or when no cancel answer is in the thread (no database
    read then). Call it where the thread is not running (under the thread's lock). Raises whatever
    the checkpointer or the database raise.
    """
    snapshot = snapshot if snapshot is not None else await graph.aget_state(config)
    if any(getattr(i, "value", None) is not None for i in snapshot.interrupts or ()):
        return 0
    messages = list((snapshot.values or {}).get("messages", []))
    cancelled = _cancel_answers(messages)
    if not cancelled:
        return 0
    thread_id = str((config.get("configurable") or {}).get("thread_id", ""))
    keys = {f"{thread_id}:{call_id}": call_id for call_id in cancelled}
    async with session() as db:
        found = await finished_after_end(session=db, keys=list(keys))
    if not found:
        return 0
    late = [
        ToolMessage(
            id=cancelled[keys[key]].id, content=result, tool_call_id=keys[key], name=cancelled[keys[key]].name,
            additional_kwargs={"lc_source": LATE_SOURCE},
        )
        for key, result in found.items()
    ]
    as_node = "tools" if "tools" in getattr(graph, "nodes", {}) else None
    await graph.aupdate_state(config, {"messages": late}, as_node=as_node)
    args = _call_args(messages)
    async with session() as db:
        await restore_executed(session=db, thread_id=thread_id,
                               executed={m.tool_call_id: args.get(m.tool_call_id, {}) for m in late})
    return len(late)
