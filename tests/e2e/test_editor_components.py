"""The argument editor in Chromium: the form from a tool's schema, the JSON editor with inline
schema errors, and the diff against the proposal, on the test-only page ``/test/editor``.

The page exists only with ``HITL_TEST_HOOKS=1``; this module starts its own app with it. The
``page`` fixture fails a test on any console error, so a style or script the app's
Content-Security-Policy blocks (CodeMirror injects styles at run time) fails it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.helpers.app_server import AppServer

pytestmark = pytest.mark.e2e
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "shots"


@pytest.fixture(scope="module")
def hooks_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with its test pages (``HITL_TEST_HOOKS=1``)."""
    server = AppServer(tmp_path_factory.mktemp("e2e-editor"), env={"HITL_TEST_HOOKS": "1"})
    server.start()
    yield server
    server.stop()


def open_sample(page: Page, server: AppServer, sample: str) -> None:
    response = page.goto(server.url + "/test/editor")
    assert "script-src 'self'" in response.headers["content-security-policy"]  # the app's CSP applies
    expect(page.get_by_test_id("edit-form")).to_be_visible()
    # the page's on_load starts over with send_email: a pick made before it ran was undone (CI, under load)
    expect(page.get_by_test_id("sample-name")).to_have_attribute("data-revision", re.compile(r"^[1-9][0-9]*$"))
    page.get_by_test_id(f"sample-{sample}").click()
    expect(page.get_by_test_id("sample-name")).to_have_text(sample)


def field(page: Page, path: str) -> Locator:
    return page.locator(f"[data-testid=edit-form-field][data-field='{path}']")


def editor_text(page: Page) -> str:
    return page.get_by_test_id("edit-json").locator(".cm-content").inner_text()


def replace_editor_text(page: Page, text: str) -> None:
    """Focus the editor, select everything and put ``text`` in as one input (as a paste would)."""
    page.get_by_test_id("edit-json").locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)


def test_json_editor_shows_schema_errors_at_the_line_before_any_submit(page: Page, hooks_server: AppServer):
    open_sample(page, hooks_server, "send_email")
    assert [f.get_attribute("data-field") for f in page.get_by_test_id("edit-form-field").all()] == ["to", "subject", "body"]
    expect(field(page, "to")).to_contain_text("an email address like name@example.com")
    page.get_by_test_id("edit-mode-json").click()
    expect(page.get_by_test_id("edit-json").locator(".cm-editor")).to_be_visible()
    assert json.loads(editor_text(page))["to"] == "alice@example.com"
    expect(page.get_by_test_id("edit-json-status")).to_have_text("JSON is valid")

    replace_editor_text(page, '{\n  "to": 42,\n  "subject": "Quarterly report",\n  "body": "Hi"\n}')
    error = page.get_by_test_id("edit-json-error")
    expect(error).to_have_count(1)
    expect(error).to_have_text("to: must be string")
    expect(error).to_have_attribute("data-line", "2")
    expect(page.locator(".cm-line", has=error)).to_contain_text('"to": 42')
    expect(page.locator(".cm-lint-marker-error")).to_have_count(1)

    replace_editor_text(page, '{\n  "to": "not an address",\n  "subject": "Hi"\n}')
    expect(error).to_have_count(2)
    expect(error.first).to_have_text('missing required "body"')
    expect(error.first).to_have_attribute("data-line", "1")
    expect(error.last).to_have_text("to: has the wrong format")
    expect(error.last).to_have_attribute("data-line", "2")

    replace_editor_text(page, '{\n  "to": "bob@example.com"\n  "subject": "Hi",\n  "body": "Hi"\n}')
    expect(error).to_have_count(1)
    expect(error).to_have_attribute("data-line", "3")  # where the parser finds the missing comma
    expect(error).to_contain_text("Expected ',' or '}' after property value")
    expect(page.get_by_test_id("edit-json-status")).to_contain_text("1 problem")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "editor-inline-error.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SHOTS / "editor-inline-error-phone.png"))
    page.set_viewport_size({"width": 1280, "height": 900})

    replace_editor_text(page, '{\n  "to": "bob@example.com",\n  "subject": "Hi",\n  "body": "Hi"\n}')
    expect(error).to_have_count(0)
    page.keyboard.press("Escape")  # leaves the editor, and sends the text at once
    assert page.evaluate("document.activeElement.closest('.cm-editor') === null")
    page.get_by_test_id("edit-mode-form").click()
    expect(field(page, "to").locator("input")).to_have_value("bob@example.com")
    diff = page.get_by_test_id("edit-diff")
    expect(diff.get_by_test_id("edit-diff-row")).to_have_count(3)
    expect(diff.locator("[data-field=to]")).to_have_attribute("title", "to: alice@example.com -> bob@example.com")


def test_form_edits_enum_number_nested_and_arrays_and_the_json_follows(page: Page, hooks_server: AppServer):
    open_sample(page, hooks_server, "ship_order")
    expect(page.get_by_test_id("edit-diff")).to_contain_text("No changes yet")
    expect(field(page, "recipient.name")).to_contain_text("*")  # required, nested
    expect(field(page, "lines.1.qty")).to_contain_text("How many")  # hint from the schema

    field(page, "speed").locator("select").select_option("express")
    weight = field(page, "weight_kg").locator("input")
    weight.fill("abc")
    weight.press("Tab")
    expect(field(page, "weight_kg").get_by_test_id("edit-form-error")).to_have_text("must be a number")
    weight.fill("3.75")
    weight.press("Tab")
    expect(field(page, "weight_kg").get_by_test_id("edit-form-error")).to_have_count(0)
    name = field(page, "recipient.name").locator("input")
    name.fill("Bob")
    name.press("Tab")
    page.locator("[data-testid=edit-form-add][data-field=lines]").click()
    expect(field(page, "lines.2.sku")).to_be_visible()
    sku = field(page, "lines.2.sku").locator("input")
    sku.fill("MUG-2")
    sku.press("Tab")
    page.locator("[data-testid=edit-form-remove][data-field='labels.0']").click()
    expect(field(page, "labels.0")).to_have_count(0)
    field(page, "insured").get_by_role("checkbox").click()

    rows = page.get_by_test_id("edit-diff").get_by_test_id("edit-diff-row")
    expect(rows).to_have_count(6)
    kinds = {r.get_attribute("data-field"): r.get_attribute("data-kind") for r in rows.all()}
    assert kinds == {"recipient.name": "changed", "speed": "changed", "weight_kg": "changed", "insured": "changed",
                     "lines.2": "added", "labels.0": "removed"}
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "editor-form-diff.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SHOTS / "editor-form-diff-phone.png"), full_page=True)

    page.get_by_test_id("edit-mode-json").click()
    expect(page.get_by_test_id("edit-json").locator(".cm-content")).to_contain_text('"express"')
    args = json.loads(editor_text(page))
    assert args["speed"] == "express" and args["weight_kg"] == 3.75 and args["insured"] is True
    assert args["recipient"] == {"name": "Bob", "email": "alice@example.com"}
    assert args["lines"][2] == {"sku": "MUG-2", "qty": 1} and args["labels"] == []
    expect(page.get_by_test_id("edit-json-status")).to_have_text("JSON is valid")
