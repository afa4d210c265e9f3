"""Open the checkpointer and build the agent the settings ask for, with its edit validators.

``HITL_AGENT`` unset: the built-in demo agent (``hitl_app.agent.build``), with the policy from
``HITL_POLICY`` (a TOML file) or the default one.

``HITL_AGENT=package.module:attribute``: a developer's agent. The attribute is either

- a **factory** ``make_agent(checkpointer) -> compiled graph`` (preferred): the app calls it once
  with the app's checkpointer (SQLite or PostgreSQL from ``DATABASE_URL``); or
- a **compiled graph** (``create_agent(...)`` result). A compiled graph carries the checkpointer it
  was compiled with, and it cannot be recompiled from the outside; the app therefore uses a shallow
  copy of it bound to the app's checkpointer (``Pregel.copy(update={"checkpointer": ...})``, the
  same field ``compile(checkpointer=...)`` sets). If the graph had a checkpointer of its own, that
  one is NOT used (a warning is logged): the thread index, the audit records and every worker must
  see the same checkpoints, which only the app's database guarantees.

The agent should be made with ``create_agent`` + ``HumanInTheLoopMiddleware``: cards come from its
interrupts. A graph without a ``messages`` channel is refused; one without the HITL middleware
works but never asks for a review (a warning is logged). Edit validation uses each tool's
model-facing args schema (``BaseTool.tool_call_schema``) when the tools can be found (the graph's
``"tools"`` node is a ``ToolNode`` with ``tools_by_name``); otherwise an edit is only checked to be
a JSON object. ``HITL_POLICY`` and ``HITL_MCP`` are for the built-in agent only (your agent sets its own
tools and ``interrupt_on``); setting both is refused. ``HITL_MCP`` gives the built-in agent the
tools of MCP servers (``hitl_app.agent.mcp``), reviewed by the policy from their annotations.

``HITL_AGENT_URL``: an agent deployed on the LangGraph server (``langgraph dev`` / ``langgraph up``),
reached with ``langgraph-sdk`` (``hitl_app.runs.remote_agent``, assistant ``HITL_ASSISTANT_ID``). Its
own ``interrupt_on`` decides which calls ask; ``HITL_POLICY`` may add the app's rights, deadlines,
grants and undo windows for its tools (the tool names are not checked: the app cannot see them).
Edits are checked for JSON validity only (the tools' schemas stay on the server).

Every problem raises ``StartupError`` with one line (module missing, attribute missing, wrong type,
factory failure, bad policy file).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from hitl_app.errors import StartupError
from hitl_app.review.json_args import json_schema_args_validator
from hitl_app.review.validate import ArgsValidator, pydantic_args_validator
from hitl_app.settings import Settings
from hitl_app.store.db import Engines

log = logging.getLogger("hitl_app")


class AgentLoadError(StartupError):
    """``HITL_AGENT`` does not name a usable agent; the message says which part is wrong."""


def validators_for(tools_by_name: dict[str, Any]) -> dict[str, ArgsValidator]:
    """Tool name -> validator of edited args, for every tool with a pydantic schema or a JSON
    schema (an MCP tool's ``inputSchema``, checked with ``json_schema_args_validator``)."""
    out: dict[str, ArgsValidator] = {}
    for name, tool in tools_by_name.items():
        schema = getattr(tool, "tool_call_schema", None)
        if isinstance(schema, type):
            out[name] = pydantic_args_validator(schema)
        elif isinstance(getattr(tool, "args_schema", None), dict):
            out[name] = json_schema_args_validator(tool.args_schema)
    return out


def tools_of_graph(graph: Any) -> dict[str, Any]:
    """The tools of a ``create_agent`` graph: ``graph.nodes["tools"].bound.tools_by_name``.

    Returns ``{}`` when the graph has no such node (e.g. a hand-built graph).
    """
    node = getattr(graph, "nodes", {}).get("tools")
    bound = getattr(node, "bound", None)
    tools = getattr(bound, "tools_by_name", None)
    return dict(tools) if isinstance(tools, dict) else {}


def _is_compiled_graph(obj: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(obj, Pregel)


def _import_target(spec: str) -> Any:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentLoadError(f"HITL_AGENT={spec!r} must look like 'package.module:attribute'.")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise AgentLoadError(
            f"HITL_AGENT={spec!r}: module {exc.name!r} not found (install it or run from the folder that holds it)."
        ) from exc
    except Exception as exc:  # noqa: BLE001 - the developer's module failed while importing
        raise AgentLoadError(f"HITL_AGENT={spec!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise AgentLoadError(f"HITL_AGENT={spec!r}: {module_name!r} has no attribute {attr!r}.")
        target = getattr(target, part)
    return target


def resolve_agent(spec: str, checkpointer: Any) -> Any:
    """Turn ``HITL_AGENT`` into a compiled graph bound to ``checkpointer`` (see the module docstring).

    Raises:
        AgentLoadError: bad spec, missing module/attribute, wrong type, factory failure, or a
            graph without a ``messages`` channel.
    """
    target = _import_target(spec)
    if _is_compiled_graph(target):
        graph = target
    elif callable(target):
        try:
            params = inspect.signature(target).parameters
            graph = target(checkpointer=checkpointer) if "checkpointer" in params else target(checkpointer)
        except Exception as exc:  # noqa: BLE001 - the factory's own error, in one line
            raise AgentLoadError(f"HITL_AGENT={spec!r}: the factory raised {type(exc).__name__}: {exc}") from exc
        if not _is_compiled_graph(graph):
            raise AgentLoadError(
                f"HITL_AGENT={spec!r}: the factory returned {type(graph).__name__}, not a compiled graph "
                "(return create_agent(..., checkpointer=checkpointer))."
            )
    else:
        raise AgentLoadError(
            f"HITL_AGENT={spec!r} is a {type(target).__name__}: expected a compiled graph "
            "(create_agent(...)) or a factory make_agent(checkpointer) -> compiled graph."
        )
    if "messages" not in getattr(graph, "channels", {}):
        raise AgentLoadError(f"HITL_AGENT={spec!r}: the graph has no 'messages' state; build it with create_agent.")
    if graph.checkpointer is not checkpointer:
        if graph.checkpointer not in (None, False, True):
            log.warning("HITL_AGENT=%s carried its own checkpointer; using the app's (DATABASE_URL) instead", spec)
        graph = graph.copy(update={"checkpointer": checkpointer})
    if not any("HumanInTheLoopMiddleware" in name for name in graph.nodes):
        log.warning("HITL_AGENT=%s has no HumanInTheLoopMiddleware: it will never ask for a review", spec)
    return graph


@dataclass
class LoadedAgent:
    """The agent the settings ask for and what the rest of the app needs to know about it.

    Attributes:
        graph: the compiled graph; validators: tool name -> edited-arguments check.
        rules: the review policy of the built-in agent (its tools' and the MCP tools'), or of a
            deployed agent's tools from ``HITL_POLICY``; None for a developer's agent (``HITL_AGENT``,
            or ``HITL_AGENT_URL`` without a policy: the owner decides every card, no deadlines).
        origins: MCP tool name -> ``ToolOrigin`` (the server named on its card, the hint badges).
        mcp: the MCP servers and their status (None without ``HITL_MCP``).
    """

    graph: Any
    validators: dict[str, ArgsValidator]
    rules: list[Any] | None = None
    origins: dict[str, Any] = field(default_factory=dict)
    mcp: Any = None

    def desks(self) -> dict[str, Any]:
        """Tool name -> ``ToolDesk`` (deadline, grants, undo window); ``{}`` for a developer's agent
        (grants allowed: the server checks them as its reviews arrive, ``InterruptGrants``)."""
        from hitl_app.agent.mcp.elicit import QUESTION_SUFFIX
        from hitl_app.review.desk_policy import DEFAULT_DESK, desks_by_tool

        if self.rules is None:
            return {}
        desks = desks_by_tool(self.rules)
        for name in self.origins:  # an MCP server's question: its tool's deadline, never granted
            if name.endswith(QUESTION_SUFFIX):
                desks[name] = replace(desks.get(name.removesuffix(QUESTION_SUFFIX), DEFAULT_DESK), grantable=False)
        return desks

    def rights(self) -> dict[str, Any]:
        """Tool name -> ``ToolRights`` (who may decide its reviews); ``{}`` for a developer's agent."""
        from hitl_app.agent.policy import rights_by_tool

        return rights_by_tool(self.rules) if self.rules is not None else {}

    def risks(self) -> dict[str, Any]:
        """Tool name -> ``ToolRisk`` (the card's risk badge); ``{}`` for a developer's agent."""
        from hitl_app.review.risk_policy import risks_by_tool

        return risks_by_tool(self.rules) if self.rules is not None else {}


@contextlib.asynccontextmanager
async def load_agent(settings: Settings, engines: Engines) -> AsyncIterator[LoadedAgent]:
    """Yield the ``LoadedAgent`` with the checkpointer open; closes it on exit.

    Raises:
        StartupError: bad ``HITL_MODEL`` / ``HITL_AGENT`` / ``HITL_POLICY`` / ``HITL_MCP`` (one line
            each; a policy error names the server and tool). An MCP server that does not answer
            is no start-up error: its status says why.
    """
    from hitl_app.agent.checkpoint import open_checkpointer
    from hitl_app.agent.policy import load_policy_toml

    if settings.agent_url:
        from hitl_app.runs.remote_agent import open_remote_agent

        if settings.mcp_file:
            raise StartupError("HITL_MCP applies to the built-in agent only; a deployed agent (HITL_AGENT_URL) "
                               "brings its own tools: unset one of them.")
        key = settings.agent_api_key.get_secret_value() if settings.agent_api_key else None
        rules = load_policy_toml(settings.policy_file) if settings.policy_file else None
        async with open_remote_agent(settings.agent_url, settings.assistant_id, key) as remote:
            yield LoadedAgent(remote, {}, rules)
        return
    if settings.agent:
        if settings.policy_file or settings.mcp_file:
            raise StartupError(
                f"{'HITL_POLICY' if settings.policy_file else 'HITL_MCP'} applies to the built-in agent only; with "
                "HITL_AGENT your agent brings its own tools and interrupt_on: unset one of them."
            )
        _import_target(settings.agent)  # fail before opening the database
        async with open_checkpointer(settings.database, pool_size=settings.db_pool_size) as checkpointer:
            graph = resolve_agent(settings.agent, checkpointer)
            tools = tools_of_graph(graph)
            if not tools:
                log.warning("HITL_AGENT=%s: tools not found; edits are checked for JSON validity only", settings.agent)
            yield LoadedAgent(graph, validators_for(tools))
        return
    async with _built_in_agent(settings, engines) as loaded:
        yield loaded


@contextlib.asynccontextmanager
async def _built_in_agent(settings: Settings, engines: Engines) -> AsyncIterator[LoadedAgent]:
    from hitl_app.agent.build import build_demo_agent
    from hitl_app.agent.checkpoint import open_checkpointer
    from hitl_app.agent.limits import ToolLimits
    from hitl_app.agent.models import make_model
    from hitl_app.agent.policy import DEFAULT_POLICY, PolicyError, load_policy_toml
    from hitl_app.agent.workspace import DemoWorkspace
    from hitl_app.desk.grant_check import GrantChecker

    rules = load_policy_toml(settings.policy_file) if settings.policy_file else []
    rules = rules or list(DEFAULT_POLICY)  # a file with only MCP tables keeps the built-in tools' rules
    model = make_model(settings)
    mcp, mcp_rules, origins = await _mcp_tools(settings)
    workspace = DemoWorkspace(
        files_dir=settings.files_dir, engine=engines.sync, demo_db_path=settings.demo_db_path,
        limits=ToolLimits.from_settings(settings),
    )
    async with contextlib.AsyncExitStack() as stack:
        if mcp is not None:
            stack.push_async_callback(mcp.aclose)  # every server's sessions end with the app (stdio: its process)
            mcp.retry_down(settings.mcp_timeout_s)
        workspace.ensure()
        checkpointer = await stack.enter_async_context(open_checkpointer(settings.database,
                                                                         pool_size=settings.db_pool_size))
        all_rules = [*rules, *mcp_rules]
        bundle = build_demo_agent(
            model=model, workspace=workspace, checkpointer=checkpointer, policy_rules=all_rules,
            grant_check=GrantChecker(engines, all_rules), extra_tools=mcp.tools if mcp else (),
        )
        unknown = sorted({r.tool for r in rules} - set(bundle.tools_by_name))
        if unknown:
            raise PolicyError(
                f"{settings.policy_file}: [tools.{unknown[0]}]: no such tool in the built-in agent; "
                f"known: {sorted(n for n in bundle.tools_by_name if '__' not in n)}"
            )
        yield LoadedAgent(bundle.graph, validators_for(bundle.tools_by_name), all_rules, origins, mcp)


async def _mcp_tools(settings: Settings) -> tuple[Any, list[Any], dict[str, Any]]:
    """``(McpServers or None, the MCP tools' rules, their origins)`` from ``HITL_MCP`` and ``HITL_POLICY``.

    The MCP client (``mcp``, ``langchain-mcp-adapters``: ~1 s of imports) is imported only when servers
    are configured, so an app without MCP servers does not pay for it at every start."""
    from hitl_app.agent.mcp.config import load_mcp_config
    from hitl_app.agent.mcp.policy import check_mcp_tables, mcp_rules
    from hitl_app.agent.policy import read_policy_tables

    tool_tables, server_tables = read_policy_tables(settings.policy_file) if settings.policy_file else ({}, {})
    mcp_tool_tables = {name: table for name, table in tool_tables.items() if "__" in name}
    servers = load_mcp_config(settings.mcp_file) if settings.mcp_file else []
    source = str(settings.policy_file or "policy")
    check_mcp_tables(server_tables=server_tables, tool_tables=mcp_tool_tables, configured=[s.name for s in servers],
                     loaded={}, source=source)
    if not servers:
        return None, [], {}
    from hitl_app.agent.mcp.client import connect_servers

    mcp = await connect_servers(servers, timeout_s=settings.mcp_timeout_s, max_result_chars=settings.tool_result_max_bytes)
    try:
        check_mcp_tables(server_tables=server_tables, tool_tables=mcp_tool_tables, configured=[s.name for s in servers],
                         loaded=mcp.loaded(), source=source)
        rules, origins = mcp_rules(mcp.infos, server_tables=server_tables, tool_tables=mcp_tool_tables, source=source)
    except BaseException:
        await mcp.aclose()  # a policy error at start-up leaves no server process behind
        raise
    return mcp, rules, origins
