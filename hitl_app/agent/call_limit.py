"""At most N tool calls per model message: the rest are answered with an error and never run.

``ToolCallsPerMessageLimit`` is an ``AgentMiddleware`` with an ``after_model`` hook. When the
model's last message asks for more than ``max_calls`` tool calls, it answers each call after the
first ``max_calls`` with a ``ToolMessage(status="error")`` saying so (the message keeps all its
calls, so every call stays paired with exactly one answer). create_agent's tools edge only runs
calls that have no answer yet, so the extra calls never run.

The hook must run BEFORE ``HumanInTheLoopMiddleware.after_model`` (list it after the HITL
middleware: create_agent chains after_model hooks in reverse list order), and the HITL
``interrupt_on`` must not ask about calls that already have an answer: wrap it with
``skip_answered_calls``.
"""

# Tested by: tests/unit/agent/test_tool_bounds.py

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, InterruptOnConfig
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime

LIMIT_SOURCE = "hitl_tool_call_limit"
"""``additional_kwargs["lc_source"]`` of the answers this middleware writes."""

LIMIT_TEXT = (
    "Not run: one message may start at most {limit} tool calls, and this was call {n} of {total}. "
    "Ask for fewer actions at a time."
)


class ToolCallsPerMessageLimit(AgentMiddleware):
    """Answers the tool calls of one model message beyond ``max_calls`` with an error (see module).

    Args:
        max_calls: the most tool calls one model message may start (at least 1).
    """

    def __init__(self, max_calls: int = 20) -> None:
        super().__init__()
        self.max_calls = max(1, int(max_calls))

    def after_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Return ``{"messages": [error ToolMessage, ...]}`` for the extra calls, or None."""
        messages = state["messages"]
        if not messages or not isinstance(messages[-1], AIMessage):
            return None
        calls = messages[-1].tool_calls
        if len(calls) <= self.max_calls:
            return None
        answers = [
            ToolMessage(
                content=LIMIT_TEXT.format(limit=self.max_calls, n=i + 1, total=len(calls)),
                name=tc["name"],
                tool_call_id=tc["id"],
                status="error",
                additional_kwargs={"lc_source": LIMIT_SOURCE},
            )
            for i, tc in enumerate(calls)
            if i >= self.max_calls
        ]
        return {"messages": answers}

    async def aafter_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Async variant of ``after_model`` (same logic, no I/O)."""
        return self.after_model(state, runtime)


def _answered(request: Any) -> bool:
    """True when the state already holds a ToolMessage for ``request.tool_call``."""
    call_id = request.tool_call.get("id")
    state = getattr(request, "state", None) or {}
    for message in reversed(state.get("messages", []) if isinstance(state, Mapping) else []):
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            return True
        if isinstance(message, AIMessage):
            return False
    return False


def skip_calls(
    interrupt_on: Mapping[str, bool | InterruptOnConfig], skip: Callable[[Any], bool]
) -> dict[str, bool | InterruptOnConfig]:
    """A copy of ``interrupt_on`` whose ``when`` is False for tool-call requests ``skip`` picks.

    Args:
        interrupt_on: the HITL middleware's map, tool name -> ``True``/``False`` or an
            ``InterruptOnConfig`` (its optional ``when(request) -> bool`` is kept for the others).
        skip: ``skip(request) -> bool`` on the middleware's tool-call request (``.tool_call``, ``.state``).
    """

    def wrap(when: Callable[[Any], bool] | None) -> Callable[[Any], bool]:
        def guarded(request: Any) -> bool:
            if skip(request):
                return False
            return True if when is None else bool(when(request))

        return guarded

    out: dict[str, bool | InterruptOnConfig] = {}
    for name, config in interrupt_on.items():
        if isinstance(config, Mapping):
            out[name] = {**config, "when": wrap(config.get("when"))}
        else:
            out[name] = config
    return out


def skip_answered_calls(interrupt_on: Mapping[str, bool | InterruptOnConfig]) -> dict[str, bool | InterruptOnConfig]:
    """A copy of ``interrupt_on`` whose ``when`` is False for calls that already have an answer."""
    return skip_calls(interrupt_on, _answered)
