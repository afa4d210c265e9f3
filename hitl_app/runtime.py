"""The running app's one set of long-lived objects: engines, checkpointer, agent, thread service.

Opened once per server process by the Reflex lifespan (``hitl_app.hitl_app``) and closed at
shutdown; importing this module has no side effects. Event handlers reach the service through
``get_service()``, which raises a clear error when the lifespan is not running (e.g. under
``reflex compile``).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass

from hitl_app.settings import Settings, get_settings
from hitl_app.store.db import Engines, create_schema, make_engines
from hitl_app.threads.service import ThreadService

log = logging.getLogger("hitl_app")


@dataclass
class Runtime:
    """What the lifespan opened: settings, database engines and the thread service."""

    settings: Settings
    engines: Engines
    service: ThreadService


_runtime: Runtime | None = None


def get_runtime() -> Runtime:
    """The process's runtime. Raises RuntimeError when the app's lifespan has not started it."""
    if _runtime is None:
        raise RuntimeError("hitl_app is not started: the server lifespan opens the agent (run `make run`).")
    return _runtime


def get_service() -> ThreadService:
    """The thread service of this process (see ``get_runtime``)."""
    return get_runtime().service


@contextlib.asynccontextmanager
async def open_runtime(settings: Settings | None = None) -> AsyncIterator[Runtime]:
    """Open everything the app needs and close it on exit.

    Order: settings -> database schema -> demo workspace -> checkpointer -> model -> agent.
    Raises whatever the settings, database or model configuration raise, with one clear line.
    """
    global _runtime
    from langchain_core._api import LangChainBetaWarning

    from hitl_app.threads.agent_loader import load_agent

    warnings.filterwarnings("ignore", category=LangChainBetaWarning)
    settings = settings or get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engines = make_engines(settings.resolved_database_url)
    create_schema(engines)
    try:
        async with load_agent(settings, engines) as (graph, validators):
            service = ThreadService(graph, engines, validators)
            _runtime = Runtime(settings=settings, engines=engines, service=service)
            log.info("hitl_app started: model=%s database=%s", settings.model, engines.url.split("@")[-1])
            try:
                yield _runtime
            finally:
                _runtime = None
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()
