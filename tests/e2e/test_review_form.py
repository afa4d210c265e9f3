"""The approval card's form in Chromium: a tool with a nested schema (object, enum, numbers, a
boolean, a list of objects), edited through typed inputs, checked, submitted, and run with exactly
the edited arguments. Also: screenshots of the review desk, desktop and phone, for people to look at.

The app runs ``tests.fixtures.shipping_agent`` (``HITL_AGENT``), whose ``ship_order`` tool repeats
the arguments it ran with in its result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.ui import (
    SHOTS,
    card,
    edit_json,
    form_field,
    messages,
    open_new_thread,
    send,
    shoot_at,
    wait_idle,
)
from tests.helpers.app_server import AppServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def shipping_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with the shipping test agent."""
    server = AppServer(tmp_path_factory.mktemp("e2e-shipping"), env={"HITL_AGENT": "tests.fixtures.shipping_agent:make_agent"})
    server.start()
    yield server
    server.stop()


def _open_card(page: Page, server: AppServer) -> None:
    open_new_thread(page, server)
    send(page, "ship the order")
    card(page, 0).get_by_test_id("decision-edit").click()
    expect(card(page, 0).get_by_test_id("edit-form")).to_be_visible()


def test_edit_through_the_form_enum_number_nested_and_list(page: Page, shipping_app: AppServer):
    _open_card(page, shipping_app)
    form = card(page, 0).get_by_test_id("edit-form")
    fields = [f.get_attribute("data-field") for f in form.get_by_test_id("edit-form-field").all()]
    assert fields == ["recipient.name", "recipient.email", "speed", "weight_kg", "insured", "lines.0.sku", "lines.0.qty"]
    speed = form_field(form, "speed")
    assert speed.evaluate("el => el.tagName") == "SELECT"
    expect(form.locator("[data-field=speed]")).to_contain_text("How fast it travels")  # the schema's description
    expect(form.locator("[data-field=weight_kg]")).to_contain_text("*")  # required

    speed.select_option("express")
    weight = form_field(form, "weight_kg")
    weight.fill("abc")
    weight.blur()
    expect(form.locator("[data-field=weight_kg] [data-testid=edit-form-error]")).to_have_text("must be a number")
    card(page, 0).get_by_test_id("edit-check").click()
    expect(card(page, 0).get_by_test_id("edit-error")).to_have_text("Fix the fields marked above first.")
    weight.fill("3.75")
    form_field(form, "recipient.name").fill("Bob")
    form_field(form, "lines.0.qty").fill("2")
    form_field(form, "lines.0.qty").blur()
    form.locator("[data-testid=edit-form-add][data-field=lines]").click()
    form_field(form, "lines.1.sku").fill("PEN-7")
    form_field(form, "lines.1.sku").blur()

    diff = card(page, 0).get_by_test_id("edit-diff-row")
    kinds = {row.get_attribute("data-field"): row.get_attribute("data-kind") for row in diff.all()}
    assert kinds == {
        "recipient.name": "changed", "speed": "changed", "weight_kg": "changed", "lines.0.qty": "changed", "lines.1": "added"
    }
    card(page, 0).get_by_test_id("edit-check").click()
    expect(card(page, 0).get_by_test_id("edit-check")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()

    tool = messages(page, "tool")
    expect(tool).to_have_attribute("data-outcome", "edited")
    wait_idle(page)
    tool.locator("summary").click()
    expect(tool).to_contain_text("Shipped with ")
    text = tool.inner_text()
    ran = json.loads(text[text.index("Shipped with ") + len("Shipped with "):].splitlines()[0])
    assert ran["speed"] == "express" and ran["weight_kg"] == 3.75 and ran["recipient"]["name"] == "Bob"
    assert ran["lines"] == [{"sku": "BOOK-1", "qty": 2}, {"sku": "PEN-7", "qty": 1}]


def test_form_and_json_edit_the_same_draft(page: Page, shipping_app: AppServer):
    _open_card(page, shipping_app)
    form = card(page, 0).get_by_test_id("edit-form")
    form_field(form, "recipient.name").fill("Carol")
    form_field(form, "recipient.name").blur()
    card(page, 0).get_by_test_id("edit-mode-json").click()
    text = card(page, 0).get_by_test_id("edit-json").locator(".cm-content")
    expect(text).to_contain_text('"name": "Carol"')
    edit_json(
        card(page, 0),
        json.dumps({"recipient": {"name": "Dan"}, "speed": "economy", "weight_kg": 1, "insured": True, "lines": []}),
    )
    card(page, 0).get_by_test_id("edit-mode-form").click()  # leaving the editor sends the text
    expect(form_field(form, "recipient.name")).to_have_value("Dan")
    expect(form_field(form, "speed")).to_have_value("economy")


VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_screenshots_of_the_form_editor_error_and_diff(browser: Browser, shipping_app: AppServer, size: str):
    """Saved under ``test-artifacts/shots/desk-<size>-*.png`` for people to look at."""
    context = browser.new_context(viewport=VIEWPORTS[size])
    page = watched_page(context)
    try:
        _open_card(page, shipping_app)
        SHOTS.mkdir(parents=True, exist_ok=True)
        first = card(page, 0)
        form = first.get_by_test_id("edit-form")
        form_field(form, "speed").select_option("express")
        form_field(form, "weight_kg").fill("3.75")
        form_field(form, "weight_kg").blur()
        expect(first.get_by_test_id("edit-diff-row")).to_have_count(2)
        first.get_by_test_id("card-editor").scroll_into_view_if_needed()
        shoot_at(page, first.get_by_test_id("card-editor"), f"desk-{size}-form")
        shoot_at(page, first.get_by_test_id("edit-diff"), f"desk-{size}-diff")
        edit_json(first, '{\n  "recipient": {"name": "Bob"},\n  "speed": "overnight",\n  "weight_kg": 2.5,\n  "lines": []\n}')
        expect(first.get_by_test_id("edit-json-error")).to_have_count(1)
        shoot_at(page, first.get_by_test_id("card-editor"), f"desk-{size}-json-error")
        page.keyboard.press("Escape")
        page.keyboard.press("?")
        expect(page.get_by_test_id("shortcuts-help")).to_be_visible()
        page.wait_for_timeout(400)  # the dialog's fade-in
        page.screenshot(path=str(SHOTS / f"desk-{size}-shortcuts.png"))
    finally:
        problems = list(getattr(page, "problems", []))
        context.close()
    assert not problems, problems
