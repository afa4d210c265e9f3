"""Fixtures for end-to-end tests: the real app in prod mode, and Debian's Chromium via Playwright.

Every test gets a fresh browser context (its own localStorage, so its own browser id) and fails
on any page error, console error (a missing resource, e.g. a 404, included) or dialog: a script injected through
model text or tool arguments would show up as one of those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from hitl_app.store.audit_proof import generate_keys
from tests.helpers.app_server import AppServer
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.e2e

# CI machines are shared and slow at times: assertions wait up to 15 s (Playwright's default is 5 s).
# This is a ceiling for a condition to become true, not a timing goal: timing lives in the benchmark.
expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app for the e2e session (demo model, no pacing), with its own data folder; webhooks may
    reach a receiver on loopback (``HITL_WEBHOOK_ALLOW_NETWORKS``, as README's example says) and a
    failed delivery is tried again after 1 s, doubling (``HITL_WEBHOOK_BACKOFF_S``; 10 s by default,
    which the webhooks page test waited out), with the queue looked at every 0.5 s
    (``HITL_WEBHOOK_POLL_S``, 2 s by default); /audit signs its download with a key made as README
    says (``audit.key``; ``audit.pub`` beside it)."""
    data = tmp_path_factory.mktemp("e2e-app")
    private, public = generate_keys()
    (data / "audit.key").write_bytes(private)
    (data / "audit.pub").write_bytes(public)
    server = AppServer(data, env={"HITL_WEBHOOK_ALLOW_NETWORKS": "127.0.0.1/32",
                                  "HITL_WEBHOOK_BACKOFF_S": "1", "HITL_WEBHOOK_POLL_S": "0.5",
                                  "HITL_AUDIT_PRIVATE_KEY": str(data / "audit.key")})
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Debian Chromium, per module: sync Playwright keeps an event loop running while it is
    open, which would break the async tests collected after tests/e2e if it lived for the session."""
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageProblems(list):
    """Console errors, page errors and dialogs seen during a test."""


def watched_page(context: BrowserContext) -> Page:
    """A new page in ``context`` whose problems (page errors, console errors, dialogs) are collected
    in ``page.problems``; dialogs are dismissed."""
    page = context.new_page()
    page.set_default_timeout(20_000)
    problems = PageProblems()
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}")
        if m.type == "error"
        else None,
    )

    def on_dialog(dialog) -> None:
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.problems = problems  # type: ignore[attr-defined]
    return page


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh context + page; fails the test on page errors, console errors or dialogs."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = watched_page(context)
    yield page
    shots = Path(__file__).resolve().parents[2] / "test-artifacts"
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / f"{request.node.name}.png"), full_page=True)
    problems = [p for pg in context.pages for p in getattr(pg, "problems", [])]
    context.close()
    assert not problems, f"browser problems: {problems}"


@pytest.fixture
def other_browser(browser: Browser) -> Iterator[Callable[..., Page]]:
    """Factory for pages in NEW contexts (another browser: its own localStorage, so another
    browser id), checked for problems like ``page``. Call with optional ``viewport``."""
    contexts: list[BrowserContext] = []

    def make(viewport: dict[str, int] | None = None) -> Page:
        context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900})
        contexts.append(context)
        return watched_page(context)

    yield make
    problems = [p for c in contexts for pg in c.pages for p in getattr(pg, "problems", [])]
    for c in contexts:
        c.close()
    assert not problems, f"browser problems: {problems}"


PACED_POLICY = """\
# e2e: send_email may only be approved or rejected (case C13); the rest as the built-in policy.
[tools.send_email]
allowed_decisions = ["approve", "reject"]
description = "Send an email to {to}: {subject}"

[tools.write_file]
allowed_decisions = ["approve", "edit", "reject"]
description = "Write the file {path}"
condition = "outside_drafts"

[tools.delete_file]
allowed_decisions = ["approve", "reject"]
description = "Delete the file {path}"

[tools.ask_user]
allowed_decisions = ["respond"]
description = "Question for you: {question}"
"""


@pytest.fixture(scope="session")
def paced_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """A second app whose demo model streams at a visible 40 words/s, with a policy file
    (``HITL_POLICY``) under which send_email is approve/reject only. Started on first use."""
    data = tmp_path_factory.mktemp("e2e-paced")
    policy = data / "policy.toml"
    policy.write_text(PACED_POLICY, encoding="utf-8")
    server = AppServer(data / "app", env={"HITL_DEMO_WPS": "40", "HITL_POLICY": str(policy)})
    server.start()
    yield server
    server.stop()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Expose each phase's report on the item (for the screenshot-on-failure above)."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
