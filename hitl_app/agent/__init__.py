"""The agent room: LangChain/LangGraph plus the pure ``hitl_app.review`` (never reflex, ui or threads).

Public API: ``DemoChatModel``, ``DemoWorkspace``, ``build_tools``, ``resolve_in_sandbox``,
``SandboxError``, ``is_read_only_sql``, ``ToolLimits``, ``PolicyRule``, ``DEFAULT_POLICY``, ``PolicyError``,
``interrupt_on_from_policy``, ``ReviewNeedMemo``, ``load_policy_toml``, ``RepeatedRejectionGuard``,
``make_model``, ``ModelConfigError``, ``open_checkpointer``, ``AgentBundle``, ``build_demo_agent``.
"""

from hitl_app.agent.build import AgentBundle, build_demo_agent
from hitl_app.agent.checkpoint import open_checkpointer
from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent.guards import RepeatedRejectionGuard
from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.models import ModelConfigError, make_model
from hitl_app.agent.policy import (
    DEFAULT_POLICY,
    PolicyError,
    PolicyRule,
    interrupt_on_from_policy,
    load_policy_toml,
)
from hitl_app.agent.review_need import ReviewNeedMemo
from hitl_app.agent.sandbox import SandboxError, resolve_in_sandbox
from hitl_app.agent.sql_guard import is_read_only_sql
from hitl_app.agent.tools import build_tools
from hitl_app.agent.workspace import DemoWorkspace

__all__ = [
    "DEFAULT_POLICY",
    "AgentBundle",
    "DemoChatModel",
    "DemoWorkspace",
    "ModelConfigError",
    "PolicyError",
    "PolicyRule",
    "RepeatedRejectionGuard",
    "ReviewNeedMemo",
    "SandboxError",
    "ToolLimits",
    "build_demo_agent",
    "build_tools",
    "interrupt_on_from_policy",
    "is_read_only_sql",
    "load_policy_toml",
    "make_model",
    "open_checkpointer",
    "resolve_in_sandbox",
]
