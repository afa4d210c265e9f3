"""Fixtures for end-to-end tests: the real app in prod mode, and Debian's Chromium via Playwright.

Every test gets a fresh browser context (its own localStorage, so its own browser id) and fails
on any page error, console error (other than the favicon 404) or dialog: a script injected through
model text or tool arguments would show up as one of those.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.helpers.app_server import AppServer
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app for the e2e session (demo model, no pacing), with its own data folder."""
    server = AppServer(tmp_path_factory.mktemp("e2e-app"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Headless Debian Chromium."""
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageProblems(list):
    """Console errors, page errors and dialogs seen during a test."""


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh context + page; fails the test on page errors, console errors or dialogs."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems = PageProblems()
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}")
        if m.type == "error" and "favicon" not in m.text and "Failed to load resource" not in m.text
        else None,
    )

    def on_dialog(dialog) -> None:
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.problems = problems  # type: ignore[attr-defined]
    yield page
    shots = Path(__file__).resolve().parents[2] / "test-artifacts"
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / f"{request.node.name}.png"), full_page=True)
    context.close()
    assert not problems, f"browser problems: {problems}"


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Expose each phase's report on the item (for the screenshot-on-failure above)."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
