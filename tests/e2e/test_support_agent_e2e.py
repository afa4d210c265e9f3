"""The app running a developer's agent (examples/support_agent) via HITL_AGENT, in Chromium."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_flow import open_new_thread, send
from tests.e2e.ui import edit_json
from tests.helpers.app_server import AppServer


@pytest.fixture(scope="module")
def support_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with ``HITL_AGENT=examples.support_agent.agent:make_agent``."""
    server = AppServer(tmp_path_factory.mktemp("support-app"), env={"HITL_AGENT": "examples.support_agent.agent:make_agent"})
    server.start()
    yield server
    server.stop()


def test_support_agent_card_schema_checked_edit_and_refund(page: Page, support_app: AppServer):
    open_new_thread(page, support_app)
    send(page, "refund A-1002 19.99")
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-action-name", "refund_payment")
    expect(card).to_contain_text("Refund 19.99 on order A-1002")
    expect(card.get_by_test_id("decision-approve")).to_be_visible()
    expect(card.get_by_test_id("decision-edit")).to_be_visible()
    expect(card.get_by_test_id("decision-respond")).to_have_count(0)

    page.get_by_test_id("decision-edit").click()
    edit_json(card, '{"order_id": "A-1002", "amount": "a lot"}')
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("edit-error")).to_contain_text("amount")
    expect(page.get_by_test_id("edit-error")).to_contain_text("number")
    edit_json(card, '{"order_id": "A-1002", "amount": 5.25}')
    page.get_by_test_id("edit-check").click()
    expect(page.get_by_test_id("edit-error")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()

    tool = page.locator("[data-testid=message][data-role=tool]")
    expect(tool).to_have_attribute("data-outcome", "edited")
    expect(page.locator("[data-testid=message][data-role=assistant]").last).to_contain_text("Refunded 5.25 on order A-1002")
    lines = [json.loads(line) for line in (support_app.data_dir / "support_actions.jsonl").read_text().splitlines()]
    assert [(a["kind"], a["order_id"], a["amount"]) for a in lines] == [("refund", "A-1002", 5.25)]

    # lookup_order runs without a card; close_ticket allows approve/reject only
    send(page, "close ticket T-7: refunded part of the order")
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-action-name", "close_ticket")
    expect(card.get_by_test_id("decision-edit")).to_have_count(0)
    card.get_by_test_id("decision-reject").click()
    page.get_by_test_id("submit-decisions").click()
    expect(page.locator("[data-testid=message][data-role=tool]").last).to_have_attribute("data-outcome", "rejected")
    assert len((support_app.data_dir / "support_actions.jsonl").read_text().splitlines()) == 1
