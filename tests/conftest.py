"""Suite-wide ordering: end-to-end tests run last.

The e2e ``browser`` fixture keeps sync Playwright (and its running asyncio loop) open for the
whole session; async tests collected after it then fail with "Runner.run() cannot be called
from a running event loop". Running them after every other test avoids that.
"""

from __future__ import annotations

import pytest


def _is_e2e(item: pytest.Item) -> bool:
    return item.get_closest_marker("e2e") is not None or "e2e" in item.path.parts


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move end-to-end tests (marked ``e2e`` or under tests/e2e) to the end, keeping each group's order."""
    items[:] = [i for i in items if not _is_e2e(i)] + [i for i in items if _is_e2e(i)]
