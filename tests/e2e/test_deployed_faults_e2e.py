"""A deployed agent's faults in Chromium, against a real ``langgraph dev`` stopped and restarted: a deployment
down is one plain message with Retry (the sidebar still lists the threads, Send works again once it is
back); a deployment that lost its state shows the thread's review as lost in the sidebar and on the page,
and the inbox no longer counts it (nothing was decided)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import cards, open_new_thread, send, shoot, wait_idle
from tests.helpers.app_server import AppServer
from tests.helpers.langgraph_server import LangGraphDev


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphDev]:
    server = LangGraphDev(tmp_path_factory.mktemp("e2e-faults-langgraph"))
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def deployed_app(deployment: LangGraphDev, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("e2e-faults-app"), env={"HITL_AGENT_URL": deployment.url})
    server.start()
    yield server
    server.stop()


def test_a_deployment_down_then_back(page: Page, deployed_app: AppServer, deployment: LangGraphDev):
    open_new_thread(page, deployed_app)
    send(page, "delete down.txt")
    expect(cards(page)).to_have_count(1, timeout=60_000)
    deployment.stop()
    try:
        page.reload()
        error = page.get_by_test_id("load-error")
        expect(error).to_contain_text("does not answer", timeout=30_000)
        expect(page.get_by_text("does not answer")).to_have_count(1)  # said once, not again under the composer
        expect(page.get_by_test_id("thread-title")).to_have_text(["delete down.txt"])  # the app's own index
        expect(page.get_by_test_id("send-button")).to_be_enabled()
        shoot(page, "deployed-down")
        page.get_by_test_id("load-retry").click()  # still down: the same one message
        expect(page.get_by_text("does not answer")).to_have_count(1)
    finally:
        deployment.start()
    page.get_by_test_id("load-retry").click()
    expect(cards(page)).to_have_count(1, timeout=60_000)  # the review is back, from the server
    expect(page.get_by_test_id("load-error")).to_have_count(0)
    cards(page).nth(0).get_by_test_id("decision-reject").click()
    page.get_by_test_id("submit-decisions").click()
    expect(cards(page)).to_have_count(0, timeout=60_000)
    wait_idle(page)
    send(page, "stream 3 words")  # Send works with the deployment back
    expect(page.get_by_test_id("composer-input")).to_have_value("", timeout=30_000)
    wait_idle(page)


def test_a_deployment_that_lost_its_state(page: Page, deployed_app: AppServer, deployment: LangGraphDev):
    open_new_thread(page, deployed_app)
    send(page, "delete lost.txt")
    expect(cards(page)).to_have_count(1, timeout=60_000)
    expect(page.get_by_test_id("inbox-count")).to_have_text("1", timeout=30_000)
    deployment.restart(fresh=True)
    page.reload()
    expect(page.get_by_test_id("run-notice")).to_contain_text("cannot be answered", timeout=30_000)
    expect(cards(page)).to_have_count(0)
    row = page.get_by_test_id("thread-link").filter(has_text="delete lost.txt")
    expect(row.get_by_test_id("lost-badge")).to_be_visible()
    expect(row.get_by_test_id("pending-badge")).to_have_count(0)
    expect(page.get_by_test_id("inbox-count")).to_have_count(0, timeout=30_000)
    shoot(page, "deployed-lost")
    send(page, "stream 3 words")  # a new message starts the thread afresh
    wait_idle(page)
    expect(row.get_by_test_id("lost-badge")).to_have_count(0, timeout=30_000)
    assert not [a for a in deployment.actions() if a.get("path") == "lost.txt"]
