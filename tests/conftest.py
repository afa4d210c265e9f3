"""Suite-wide ordering: end-to-end tests run last.

The e2e ``browser`` fixture is session-scoped sync Playwright, which keeps an asyncio loop running
in the main thread until the session ends; an async (pytest-asyncio) test collected after it would
fail with "Runner.run() cannot be called from a running event loop". Running e2e last avoids that.
"""

from __future__ import annotations


def pytest_collection_modifyitems(session, config, items):
    """Stable partition: every non-e2e test first, then the e2e tests in their collected order."""
    items[:] = [i for i in items if "/e2e/" not in str(i.fspath)] + [i for i in items if "/e2e/" in str(i.fspath)]
