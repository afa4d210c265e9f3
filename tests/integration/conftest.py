"""Fixtures for agent integration tests: real SQLite files, real AsyncSqliteSaver, real agent."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.checkpoint import open_checkpointer
from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.store.db import make_engines
from tests.helpers.postgres import fresh_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The app database (tables + checkpoints): one contract suite, two backends.

    ``sqlite``: a file under ``tmp_path``. ``postgres``: a fresh ``hitl_test_<random>`` database on
    the real server, dropped afterwards (the test FAILS if PostgreSQL is unreachable).
    """
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'hitl.sqlite'}"
        return
    with fresh_database() as url:
        yield url


@pytest.fixture
def workspace(tmp_path: Path, database_url: str):
    """A seeded DemoWorkspace: app tables on ``database_url``, files and demo db under ``tmp_path``."""
    engines = make_engines(database_url)
    ws = DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite")
    ws.ensure()
    yield ws
    engines.sync.dispose()


@pytest.fixture
def checkpoint_url(database_url: str) -> str:
    """The checkpointer URL: the app database, as in the running app."""
    return database_url


@pytest.fixture
async def saver(checkpoint_url):
    """A real AsyncSqliteSaver / AsyncPostgresSaver (with a pool) on the test database."""
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
