"""README's MCP flow in Chromium: the example notes server (examples/mcp) started by the app over
stdio, its cards (server name, hint badges, a form from the tool's inputSchema), a trusted read-only
call without a card, and the Workspace panel's server status; desktop and phone width."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import edit_json, messages, open_new_thread, open_workspace, send, shoot, wait_idle
from tests.helpers.app_server import AppServer
from tests.helpers.paths import ROOT

PHONE = {"width": 390, "height": 844}
MCP_WAIT_MS = 60_000
"""Waits that follow an MCP call (a question replays the call on a fresh process), slower under load."""


@pytest.fixture(scope="module")
def mcp_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app as README starts it: ``HITL_MCP=examples/mcp/mcp.json HITL_POLICY=examples/mcp/policy.toml``,
    plus a server that does not start, for the status view."""
    data = tmp_path_factory.mktemp("mcp-app")
    config = data / "mcp.json"
    config.write_text((ROOT / "examples" / "mcp" / "mcp.json").read_text(encoding="utf-8").replace(
        '"mcpServers": {', '"mcpServers": {\n    "offline": {"command": "/nonexistent/mcp-server"},', 1), encoding="utf-8")
    server = AppServer(data / "app", env={"HITL_MCP": str(config), "HITL_POLICY": str(ROOT / "examples/mcp/policy.toml")})
    server.start()
    yield server
    server.stop()


def test_mcp_cards_edit_through_the_schema_and_the_server_status(page: Page, mcp_app: AppServer):
    open_new_thread(page, mcp_app)
    send(page, 'call notes__add_note {"title": "milk", "text": "buy milk"}')
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-action-name", "notes__add_note")
    expect(card.get_by_test_id("mcp-server")).to_have_text("MCP server notes")
    expect(card.get_by_test_id("hint-badge")).to_have_count(0)  # add_note: not read-only, not destructive, closed world
    card.get_by_test_id("decision-edit").click()
    expect(card.get_by_test_id("card-editor")).to_be_visible()
    shoot(page, "mcp-card-edit-form-desktop")
    edit_json(card, '{"title": 5, "text": "buy eggs"}')  # the server's inputSchema says title is a string
    card.get_by_test_id("edit-check").click()
    expect(card.get_by_test_id("edit-error")).to_contain_text("title")
    edit_json(card, '{"title": "eggs", "text": "buy eggs", "tags": ["food"]}')
    card.get_by_test_id("edit-check").click()
    expect(card.get_by_test_id("edit-error")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool").last).to_have_attribute("data-outcome", "edited", timeout=MCP_WAIT_MS)
    expect(messages(page, "assistant").last).to_contain_text("Added the note 'eggs'", timeout=MCP_WAIT_MS)
    wait_idle(page)

    # the trusted server's read-only search runs with no card and sees the edited note
    send(page, 'call notes__search_notes {"query": "eggs"}')
    expect(messages(page, "assistant").last).to_contain_text("eggs: buy eggs", timeout=MCP_WAIT_MS)
    expect(page.get_by_test_id("approval-card")).to_have_count(0)
    wait_idle(page)

    # a destructive tool: high-risk badge, the hint, then a reject whose reason reaches the model
    send(page, 'call notes__delete_note {"title": "eggs"}')
    card = page.get_by_test_id("approval-card")
    expect(card.get_by_test_id("risk-badge")).to_have_attribute("data-level", "high")
    expect(card.locator("[data-testid=hint-badge][data-hint=destructive]")).to_have_count(1)
    expect(card.get_by_test_id("card-description")).to_have_text("Delete the note eggs (MCP server notes)")
    shoot(page, "mcp-card-destructive-desktop")
    card.get_by_test_id("decision-reject").click()
    reason = card.get_by_test_id("reject-message")
    reason.fill("keep it for now")
    reason.blur()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool").last).to_have_attribute("data-outcome", "rejected", timeout=MCP_WAIT_MS)
    expect(messages(page, "assistant").last).to_contain_text("keep it for now", timeout=MCP_WAIT_MS)
    wait_idle(page)

    open_workspace(page)
    page.get_by_test_id("workspace-mcp-tab").click()
    notes = page.locator("[data-testid=mcp-server-row][data-server=notes]")
    expect(notes).to_have_attribute("data-connected", "true")
    expect(notes).to_contain_text("notes__delete_note")
    offline = page.locator("[data-testid=mcp-server-row][data-server=offline]")
    expect(offline).to_have_attribute("data-connected", "false")
    expect(offline.get_by_test_id("mcp-server-error")).not_to_be_empty()
    shoot(page, "mcp-server-status-desktop")


def test_mcp_card_at_phone_width(page: Page, mcp_app: AppServer):
    page.set_viewport_size(PHONE)
    open_new_thread(page, mcp_app)
    send(page, 'call notes__fetch_page {"url": "https://example.com/a-rather-long/path/for/a/phone/screen"}')
    card = page.get_by_test_id("approval-card")  # read-only, but the policy asks: it reaches outside
    expect(card.get_by_test_id("mcp-server")).to_be_visible()
    expect(card.locator("[data-testid=hint-badge][data-hint='reaches outside']")).to_have_count(1)
    expect(card.locator("[data-testid=hint-badge][data-hint=read-only]")).to_have_count(1)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways at phone width ({width} px)"
    card.scroll_into_view_if_needed()
    shoot(page, "mcp-card-phone")
    card.get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "assistant").last).to_contain_text("would fetch https://example.com/a-rather-long", timeout=MCP_WAIT_MS)
    wait_idle(page)

    # reject and stop: the run ends and the agent is told not to retry
    send(page, 'call notes__delete_note {"title": "milk"}')
    card = page.get_by_test_id("approval-card")
    card.get_by_test_id("decision-reject").click()
    stop = card.get_by_test_id("reject-stop")
    expect(stop).not_to_be_checked()  # the policy's default here: reject and tell
    stop.click()
    expect(stop).to_be_checked()
    card.scroll_into_view_if_needed()
    shoot(page, "mcp-reject-stop-phone")
    page.get_by_test_id("submit-decisions").click()
    stopped = "Stopped: the reviewer rejected notes__delete_note"
    expect(messages(page, "assistant").last).to_contain_text(stopped, timeout=MCP_WAIT_MS)


