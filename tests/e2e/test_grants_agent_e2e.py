"""Grants on a developer's agent (``HITL_AGENT=tests.fixtures.grants_agent:make_agent``) in Chromium:
a grant from a card, the next covered call runs without a card ("approved by grant: ..."), and a
batch half covered shows the granted card decided (no buttons) beside the card left to the person.
Screenshot of that half-covered review: ``test-artifacts/shots/grants-agent-partial.png``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import card, cards, messages, open_new_thread, send, shoot_at, wait_idle
from tests.helpers.app_server import AppServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def grants_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("e2e-grants-agent"), env={"HITL_AGENT": "tests.fixtures.grants_agent:make_agent"})
    server.start()
    yield server
    server.stop()


def test_a_grant_covers_a_developers_agent_in_the_browser(page: Page, grants_app: AppServer):
    open_new_thread(page, grants_app)
    send(page, "refund A-1 5")
    expect(cards(page)).to_have_count(1)
    card(page, 0).get_by_test_id("decision-approve").click()
    card(page, 0).get_by_test_id("grant-scope").select_option("thread:24")
    page.get_by_test_id("submit-decisions").click()
    wait_idle(page)
    expect(messages(page, "tool")).to_have_count(1)
    send(page, "refund A-2 6")
    wait_idle(page)
    expect(messages(page, "tool")).to_have_count(2)
    expect(cards(page)).to_have_count(0)
    expect(messages(page, "tool").last).to_contain_text("approved by grant: this tool in this thread, by")
    send(page, "refund A-3 1; close T-1")
    expect(cards(page)).to_have_count(2)
    granted = card(page, 0)
    expect(granted.get_by_test_id("card-standing")).to_have_text("Decided")
    expect(granted.get_by_test_id("card-note")).to_contain_text("Approved by grant: this tool in this thread, by")
    expect(granted.get_by_test_id("decision-approve")).to_have_count(0)
    expect(page.get_by_test_id("submit-decisions")).to_have_text("Submit")  # nothing chosen yet
    shoot_at(page, granted, "grants-agent-partial")
    card(page, 1).get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    wait_idle(page)
    expect(messages(page, "tool")).to_have_count(4)
    expect(cards(page)).to_have_count(0)
