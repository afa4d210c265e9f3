"""Fixtures for the agent unit tests: a temp workspace on real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest

from hitl_app.agent.tools import build_tools
from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.store.db import make_engines


@pytest.fixture
def workspace(tmp_path: Path):
    """A seeded DemoWorkspace under ``tmp_path`` (files, app DB, demo DB)."""
    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    ws = DemoWorkspace(tmp_path / "files", engines.sync, tmp_path / "demo.sqlite")
    ws.ensure()
    yield ws
    engines.sync.dispose()


@pytest.fixture
def tools(workspace):
    """name -> tool, bound to ``workspace``."""
    return {t.name: t for t in build_tools(workspace)}
