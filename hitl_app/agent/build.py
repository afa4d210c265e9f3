"""Assemble the built-in demo agent: model + demo tools + HITL policy + guard + checkpointer.

Uses ``langchain.agents.create_agent`` with, in this order,
``HumanInTheLoopMiddleware(interrupt_on=..., interrupt_mode="batched")``, ``ReviewNeedMemo``,
``ToolCallsPerMessageLimit(...)`` and ``RepeatedRejectionGuard()``; after_model hooks run in
reverse list order, so the guard sees each model message first (see ``guards.py``), then the
limit answers the calls beyond the per-message limit (see ``call_limit.py``), then the memo takes
each call's "needs review?" answer once (see ``policy.py``), then, given a ``grant_check``,
``GrantGate`` lets the calls a grant covers run without a card (see ``grant_gate.py``), then
the HITL middleware raises the card. ``RejectAndStop`` ends the run before the next model call
after a "reject and stop" (``guards.py``). Last, ``OwnerWorkspaceSetup`` creates the run owner's
workspace when a run starts. The state keeps ``messages`` as deltas (``state.py``), so a turn's
checkpoint bytes do not grow with the thread's length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, InterruptOnConfig
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from hitl_app.agent.call_limit import ToolCallsPerMessageLimit, skip_answered_calls
from hitl_app.agent.grant_gate import GrantCheck, GrantGate, skip_granted_calls
from hitl_app.agent.guards import RejectAndStop, RepeatedRejectionGuard
from hitl_app.agent.policy import (
    DEFAULT_POLICY,
    PolicyRule,
    interrupt_on_from_policy,
)
from hitl_app.agent.policy_checks import check_rights_arguments
from hitl_app.agent.review_need import ReviewNeedMemo
from hitl_app.agent.state import DeltaAgentState
from hitl_app.agent.tools import OwnerWorkspaceSetup, build_tools
from hitl_app.agent.workspace import DemoWorkspace

SYSTEM_PROMPT = (
    "You are a careful assistant with tools for email, files in a sandbox and a small SQL "
    "database. Some tool calls are reviewed by a person before they run; if a call is rejected, "
    "do not propose it again unless the user asks. Answer briefly."
)


@dataclass
class AgentBundle:
    """The compiled agent and what the rest of the app needs to know about it.

    Attributes:
        graph: the compiled LangGraph agent (``create_agent`` result).
        tools_by_name: tool name -> BaseTool (e.g. to validate edited args against
            ``tool.tool_call_schema``).
        policy_rules: the rules the agent was built with.
        interrupt_on: the ``interrupt_on`` mapping given to HumanInTheLoopMiddleware.
    """

    graph: Any
    tools_by_name: dict[str, BaseTool]
    policy_rules: list[PolicyRule] = field(default_factory=list)
    interrupt_on: dict[str, bool | InterruptOnConfig] = field(default_factory=dict)


def arg_names(tool: BaseTool) -> set[str]:
    """The names of a tool's arguments: its pydantic call schema's fields, or the ``properties`` of
    a JSON-schema ``args_schema`` (an MCP tool's ``inputSchema``)."""
    schema = tool.args_schema
    if isinstance(schema, dict):
        props = schema.get("properties")
        return set(props) if isinstance(props, dict) else set()
    return set(getattr(tool.tool_call_schema, "model_fields", {}))


def build_demo_agent(
    *,
    model: BaseChatModel,
    workspace: DemoWorkspace,
    checkpointer: BaseCheckpointSaver | None,
    policy_rules: list[PolicyRule] = DEFAULT_POLICY,
    grant_check: GrantCheck | None = None,
    extra_tools: Sequence[BaseTool] = (),
) -> AgentBundle:
    """Build the demo agent. Calls ``workspace.ensure()`` (idempotent).

    One model message may start at most ``workspace.limits.max_tool_calls_per_message`` tool
    calls; the rest are answered with an error and never run. ``grant_check`` (optional) answers
    whether a grant covers a call that would get a card (see ``GrantGate``).

    Raises:
        PolicyError: an invalid rule, or a review-rights ``when`` on an argument the tool lacks.
    """
    workspace.ensure()
    tools = [*build_tools(workspace), *extra_tools]
    check_rights_arguments(list(policy_rules), {t.name: arg_names(t) for t in tools})
    policy_interrupt_on = interrupt_on_from_policy(list(policy_rules), workspace.demo_db_path)
    interrupt_on = skip_answered_calls(policy_interrupt_on)  # calls over the limit already have an answer
    if grant_check is not None:
        interrupt_on = skip_granted_calls(interrupt_on)
    gate = [GrantGate(policy_interrupt_on, grant_check)] if grant_check is not None else []
    graph = create_agent(
        model,
        tools,
        system_prompt=SYSTEM_PROMPT,
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on=interrupt_on, interrupt_mode="batched"),
            *gate,
            ReviewNeedMemo(policy_interrupt_on),
            ToolCallsPerMessageLimit(workspace.limits.max_tool_calls_per_message),
            RepeatedRejectionGuard(),
            RejectAndStop(),
            OwnerWorkspaceSetup(workspace),
        ],
        checkpointer=checkpointer,
        state_schema=DeltaAgentState,
    )
    return AgentBundle(
        graph=graph,
        tools_by_name={t.name: t for t in tools},
        policy_rules=list(policy_rules),
        interrupt_on=interrupt_on,
    )
