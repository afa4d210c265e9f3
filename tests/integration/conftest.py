"""Fixtures for agent integration tests: real SQLite files, real AsyncSqliteSaver, real agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.checkpoint import open_checkpointer
from hitl_app.agent.demo_model import DemoChatModel
from hitl_app.agent.tools import DemoWorkspace
from hitl_app.store.db import make_engines


@pytest.fixture
def workspace(tmp_path: Path):
    """A seeded DemoWorkspace under ``tmp_path``."""
    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    ws = DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite")
    ws.ensure()
    yield ws
    engines.sync.dispose()


@pytest.fixture
def checkpoint_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"


@pytest.fixture
async def saver(checkpoint_url):
    """A real AsyncSqliteSaver on a temp file."""
    async with open_checkpointer(checkpoint_url) as s:
        yield s


@pytest.fixture
def make_agent(workspace, saver):
    """Build the real demo agent (optionally with another model) on the shared saver."""

    def _make(model=None, **kwargs):
        return build_demo_agent(
            model=model or DemoChatModel(words_per_second=0), workspace=workspace, checkpointer=saver, **kwargs
        )

    return _make


@dataclass
class TurnResult:
    """What one streamed run showed: text per model call, tool calls, pending interrupts."""

    texts: list[str] = field(default_factory=list)
    token_counts: list[int] = field(default_factory=list)
    tool_calls: list[list[dict[str, Any]]] = field(default_factory=list)
    interrupts: list[Any] = field(default_factory=list)


async def drive(graph, inp, config) -> TurnResult:
    """Run ``graph`` with ``astream_events(version="v3")`` and collect what a UI would see."""
    out = TurnResult()
    run = await graph.astream_events(inp, config, version="v3")
    async with run:
        async for msg in run.messages:
            tokens = [t async for t in msg.text]
            out.texts.append("".join(tokens))
            out.token_counts.append(len(tokens))
            out.tool_calls.append(list(await msg.tool_calls))
        if await run.interrupted():
            out.interrupts = list(await run.interrupts())
    return out


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """The app database (tables + checkpoints) for a whole-runtime test."""
    return f"sqlite:///{tmp_path / 'hitl.sqlite'}"
