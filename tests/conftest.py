"""Suite-wide markers and ordering.

Markers (pytest.ini) are what the Makefile's passes select on:

* ``e2e``: every test under ``tests/e2e/`` (set here by path: a ``pytestmark`` in a conftest does not
  reach the tests) and the benchmark smokes (``tests/bench``, marked in their modules). They drive
  Chromium, so they run in their own pytest process (``make test``'s browser pass).
* ``postgres``: a test parametrized over the ``postgres`` backend (its param id says so; set here)
  or a module that needs the PostgreSQL server throughout (marked in the module).
  ``make test-fast`` leaves these out.
* ``app``: a module that starts app servers (module-scoped fixtures). The passes run with ``--dist
  loadfile``, so a module's tests share one worker and its servers start once.

Ordering: browser (e2e) tests run last. Playwright's sync API keeps its own event loop running in the
main thread for the life of a ``browser`` fixture; pytest-asyncio tests collected after it would fail
with "Runner.run() cannot be called from a running event loop". Running every e2e test after the
async ones keeps both kinds in one ``pytest`` invocation (``make test-one`` over mixed paths).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from tests.helpers.app_server import SHARED_BUILDS_ENV


def pytest_configure(config: pytest.Config) -> None:
    """In the controlling process (not an xdist worker): one folder where this run's processes share
    their front-end builds (``tests/helpers/app_server.py``); the workers inherit it."""
    if not hasattr(config, "workerinput") and not os.environ.get(SHARED_BUILDS_ENV):
        os.environ[SHARED_BUILDS_ENV] = tempfile.mkdtemp(prefix="hitl-shared-builds-")
        config._hitl_shared_builds = os.environ[SHARED_BUILDS_ENV]  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controlling process removes the shared builds it made the folder for."""
    if (shared := getattr(config, "_hitl_shared_builds", None)) is not None:
        shutil.rmtree(shared, ignore_errors=True)
        os.environ.pop(SHARED_BUILDS_ENV, None)


def _under_e2e(item: pytest.Item) -> bool:
    return "/tests/e2e/" in str(item.path).replace("\\", "/")


def _on_postgres(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgres" in callspec.params.values()


def _slow_first(item: pytest.Item) -> int:
    """0 for the packaging venv and the modules that start app servers, else 1."""
    return 0 if item.get_closest_marker("packaging") or item.get_closest_marker("app") else 1


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark e2e tests by path and PostgreSQL-parametrized tests by param; order the slow modules first
    and the e2e tests last in a plain run. Under xdist's ``loadfile`` the scheduler hands out whole
    files by its own rule (measured: this order does not change which worker gets which file)."""
    for item in items:
        if _under_e2e(item):
            item.add_marker(pytest.mark.e2e)
        if _on_postgres(item):
            item.add_marker(pytest.mark.postgres)
    items.sort(key=lambda item: (_under_e2e(item), _slow_first(item)))
