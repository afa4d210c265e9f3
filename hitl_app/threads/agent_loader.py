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
a JSON object. ``HITL_POLICY`` is for the built-in agent only (your agent sets its own
``interrupt_on``); setting both is refused.

Every problem raises ``StartupError`` with one line (module missing, attribute missing, wrong type,
factory failure, bad policy file).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
from collections.abc import AsyncIterator
from typing import Any

from hitl_app.errors import StartupError
from hitl_app.review.validate import ArgsValidator, pydantic_args_validator
from hitl_app.settings import Settings
from hitl_app.store.db import Engines

log = logging.getLogger("hitl_app")


class AgentLoadError(StartupError):
    """``HITL_AGENT`` does not name a usable agent; the message says which part is wrong."""


def validators_for(tools_by_name: dict[str, Any]) -> dict[str, ArgsValidator]:
    """Tool name -> validator of edited args, for every tool with a pydantic schema."""
    out: dict[str, ArgsValidator] = {}
    for name, tool in tools_by_name.items():
        schema = getattr(tool, "tool_call_schema", None)
        if isinstance(schema, type):
            out[name] = pydantic_args_validator(schema)
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


def policy_desks(settings: Settings) -> dict[str, Any]:
    """Tool name -> ``ToolDesk`` (deadline, grants, undo window) from ``HITL_POLICY`` or the
    default policy; ``{}`` for a developer's agent (no deadlines, no undo; grants allowed: the
    server checks them as its reviews arrive, ``hitl_app.threads.grant_check.InterruptGrants``).
    """
    from hitl_app.agent.policy import DEFAULT_POLICY, load_policy_toml
    from hitl_app.review.desk_policy import desks_by_tool

    if settings.agent:
        return {}
    return desks_by_tool(load_policy_toml(settings.policy_file) if settings.policy_file else DEFAULT_POLICY)


def policy_rights(settings: Settings) -> dict[str, Any]:
    """Tool name -> ``ToolRights`` (who may decide its reviews) from ``HITL_POLICY``, or the default
    policy's; ``{}`` for a developer's agent (``HITL_AGENT``: the owner decides every card).

    Raises PolicyError for a bad policy file (``load_agent`` reads it first and says so).
    """
    from hitl_app.agent.policy import DEFAULT_POLICY, load_policy_toml, rights_by_tool

    if settings.agent:
        return {}
    return rights_by_tool(load_policy_toml(settings.policy_file) if settings.policy_file else DEFAULT_POLICY)


def policy_risks(settings: Settings) -> dict[str, Any]:
    """Tool name -> ``ToolRisk`` (the card's risk badge) from ``HITL_POLICY`` or the default
    policy; ``{}`` for a developer's agent. Raises PolicyError for a bad policy file."""
    from hitl_app.agent.policy import DEFAULT_POLICY, load_policy_toml
    from hitl_app.review.risk_policy import risks_by_tool

    if settings.agent:
        return {}
    return risks_by_tool(load_policy_toml(settings.policy_file) if settings.policy_file else DEFAULT_POLICY)


@contextlib.asynccontextmanager
async def load_agent(settings: Settings, engines: Engines) -> AsyncIterator[tuple[Any, dict[str, ArgsValidator]]]:
    """Yield ``(compiled graph, validators)`` with the checkpointer open; closes it on exit.

    Raises:
        StartupError: bad ``HITL_MODEL`` / ``HITL_AGENT`` / ``HITL_POLICY`` (one line each).
    """
    from hitl_app.agent.build import build_demo_agent
    from hitl_app.agent.checkpoint import open_checkpointer
    from hitl_app.agent.limits import ToolLimits
    from hitl_app.agent.models import make_model
    from hitl_app.agent.policy import DEFAULT_POLICY, PolicyError, load_policy_toml
    from hitl_app.agent.workspace import DemoWorkspace
    from hitl_app.threads.grant_check import GrantChecker

    if settings.agent:
        if settings.policy_file:
            raise StartupError(
                "HITL_POLICY applies to the built-in agent only; with HITL_AGENT your agent sets its own "
                "interrupt_on: unset one of them."
            )
        _import_target(settings.agent)  # fail before opening the database
        async with open_checkpointer(settings.database, pool_size=settings.db_pool_size) as checkpointer:
            graph = resolve_agent(settings.agent, checkpointer)
            tools = tools_of_graph(graph)
            if not tools:
                log.warning("HITL_AGENT=%s: tools not found; edits are checked for JSON validity only", settings.agent)
            yield graph, validators_for(tools)
        return

    rules = load_policy_toml(settings.policy_file) if settings.policy_file else DEFAULT_POLICY
    model = make_model(settings)
    workspace = DemoWorkspace(
        files_dir=settings.files_dir, engine=engines.sync, demo_db_path=settings.demo_db_path,
        limits=ToolLimits.from_settings(settings),
    )
    workspace.ensure()
    async with open_checkpointer(settings.database, pool_size=settings.db_pool_size) as checkpointer:
        bundle = build_demo_agent(
            model=model, workspace=workspace, checkpointer=checkpointer, policy_rules=rules,
            grant_check=GrantChecker(engines, rules),
        )
        unknown = sorted({r.tool for r in rules} - set(bundle.tools_by_name))
        if unknown:
            raise PolicyError(
                f"{settings.policy_file}: [tools.{unknown[0]}]: no such tool in the built-in agent; "
                f"known: {sorted(bundle.tools_by_name)}"
            )
        yield bundle.graph, validators_for(bundle.tools_by_name)