def test_a_servers_question_is_a_card_with_its_form(page: Page, mcp_app: AppServer):
    open_new_thread(page, mcp_app)
    send(page, 'call notes__add_note {"title": "old", "text": "to clear"}')
    page.get_by_test_id("approval-card").get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "assistant").last).to_contain_text("Added the note 'old'", timeout=MCP_WAIT_MS)
    wait_idle(page)
    send(page, "call notes__clear_notes")
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-action-name", "notes__clear_notes")
    card.get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()

    # the server asks during the call: a card with a form from its requested schema
    card = page.locator("[data-testid=approval-card][data-action-name='notes__clear_notes:question']")
    expect(card.get_by_test_id("card-description")).to_contain_text("notes asks: Delete all", timeout=MCP_WAIT_MS)
    expect(card.get_by_test_id("mcp-server")).to_have_text("MCP server notes")
    expect(card.get_by_test_id("decision-approve")).to_have_count(0)
    # the MCP spec's three answers, in its words
    for kind, label in (("edit", "Accept"), ("reject", "Decline"), ("cancel", "Cancel")):
        expect(card.get_by_test_id(f"question-{kind}")).to_have_text(label)
    card.get_by_test_id("question-edit").click()
    expect(card.get_by_test_id("card-editor")).to_be_visible()
    shoot(page, "mcp-question-card-desktop")
    edit_json(card, '{"confirm": "yes", "reason": ""}')
    card.get_by_test_id("edit-check").click()
    expect(card.get_by_test_id("edit-error")).to_contain_text("confirm")
    edit_json(card, '{"confirm": true, "reason": "spring cleaning"}')
    card.get_by_test_id("edit-check").click()
    expect(card.get_by_test_id("edit-error")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "assistant").last).to_contain_text("notes. Reason: spring cleaning", timeout=MCP_WAIT_MS)
    wait_idle(page)

    page.set_viewport_size(PHONE)
    send(page, "call notes__clear_notes")
    page.get_by_test_id("approval-card").get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    card = page.locator("[data-testid=approval-card][data-action-name='notes__clear_notes:question']")
    expect(card.get_by_test_id("card-description")).to_contain_text("notes asks: Delete all 0 notes?", timeout=MCP_WAIT_MS)
    card.scroll_into_view_if_needed()
    card.get_by_test_id("question-cancel").click()
    expect(card.get_by_test_id("question-cancel")).to_have_attribute("aria-pressed", "true")
    expect(card.get_by_test_id("question-answer")).to_contain_text("The server hears: cancel")
    expect(card.get_by_test_id("reject-stop")).to_have_count(0)  # no "reject and stop" on a question
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways at phone width ({width} px)"
    shoot(page, "mcp-question-card-phone")
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "assistant").last).to_contain_text("Nothing deleted: the user chose cancel", timeout=MCP_WAIT_MS)
    wait_idle(page)

    send(page, "call notes__clear_notes")
    page.get_by_test_id("approval-card").get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    card = page.locator("[data-testid=approval-card][data-action-name='notes__clear_notes:question']")
    card.get_by_test_id("question-reject").click()
    expect(card.get_by_test_id("question-answer")).to_contain_text("The server hears: decline")
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "assistant").last).to_contain_text("Nothing deleted: the user chose decline", timeout=MCP_WAIT_MS)
