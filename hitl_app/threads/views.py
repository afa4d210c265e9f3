"""Read a thread from its checkpoint: message views, the pending review, the run status.

These are the small typed views the UI renders (table and graph
objects are not handed to the UI). Reading never runs the graph.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from hitl_app.desk.desk_view import DeskView
from hitl_app.review.tool_messages import Edited, Plain, Rejected, Responded, Stopped, read_tool_message
from hitl_app.review.types import PendingReview, describe_interrupt, parse_hitl_request
from hitl_app.runs.errors import describe_error_text, describe_run_error
from hitl_app.runs.pairing import CANCEL_SOURCE
from hitl_app.runs.partial import cut_error, cut_reason

Outcome = Literal["executed", "edited", "rejected", "answered", "error", "stopped", "cancelled"]
ThreadStatus = Literal["idle", "review", "incomplete", "failed"]


class ToolCallView(BaseModel):
    """A tool call the assistant proposed: ``id``, ``name`` and ``args``."""

    id: str
    name: str
    args: dict[str, Any]


class MessageView(BaseModel):
    """One message as the UI shows it.

    ``role`` is ``user``, ``assistant`` or ``tool``. Tool messages carry the tool ``name``, the
    ``tool_call_id`` they answer, the ``outcome`` and the arguments the tool ran with
    (``args``: the edited ones after an edit). ``result`` is the tool's output without the edit
    notice. ``proposed_args`` are the arguments the model proposed, set only when a reviewer
    edited them (``args`` then being what ran). ``cut`` says why an assistant reply ends early
    (``"stopped"``, ``"time_limit"``, ``"failed"``; ``""`` for a whole one, see ``runs.partial``).
    """

    key: str
    role: Literal["user", "assistant", "tool"]
    text: str
    tool_calls: list[ToolCallView] = []
    tool_name: str | None = None
    tool_call_id: str | None = None
    outcome: Outcome | None = None
    args: dict[str, Any] | None = None
    result: str | None = None
    proposed_args: dict[str, Any] | None = None
    cut: str = ""


class CardStatus(BaseModel):
    """Where one approval card stands, for the person viewing it.

    ``progress`` is the card's line (``"1 of 2 approvals: Dana"``, ``"Rejected by Lee"``) and
    ``show_progress`` says whether it is worth showing (several approvals needed, or someone
    decided already). ``deciders`` lists who decided so far (``"Dana approved"``). ``allowed``
    are the decision types the viewer may send now (their buttons); ``note`` says why others are
    closed (``"transfer_funds needs a reviewer; you are a member"``); ``who`` who may decide.
    ``standing`` is the card for the viewer: ``open`` (theirs to decide), ``waiting`` (someone
    else must decide it, or their approval is in and another is needed) or ``complete``
    (``review.draft.standing``). ``remaining``: approvals it still needs (0 when complete);
    ``yours``: the viewer's own decision is recorded on it; ``others``: who besides the person who
    asked may decide it, in words (``"a reviewer"``), or when only they may, their name (``"Max"``;
    ``""`` when unknown): whom the card waits for when it is not the viewer's.
    """

    index: int
    progress: str = ""
    show_progress: bool = False
    complete: bool = False
    needed: int = 1
    deciders: list[str] = []
    allowed: list[str] = []
    note: str = ""
    who: str = ""
    standing: str = "open"
    remaining: int = 0
    yours: bool = False
    others: str = ""


class ThreadView(BaseModel):
    """A thread as loaded from its checkpoint.

    ``status``: ``review`` (a review is pending), ``incomplete`` (the last run stopped before it
    finished: Continue re-runs from the checkpoint), ``failed`` (the last run raised, or the agent
    paused with an interrupt that is not a tool-call review: ``error`` says which), or ``idle``.
    ``cards`` (one per pending action request, filled by ``ThreadService.load``) say who decided
    what so far and what the viewer may decide; ``read_only`` is True for a viewer who does not
    own the thread (no composer: they may only decide the cards ``cards`` opens to them).
    ``owner`` is the thread's owner (whose workspace its tools act on; ``load`` fills it).
    """

    thread_id: str
    messages: list[MessageView]
    pending: PendingReview | None
    status: ThreadStatus
    error: str | None = None
    checkpoint_id: str | None = None
    cards: list[CardStatus] = []
    read_only: bool = False
    desk: DeskView | None = None
    owner: str = ""
    review_lost: bool = False
    """The agent deployment lost this thread while a review waited in it (``threads/lost.py``)."""


def _tool_outcome(msg: ToolMessage) -> tuple[Outcome, dict[str, Any] | None, str]:
    """(outcome, executed args if edited, result text) of a ToolMessage.

    The HITL conventions (reject/respond metadata, the edit notice) are read by
    ``hitl_app.review.tool_messages``; a guard's refusal is an ``error`` here, as its status says.
    """
    extra = getattr(msg, "additional_kwargs", None) or {}
    if extra.get("lc_source") == CANCEL_SOURCE and (extra.get("lc_data") or {}).get("reason") != "failed":
        # Stop, a time or step limit, a stopped server: the tool did not fail, the run ended around it
        return "cancelled", None, str(msg.content)
    match read_tool_message(msg):
        case Rejected(text=text):
            return "rejected", None, text
        case Responded(answer=answer):
            return "answered", None, answer
        case Edited(args=args, result=result, failed=failed, text=text):
            return ("error" if failed else "edited"), args, result or text
        case Stopped(text=text) | Plain(text=text, failed=True):
            return "error", None, text
        case Plain(text=text):
            return "executed", None, text
    raise AssertionError("unreachable: read_tool_message returned an unknown kind")


def message_views(messages: list[BaseMessage]) -> list[MessageView]:
    """Map checkpointed messages to views (system messages are skipped).

    Text is read with ``message.text``, which works for both string content and v3 content
    blocks (reading ``content`` directly would show the raw block list).
    """
    calls: dict[str, ToolCallView] = {}
    out: list[MessageView] = []
    for i, m in enumerate(messages):
        key = m.id or f"m{i}"
        if isinstance(m, HumanMessage):
            out.append(MessageView(key=key, role="user", text=m.text))
        elif isinstance(m, AIMessage):
            tcs = [ToolCallView(id=tc.get("id") or "", name=tc["name"], args=tc.get("args") or {}) for tc in m.tool_calls]
            for tc in tcs:
                calls[tc.id] = tc
            out.append(MessageView(key=key, role="assistant", text=m.text, tool_calls=tcs, cut=cut_reason(m)))
        elif isinstance(m, ToolMessage):
            outcome, edited_args, result = _tool_outcome(m)
            call = calls.get(m.tool_call_id)
            args = edited_args if edited_args is not None else (call.args if call else None)
            out.append(
                MessageView(
                    key=key,
                    role="tool",
                    text=result,
                    tool_name=m.name or (call.name if call else "tool"),
                    tool_call_id=m.tool_call_id,
                    outcome=outcome,
                    args=args,
                    result=result,
                    proposed_args=call.args if call is not None and edited_args is not None else None,
                )
            )
    return out


def pending_review_from_interrupts(
    thread_id: str, interrupts: Any, messages: list[BaseMessage], checkpoint_id: str | None = None
) -> PendingReview | None:
    """Build the pending review from a snapshot's interrupts (the first HITL request among them).

    The tool call id of each action request is matched, in order, against the last assistant
    message's tool calls with the same name and arguments (auto-approved calls are skipped).
    Returns ``None`` when nothing is pending or no interrupt is a HITL request (see
    ``unanswerable_interrupt`` for those).
    """
    for intr in interrupts or ():
        request = parse_hitl_request(getattr(intr, "value", None))
        if request is None:
            continue
        last_ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        remaining = list(last_ai.tool_calls) if last_ai else []
        ids: list[str | None] = []
        for action in request.action_requests:
            found = None
            for j, tc in enumerate(remaining):
                if tc["name"] == action.name and (tc.get("args") or {}) == action.args:
                    found = tc.get("id")
                    del remaining[: j + 1]
                    break
            ids.append(found)
        return PendingReview(
            thread_id=thread_id,
            interrupt_id=intr.id,
            action_requests=request.action_requests,
            review_configs=request.review_configs,
            tool_call_ids=tuple(ids),
            checkpoint_id=checkpoint_id,
        )
    return None


def unanswerable_interrupt(interrupts: Any) -> str | None:
    """A readable notice for a pending interrupt that is not a HITL request, else ``None``.

    A custom agent may call ``interrupt(...)`` with any value; this app can only answer
    ``HumanInTheLoopMiddleware`` requests, so the thread shows what the agent asked instead of
    approval cards.
    """
    for intr in interrupts or ():
        value = getattr(intr, "value", None)
        if parse_hitl_request(value) is None:
            return (
                "The agent paused with a request this app cannot answer (it is not a tool-call "
                f"review): {describe_interrupt(value)}"
            )
    return None


def _was_stopped(error: Any) -> bool:
    """True for the error LangGraph records on a task cancelled by Stop (or by a lost connection).

    A stopped run is not a failure: the thread is ``incomplete`` (Continue), not ``failed`` with
    "CancelledError()" shown as if the model had broken.
    """
    if isinstance(error, BaseException):
        return isinstance(error, asyncio.CancelledError)
    return str(error).startswith("CancelledError")


def thread_view_from_snapshot(thread_id: str, snapshot: Any) -> ThreadView:
    """Build a ``ThreadView`` from ``await graph.aget_state(config)``'s StateSnapshot."""
    values = snapshot.values if isinstance(getattr(snapshot, "values", None), dict) else {}
    messages: list[BaseMessage] = list(values.get("messages", []))
    checkpoint_id = (snapshot.config or {}).get("configurable", {}).get("checkpoint_id") if snapshot.config else None
    pending = pending_review_from_interrupts(thread_id, snapshot.interrupts, messages, checkpoint_id)
    error = next(
        (
            describe_run_error(t.error) if isinstance(t.error, BaseException) else describe_error_text(str(t.error))
            for t in (snapshot.tasks or ())
            if getattr(t, "error", None) and not _was_stopped(t.error)
        ),
        None,
    )
    if pending is None and error is None:
        error = unanswerable_interrupt(snapshot.interrupts)
    if error is None and snapshot.next and messages:
        error = cut_error(messages[-1])  # a reply cut off by an error or the time limit: Retry asks the model again
    if pending is not None:
        status: ThreadStatus = "review"
    elif error:
        status = "failed"
    elif snapshot.next:
        status = "incomplete"
    else:
        status = "idle"
    return ThreadView(
        thread_id=thread_id,
        messages=message_views(messages),
        pending=pending,
        status=status,
        error=error,
        checkpoint_id=checkpoint_id,
    )
