"""Fixtures of the deployed-agent tests: a real ``langgraph dev`` serving ``examples/deployed_agent`` on
loopback, and a ``ThreadService`` on it (``RemoteAgentRuntime``) with its own SQLite app database."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from hitl_app.runs.remote_agent import open_remote_agent
from hitl_app.store.db import create_schema, make_engines
from hitl_app.threads.service import ThreadService
from tests.helpers.langgraph_server import LangGraphDev


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphDev]:
    """One ``langgraph dev`` for the module (the example model unpaced)."""
    server = LangGraphDev(tmp_path_factory.mktemp("langgraph-dev"))
    server.start()
    yield server
    server.close()


@contextlib.asynccontextmanager
async def remote_service(url: str, db: Path, assistant_id: str = "agent", **kwargs: object) -> AsyncIterator[ThreadService]:
    """A ``ThreadService`` on the deployment at ``url``, its app tables in the SQLite file ``db``."""
    engines = make_engines(f"sqlite:///{db}")
    create_schema(engines)
    try:
        async with open_remote_agent(url, assistant_id) as runtime:
            yield ThreadService(runtime, engines, {}, flush_interval=0.01, **kwargs)  # type: ignore[arg-type]
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


@pytest.fixture
async def service(deployment: LangGraphDev, tmp_path: Path) -> AsyncIterator[ThreadService]:
    async with remote_service(deployment.url, tmp_path / "hitl.sqlite") as svc:
        yield svc
