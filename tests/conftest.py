"""Suite-wide ordering: browser (e2e) tests run last.

Playwright's sync API keeps its own event loop running in the main thread for the life of the
session-scoped ``browser`` fixture; pytest-asyncio tests collected after it would fail with
"Runner.run() cannot be called from a running event loop". Running every e2e test after the
async ones keeps both kinds in one ``pytest`` invocation.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move tests under tests/e2e/ to the end, keeping the order within each group."""
    items.sort(key=lambda item: "/tests/e2e/" in str(item.path).replace("\\", "/"))
