"""A call's "needs review?" answer, taken once: the policy's named conditions as HITL ``when``
predicates (``PolicyCondition``) and the middleware that stores each call's answer in graph state
right after the model proposes it (``ReviewNeedMemo``), so the review raised and the run resumed
see the same answer, even in another process or after the data changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

REVIEW_NEED_KEY = "hitl_review_needed"
"""Graph state key: ``{tool_call_id: True if the call pauses for review}`` for the last model message."""


class PolicyCondition:
    """A rule's named condition as a HITL ``when`` predicate whose answer is taken once per call.

    Args:
        name: the condition's key in ``CONDITIONS`` (for messages).
        predicate: ``args -> bool`` (True = pause), evaluated on the live data.

    Called with a ``ToolCallRequest``: returns the answer ``ReviewNeedMemo`` stored in
    ``request.state[REVIEW_NEED_KEY]`` for ``request.tool_call["id"]``; only when there is none
    (no memo middleware, or a checkpoint written before it existed) is ``predicate`` asked now.
    """

    def __init__(self, name: str, predicate: Callable[[Mapping[str, Any]], bool]) -> None:
        self.name = name
        self.predicate = predicate

    def evaluate(self, args: Mapping[str, Any]) -> bool:
        """The live answer for a call's ``args`` (True = pause)."""
        return bool(self.predicate(args or {}))

    def __call__(self, request: Any) -> bool:
        """Whether the tool call in ``request`` (a LangChain ``ToolCallRequest``) must pause for review."""
        state = getattr(request, "state", None)
        memo = state.get(REVIEW_NEED_KEY) if isinstance(state, Mapping) else None
        call_id = request.tool_call.get("id")
        if isinstance(memo, Mapping) and call_id in memo:
            return bool(memo[call_id])
        return self.evaluate(request.tool_call.get("args") or {})

    def __repr__(self) -> str:
        return f"PolicyCondition({self.name!r})"


class _ReviewNeedState(AgentState):
    hitl_review_needed: NotRequired[Annotated[dict[str, bool], PrivateStateAttr]]


class ReviewNeedMemo(AgentMiddleware):
    """Takes each tool call's "needs review?" answer once, right after the model proposes it.

    For every tool call of the last AIMessage whose tool has a ``PolicyCondition`` in
    ``interrupt_on``, it stores ``condition.evaluate(args)`` under the call id in graph state
    (``REVIEW_NEED_KEY``; a private key, so a thread's input cannot set it). An answer already
    stored for that id is kept. The HITL middleware's ``when`` then reads it, both when the review
    is raised and when the run resumes, even in another process or after the data changed.

    Must run BEFORE ``HumanInTheLoopMiddleware.after_model``: ``create_agent`` runs after_model
    hooks in reverse list order, so list it AFTER the HITL middleware.

    Args:
        interrupt_on: the mapping built by ``interrupt_on_from_policy``.
    """

    state_schema = _ReviewNeedState

    def __init__(self, interrupt_on: Mapping[str, Any]) -> None:
        super().__init__()
        self.conditions: dict[str, PolicyCondition] = {
            tool: config["when"]
            for tool, config in interrupt_on.items()
            if isinstance(config, Mapping) and isinstance(config.get("when"), PolicyCondition)
        }

    def after_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Returns ``{REVIEW_NEED_KEY: {tool_call_id: bool}}`` for the last AIMessage, or None."""
        last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        stored = state.get(REVIEW_NEED_KEY)
        known: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
        answers: dict[str, bool] = {}
        for tool_call in last.tool_calls if last is not None else ():
            condition = self.conditions.get(tool_call["name"])
            call_id = tool_call.get("id")
            if condition is None or not call_id:
                continue
            if call_id in known:
                answers[call_id] = bool(known[call_id])
            else:
                answers[call_id] = condition.evaluate(tool_call.get("args") or {})
        if not answers and not known:
            return None
        return {REVIEW_NEED_KEY: answers}

    async def aafter_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Async variant of ``after_model`` (same logic; the conditions do only local reads)."""
        return self.after_model(state, runtime)
