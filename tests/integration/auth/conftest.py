"""Fixtures for the accounts tests: the app schema on a real SQLite file or PostgreSQL database."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hitl_app.auth import SYSTEM, AuthConfig, Role, add_account
from hitl_app.store.db import create_schema, make_engines


@pytest.fixture
async def engine(database_url: str):
    """The async engine on a fresh app database (``database_url`` runs each test on both backends)."""
    engines = make_engines(database_url)
    create_schema(engines)
    yield engines.async_
    await engines.async_.dispose()
    engines.sync.dispose()


@pytest.fixture
def config() -> AuthConfig:
    """Small limits so the tests reach them quickly."""
    return AuthConfig(
        session_ttl=timedelta(hours=1), max_failures_per_account=3, max_failures_per_address=5,
        failure_window=timedelta(minutes=10), invite_ttl=timedelta(hours=2),
    )


@pytest.fixture
def make_account(engine):
    """Create an account with a password through the real service; returns its Principal."""

    async def _make(email="dana@example.com", name="Dana", role=Role.MEMBER, password="correct horse 1"):
        return await add_account(engine=engine, email=email, display_name=name, role=role, password=password, by=SYSTEM)

    return _make
