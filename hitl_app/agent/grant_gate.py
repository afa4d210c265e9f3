"""Grants checked before a review is raised: a call a grant covers runs without a card.

``GrantGate`` is an ``AgentMiddleware`` whose async ``after_model`` hook runs just before
``HumanInTheLoopMiddleware.after_model`` (list it AFTER the HITL middleware: create_agent runs
after_model hooks in reverse list order). For every call of the last model message that would
pause for review (its tool is in ``interrupt_on``, it has no answer yet, and the rule's condition
says it needs one), it asks ``check(thread_id, owner, tool_call)``; a call a grant covers gets
the grant's line in graph state (``GRANTED_KEY``, checkpointed, private), and the HITL ``when``
(wrapped by ``skip_granted_calls``) then says no review, when the review is raised and when the
run resumes. The check itself (find the grant, write the audit record, count the use) belongs to
the caller (``hitl_app.desk.grant_check``): agent/ knows nothing of the app's database.

The sync ``after_model`` checks nothing (the app runs agents async); a failing check counts as
"no grant", so the call gets a card.

Agents without this middleware (``HITL_AGENT``) get the same rule at the server, on each review as
it arrives (``hitl_app.desk.grant_check.InterruptGrants``). A call this gate approved never
reaches a review, so the two never approve one call twice.
"""

# Tested by: tests/integration/desk/test_review_desk.py - a granted call runs without a card

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, InterruptOnConfig
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from hitl_app.agent.call_limit import skip_calls
from hitl_app.agent.review_need import REVIEW_NEED_KEY, PolicyCondition

log = logging.getLogger("hitl_app.agent")

GRANTED_KEY = "hitl_granted"
"""Graph state key: ``{tool_call_id: "approved by grant: ..."}`` for the last model message."""

GrantCheck = Callable[[str, str, Mapping[str, Any]], Awaitable[str | None]]
"""``(thread_id, owner, tool_call) -> the grant's line, or None``; records the use when it answers."""


class _GrantState(AgentState):
    hitl_granted: NotRequired[Annotated[dict[str, str], PrivateStateAttr]]


class GrantGate(AgentMiddleware):
    """Marks the calls a grant covers so the HITL middleware lets them run (see the module).

    Args:
        interrupt_on: the HITL mapping (tool -> config; a tool missing never pauses anyway).
        check: the grant check (``GrantCheck``).
    """

    state_schema = _GrantState

    def __init__(self, interrupt_on: Mapping[str, Any], check: GrantCheck) -> None:
        super().__init__()
        self.interrupt_on = dict(interrupt_on)
        self.check = check

    def after_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Sync runs check no grants (every reviewed call gets its card)."""
        return None

    async def aafter_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Returns ``{GRANTED_KEY: {tool_call_id: line}}`` for the last model message, or None."""
        messages = state["messages"]
        found = next(((i, m) for i, m in reversed(list(enumerate(messages))) if isinstance(m, AIMessage)), None)
        if found is None:
            return None
        last_at, last = found
        answered = {m.tool_call_id for m in messages[last_at + 1:] if isinstance(m, ToolMessage)}
        stored_known, stored_memo = state.get(GRANTED_KEY), state.get(REVIEW_NEED_KEY)
        known: Mapping[str, str] = stored_known if isinstance(stored_known, Mapping) else {}
        memo: Mapping[str, bool] = stored_memo if isinstance(stored_memo, Mapping) else {}
        configurable = (get_config().get("configurable") or {})
        thread_id, owner = str(configurable.get("thread_id") or ""), str(configurable.get("owner") or "")
        granted: dict[str, str] = {}
        for call in last.tool_calls:
            call_id = call.get("id")
            if not call_id or call_id in answered or not self._reviewed(call, memo):
                continue
            if call_id in known:
                granted[call_id] = known[call_id]
                continue
            try:
                line = await self.check(thread_id, owner, call)
            except Exception:  # noqa: BLE001 - no answer from the grants: a person decides
                log.exception("grant check failed thread=%s tool=%s; the call gets a card", thread_id, call["name"])
                line = None
            if line:
                granted[call_id] = line
        if not granted and not known:
            return None
        return {GRANTED_KEY: granted}

    def _reviewed(self, call: Mapping[str, Any], memo: Mapping[str, bool]) -> bool:
        """True when the policy would raise a card for ``call``."""
        config = self.interrupt_on.get(call["name"])
        if not config:
            return False
        when = config.get("when") if isinstance(config, Mapping) else None
        if isinstance(when, PolicyCondition):
            return bool(memo.get(call["id"], when.evaluate(call.get("args") or {})))
        return True


def _granted(request: Any) -> bool:
    """True when ``GrantGate`` marked ``request.tool_call`` as covered by a grant."""
    state = getattr(request, "state", None)
    granted = state.get(GRANTED_KEY) if isinstance(state, Mapping) else None
    return isinstance(granted, Mapping) and request.tool_call.get("id") in granted


def skip_granted_calls(interrupt_on: Mapping[str, bool | InterruptOnConfig]) -> dict[str, bool | InterruptOnConfig]:
    """A copy of ``interrupt_on`` whose ``when`` is False for the calls ``GrantGate`` marked."""
    return skip_calls(interrupt_on, _granted)
