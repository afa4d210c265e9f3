"""Store contract fixtures: the app tables on SQLite and on PostgreSQL (``database_url``), no graph."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.db import Engines, create_schema, make_engines


@pytest.fixture
async def engines(database_url: str) -> AsyncIterator[Engines]:
    """Engines on a fresh app database with the schema created."""
    engines = make_engines(database_url)
    create_schema(engines)
    try:
        yield engines
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


@pytest.fixture
def session(engines: Engines) -> Callable[[], AsyncSession]:
    """Opens a new ``AsyncSession`` (one per concurrent actor, as in the service)."""
    return lambda: AsyncSession(engines.async_, expire_on_commit=False)
