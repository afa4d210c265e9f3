"""Open the checkpointer and build the agent the settings ask for, with its edit validators.

``HITL_AGENT`` unset: the built-in demo agent (``hitl_app.agent.build``). Set: see issue 4 (a
developer's compiled graph or factory). Validators come from each tool's model-facing args schema
(``BaseTool.tool_call_schema``), so an edit is checked against exactly what the model was shown.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from hitl_app.review.validate import ArgsValidator, pydantic_args_validator
from hitl_app.settings import Settings
from hitl_app.store.db import Engines


def validators_for(tools_by_name: dict[str, Any]) -> dict[str, ArgsValidator]:
    """Tool name -> validator of edited args, for every tool with a pydantic schema."""
    out: dict[str, ArgsValidator] = {}
    for name, tool in tools_by_name.items():
        schema = getattr(tool, "tool_call_schema", None)
        if isinstance(schema, type):
            out[name] = pydantic_args_validator(schema)
    return out


@contextlib.asynccontextmanager
async def load_agent(settings: Settings, engines: Engines) -> AsyncIterator[tuple[Any, dict[str, ArgsValidator]]]:
    """Yield ``(compiled graph, validators)`` with the checkpointer open; closes it on exit."""
    from hitl_app.agent.build import build_demo_agent
    from hitl_app.agent.checkpoint import open_checkpointer
    from hitl_app.agent.models import make_model
    from hitl_app.agent.policy import DEFAULT_POLICY, load_policy_toml
    from hitl_app.agent.tools import DemoWorkspace

    rules = load_policy_toml(settings.policy_file) if settings.policy_file else DEFAULT_POLICY
    model = make_model(settings)
    workspace = DemoWorkspace(files_dir=settings.files_dir, engine=engines.sync, demo_db_path=settings.demo_db_path)
    workspace.ensure()
    async with open_checkpointer(settings.resolved_database_url) as checkpointer:
        bundle = build_demo_agent(model=model, workspace=workspace, checkpointer=checkpointer, policy_rules=rules)
        yield bundle.graph, validators_for(bundle.tools_by_name)
