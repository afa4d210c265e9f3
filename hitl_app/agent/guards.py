"""Stop a model that re-proposes an action the reviewer already rejected in this turn.

Without it, a model that ignores a rejection proposes the identical call again and the reviewer
gets an endless chain of identical cards.

``RepeatedRejectionGuard`` is an ``AgentMiddleware`` with an ``after_model`` hook. It must run
BEFORE ``HumanInTheLoopMiddleware.after_model`` so no approval card is raised for the repeat. In
langchain 1.5.2 ``create_agent`` chains after_model hooks in REVERSE list order
(``langchain/agents/factory.py``: ``model -> middleware_w_after_model[-1] -> ... -> [0]``), so list
the guard AFTER the HITL middleware: ``middleware=[HumanInTheLoopMiddleware(...),
RepeatedRejectionGuard()]``.

A rejection is recognised by ``hitl_app.review.tool_messages`` (the ToolMessage HITL writes for a
``reject`` decision). The rejected call's name and args are read from the AIMessage that issued
that tool call id (HITL keeps the model's call in the message). "This turn" means the messages
after the last ``HumanMessage``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain_core.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from langgraph.runtime import Runtime

from hitl_app.review.tool_messages import GUARD_SOURCE, Rejected, read_tool_message

REPEAT_TEXT = (
    "Not executed: the reviewer already rejected this exact action ({name} with the same "
    "arguments) in this turn{reason}. Do not retry it unless the user explicitly asks for it."
)
SIBLING_TEXT = (
    "Not executed: the turn was stopped because another call in the same step repeated an "
    "action the reviewer had already rejected."
)


def call_signature(tool_call: Mapping[str, Any]) -> tuple[str, str]:
    """``(name, canonical JSON of args)``: two calls are identical when these are equal."""
    return tool_call.get("name", ""), json.dumps(
        tool_call.get("args") or {}, sort_keys=True, default=str
    )


def rejected_in_turn(messages: list[Any]) -> set[tuple[str, str]]:
    """Signatures of the calls a reviewer rejected since the last HumanMessage.

    ``messages`` is the agent state's message list; the last message is not inspected as a
    proposal (it is the one being checked).
    """
    return set(rejection_reasons(messages))


def rejection_reasons(messages: list[Any]) -> dict[tuple[str, str], str]:
    """Signature -> the reviewer's reason (``""`` when none) of each call rejected since the last
    HumanMessage (the latest rejection of a signature wins)."""
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            start = i
            break
    calls: dict[str | None, ToolCall] = {}
    rejected: dict[tuple[str, str], str] = {}
    for m in messages[start:]:
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                calls[tc["id"]] = tc
        elif isinstance(m, ToolMessage) and isinstance(read := read_tool_message(m), Rejected):
            if (call := calls.get(m.tool_call_id)) is not None:
                rejected[call_signature(call)] = read.reason or ""
    return rejected


def _repeat_text(name: str, reason: str) -> str:
    flat = " ".join(reason.split())[:500]
    return REPEAT_TEXT.format(name=name, reason=f" (the reviewer rejected this exact call: {flat})" if flat else "")


class RepeatedRejectionGuard(AgentMiddleware):
    """Ends the turn when the model re-proposes a call already rejected in this turn.

    When the last AIMessage contains a tool call whose (name, args) equal a call rejected since
    the last HumanMessage, the hook returns (and ``jump_to="end"``):

    * one ``ToolMessage(status="error")`` per tool call of that AIMessage (pairing holds), with
      ``additional_kwargs["lc_source"] == GUARD_SOURCE``: the repeat says it was not
      executed because the reviewer already rejected it and must not be retried unless the user
      asks; the others say the turn was stopped;
    * an AIMessage telling the user the agent stopped and why.

    Otherwise it returns None and the HITL middleware proceeds as usual.
    """

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """See the class docstring. Returns a state update or None."""
        messages = list(state["messages"])
        if not messages or not isinstance(messages[-1], AIMessage) or not messages[-1].tool_calls:
            return None
        last: AIMessage = messages[-1]
        rejected = rejection_reasons(messages[:-1])
        repeats = [tc for tc in last.tool_calls if call_signature(tc) in rejected]
        if not repeats:
            return None
        answers = []
        for tc in last.tool_calls:
            is_repeat = call_signature(tc) in rejected
            answers.append(
                ToolMessage(
                    content=_repeat_text(tc["name"], rejected[call_signature(tc)]) if is_repeat else SIBLING_TEXT,
                    name=tc["name"],
                    tool_call_id=tc["id"],
                    status="error",
                    additional_kwargs={"lc_source": GUARD_SOURCE, "lc_data": {"repeat": is_repeat}},
                )
            )
        names = ", ".join(dict.fromkeys(tc["name"] for tc in repeats))
        notice = AIMessage(
            content=(
                f"I stopped here: I proposed {names} again with the same arguments after you "
                "rejected it in this turn, so it was not executed and I will not retry it. "
                "Tell me if you want it done anyway."
            ),
            additional_kwargs={"lc_source": GUARD_SOURCE},
        )
        return {"messages": [*answers, notice], "jump_to": "end"}

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Async variant of ``after_model`` (same logic, no I/O)."""
        return self.after_model(state, runtime)


class RejectAndStop(AgentMiddleware):
    """Ends the run after a "reject and stop" (``RejectDecision.stop``): before the model is called
    again, when a tool message of the last step is such a rejection, the run ends with a short
    assistant message saying so (the tool messages are already there: pairing holds). A plain
    reject ("reject and tell") goes on to the model with its reason."""

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """See the class docstring. Returns a state update or None."""
        messages = list(state["messages"])
        stopped: list[str] = []
        for m in reversed(messages):
            if not isinstance(m, ToolMessage):
                break
            read = read_tool_message(m)
            if isinstance(read, Rejected) and read.stopped:
                stopped.append(m.name or "the call")
        if not stopped:
            return None
        names = ", ".join(dict.fromkeys(reversed(stopped)))
        notice = AIMessage(
            content=f"Stopped: the reviewer rejected {names} and stopped the run, so I will not retry it. "
                    "Tell me if you want something else.",
            additional_kwargs={"lc_source": GUARD_SOURCE},
        )
        return {"messages": [notice], "jump_to": "end"}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Async variant of ``before_model`` (same logic, no I/O)."""
        return self.before_model(state, runtime)
