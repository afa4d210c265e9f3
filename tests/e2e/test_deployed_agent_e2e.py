"""README's "A deployed agent" example in Chromium: ``langgraph dev`` serving examples/deployed_agent, the app
started with ``HITL_AGENT_URL``; at desktop and phone width a request streams from the deployment, its
interrupt shows as cards with the deployment's buttons, a reload brings them back, and Submit resumes
the server thread once. Screenshots of the pending review go to test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import buttons_on, cards, messages, open_new_thread, send, wait_idle
from tests.helpers.app_server import AppServer
from tests.helpers.langgraph_server import LangGraphDev

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
LONGEST_LIVE_TEXT = """
window.__live = "";
new MutationObserver(() => {
  const bubble = document.querySelector("[data-testid=streaming-message]");
  const text = bubble ? bubble.textContent || "" : "";
  if (text.length > window.__live.length) window.__live = text;
}).observe(document, {subtree: true, childList: true, characterData: true});
"""
"""Keeps the longest text the streaming bubble showed (``window.__live``): a short reply streams in less
time than an assertion's polling takes."""


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphDev]:
    server = LangGraphDev(tmp_path_factory.mktemp("e2e-langgraph"), wps=40)
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def deployed_app(deployment: LangGraphDev, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    env = {"HITL_AGENT_URL": deployment.url, "HITL_ASSISTANT_ID": "agent"}
    server = AppServer(tmp_path_factory.mktemp("e2e-deployed"), env=env)
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_readme_example_on_a_deployed_agent(other_browser, deployed_app: AppServer, deployment: LangGraphDev, viewport):
    page: Page = other_browser(viewport)
    page.add_init_script(LONGEST_LIVE_TEXT)
    name = "desktop" if viewport is DESKTOP else "phone"
    open_new_thread(page, deployed_app)
    send(page, f"email bob@example.com about the {name} report: ready and delete {name}.txt")
    expect(cards(page)).to_have_count(2, timeout=60_000)
    assert "send an email to bob@example.com" in page.evaluate("() => window.__live"), "the reply did not stream"
    assert buttons_on(cards(page).nth(0)) == ["approve", "edit", "reject"]
    assert buttons_on(cards(page).nth(1)) == ["approve", "reject"]
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"deployed-review-{name}.png"), full_page=False)

    page.reload()  # the review comes back from the server's thread state
    expect(cards(page)).to_have_count(2, timeout=60_000)
    cards(page).nth(0).get_by_test_id("decision-approve").click()
    cards(page).nth(1).get_by_test_id("decision-reject").click()
    page.get_by_test_id("submit-decisions").click()
    expect(cards(page)).to_have_count(0, timeout=60_000)
    wait_idle(page)
    tools = messages(page, "tool")
    expect(tools).to_have_count(2)
    outcomes = sorted(tools.evaluate_all("els => els.map(e => e.dataset.outcome)"))
    assert outcomes == ["executed", "rejected"]
    page.screenshot(path=str(SHOTS / f"deployed-done-{name}.png"), full_page=False)
    sent = [a for a in deployment.actions() if a.get("subject") == f"the {name} report"]
    assert sent == [{"kind": "send_email", "to": "bob@example.com", "subject": f"the {name} report", "body": "ready"}]
    assert not [a for a in deployment.actions() if a.get("path") == f"{name}.txt"]
