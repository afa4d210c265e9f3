"""The approval card's editing and keys in Chromium (issue 11): the JSON editor with inline schema errors and the diff,
what ran vs what was proposed, a whole batch decided by keyboard alone, the waited time from the
server's clock, the risk badge, effect previews, and axe-core checks.

Runs against the shared demo-agent app (``app_server``). The form with nested objects, enums and
numbers is driven in ``test_review_form.py`` (it needs a tool with such a schema).
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.ui import (
    SHOTS,
    axe_problems,
    card,
    cards,
    edit_json,
    form_field,
    messages,
    open_new_thread,
    send,
    shoot_at,
    wait_idle,
)
from tests.helpers.app_server import AppServer


def test_json_editor_flags_schema_errors_at_the_line_shows_the_diff_and_the_thread_shows_what_ran(
    page: Page, app_server: AppServer
):
    open_new_thread(page, app_server)
    send(page, "email alice@example.com about the report: it is ready")
    first = card(page, 0)
    first.get_by_test_id("decision-edit").click()
    expect(first.get_by_test_id("edit-form")).to_be_visible()  # the form is the first mode
    # the page has not loaded the JSON editor's script (CodeMirror) until a JSON editor shows
    scripts = "() => performance.getEntriesByType('resource').filter(r => r.name.includes('json_editor')).length"
    assert page.evaluate(scripts) == 0
    edit_json(first, '{\n  "to": 42,\n  "subject": "the report",\n  "body": "it is ready"\n}')
    error = first.get_by_test_id("edit-json-error")
    expect(error).to_have_text("to: must be string")  # as you type, before any submit
    expect(error).to_have_attribute("data-line", "2")
    assert page.evaluate(scripts) >= 1
    expect(page.get_by_test_id("submit-decisions")).to_be_visible()
    edit_json(first, '{\n  "to": "bob@example.com",\n  "subject": "the report",\n  "body": "it is ready"\n}')
    expect(error).to_have_count(0)
    first.get_by_test_id("edit-check").click()  # leaving the editor sends its text first
    rows = first.get_by_test_id("edit-diff-row")
    expect(rows).to_have_count(1)
    expect(rows).to_have_attribute("data-kind", "changed")
    expect(rows).to_have_attribute("data-field", "to")
    expect(rows).to_contain_text("alice@example.com")
    expect(rows).to_contain_text("bob@example.com")
    expect(first.get_by_test_id("edit-check")).to_have_count(0)  # checked on the server, editor closed
    page.get_by_test_id("submit-decisions").click()

    tool = messages(page, "tool")
    expect(tool).to_have_attribute("data-outcome", "edited")
    expect(tool.get_by_test_id("audit-line")).to_contain_text("edited by")
    expect(tool.get_by_test_id("audit-line")).to_contain_text("to: alice@example.com -> bob@example.com")
    tool.locator("summary").click()
    expect(tool.get_by_test_id("tool-proposed-args")).to_contain_text("alice@example.com")
    expect(tool.get_by_test_id("tool-ran-args")).to_contain_text("bob@example.com")
    # the model was told plainly that a reviewer changed the call (HITL middleware's edit notice)
    expect(messages(page, "assistant").last).to_contain_text("A reviewer edited the call before it ran")


def test_check_edit_stays_where_it_is_while_the_diff_follows_the_typing(page: Page, app_server: AppServer):
    """The diff grows below "Check edit" as the typed text reaches the server, and the chat does
    not follow its end while the reader works in the editor, so the button keeps its place on
    screen (a click landing where the button had been is lost, and the card stays "editing: not
    checked", as seen in CI under load)."""
    open_new_thread(page, app_server)
    send(page, "email alice@example.com about the report: it is ready")
    first = card(page, 0)
    first.get_by_test_id("decision-edit").click()
    edit_json(first, '{"to": "alice@example.com", "subject": "the report", "body": "it is ready"}')
    expect(first.get_by_test_id("edit-diff")).to_contain_text("No changes yet.")
    check = first.get_by_test_id("edit-check")
    before = check.bounding_box()
    edit_json(first, '{"to": "bob@example.com", "subject": "another subject", "body": "another body"}')
    expect(first.get_by_test_id("edit-diff-row")).to_have_count(3)  # the server has the new text
    after = check.bounding_box()
    assert before is not None and after is not None
    assert abs(after["y"] - before["y"]) < 1, f"Check edit moved from y={before['y']} to y={after['y']}"
    check.click()
    expect(first.get_by_test_id("edit-check")).to_have_count(0)  # checked on the server, editor closed


def test_a_whole_batch_decided_by_keyboard_alone(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "email alice@example.com about plans: soon and delete notes/old.txt and ask me which colour?")
    expect(cards(page)).to_have_count(3)
    expect(card(page, 0)).to_be_focused()  # the first pending card takes the focus

    page.keyboard.press("?")
    expect(page.get_by_test_id("shortcuts-help")).to_be_visible()
    expect(page.get_by_test_id("shortcuts-help")).to_contain_text("Ctrl+Enter")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("shortcuts-help")).to_have_count(0)

    card(page, 0).focus()
    page.keyboard.press("a")
    expect(card(page, 0)).to_have_attribute("data-choice", "approve")
    expect(card(page, 0).get_by_test_id("card-state")).to_have_text("send_email: approved")
    page.keyboard.press("j")
    expect(card(page, 1)).to_be_focused()
    page.keyboard.press("r")
    reason = card(page, 1).get_by_test_id("reject-message")
    expect(reason).to_be_focused()
    page.keyboard.type("keep it, we need the old notes")  # e, k, a, j, r, s typed here are text
    expect(reason).to_have_value("keep it, we need the old notes")
    expect(card(page, 1)).to_have_attribute("data-choice", "reject")
    expect(card(page, 0)).to_have_attribute("data-choice", "approve")
    page.keyboard.press("Escape")
    expect(card(page, 1)).to_be_focused()
    page.keyboard.press("j")
    expect(card(page, 2)).to_be_focused()
    page.keyboard.press("s")
    answer = card(page, 2).get_by_test_id("respond-message")
    expect(answer).to_be_focused()
    page.keyboard.type("blue")
    page.keyboard.press("Control+Enter")  # leaves the answer box (sent), then submits

    expect(page.get_by_test_id("review-panel")).to_have_count(0)
    wait_idle(page)
    outcomes = [t.get_attribute("data-outcome") for t in messages(page, "tool").all()]
    assert outcomes == ["executed", "rejected", "answered"]
    expect(messages(page, "tool").nth(1)).to_contain_text("keep it, we need the old notes")


def test_ctrl_enter_with_an_undecided_card_moves_the_focus_to_it(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "delete notes/x.txt and delete notes/y.txt")
    expect(card(page, 0)).to_be_focused()
    page.keyboard.press("a")
    page.keyboard.press("Control+Enter")
    expect(card(page, 1)).to_be_focused()
    expect(page.get_by_test_id("review-panel")).to_be_visible()  # nothing was submitted


def _backdate_review(server: AppServer, thread_url: str, seconds: int) -> None:
    """Move the thread's "review requested" time ``seconds`` into the past (server data)."""
    thread_id = thread_url.rsplit("/", 1)[-1]
    with sqlite3.connect(server.data_dir / "hitl.sqlite") as db:
        (raised,) = db.execute("SELECT requested_at FROM review_requests WHERE thread_id = ?", (thread_id,)).fetchone()
        earlier = datetime.fromisoformat(raised) - timedelta(seconds=seconds)
        db.execute("UPDATE review_requests SET requested_at = ? WHERE thread_id = ?", (earlier.isoformat(sep=" "), thread_id))


def test_waited_time_counts_from_the_server_not_the_browser_clock(page: Page, app_server: AppServer):
    url = open_new_thread(page, app_server)
    send(page, "delete notes/y.txt")
    expect(page.get_by_test_id("waited")).to_contain_text(" s")
    _backdate_review(app_server, url, 4 * 60 + 50)
    # a browser whose clock is off by years still shows the server's waited time
    page.clock.install(time=datetime(2001, 1, 1, tzinfo=UTC))
    page.reload()
    waited = page.get_by_test_id("waited")
    expect(waited).to_have_text(re.compile(r"^waiting [45] min$"))
    # and it runs on without a reload: 4 min 50 s becomes 5 min within seconds
    expect(waited).to_have_text("waiting 5 min")


def test_high_risk_card_shows_its_badge_and_is_never_approved_in_bulk(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "email alice@example.com about lunch: noon and pay 500 to Bob")
    pay = card(page, 1)
    expect(pay.get_by_test_id("risk-badge")).to_have_text("high risk")
    expect(pay).to_contain_text("Moves money out of the company account")
    expect(card(page, 0).get_by_test_id("risk-badge")).to_have_count(0)
    expect(page.get_by_test_id("approve-all")).to_have_count(0)
    card(page, 0).get_by_test_id("decision-approve").click()
    expect(page.get_by_test_id("approve-all")).to_have_count(0)  # "Approve the rest" would fill the payment
    pay.get_by_test_id("decision-reject").click()
    expect(page.get_by_test_id("decided-count")).to_have_text("2 of 2 decided")


def _food_rows(server: AppServer) -> list[int]:
    counts = []
    for db in (server.data_dir / "demo_records").glob("*.sqlite"):
        with sqlite3.connect(db) as conn:
            counts.append(conn.execute("SELECT count(*) FROM records WHERE category = 'food'").fetchone()[0])
    return counts


def test_effect_previews_show_the_file_diff_and_the_rows_a_write_would_touch(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "write notes/x.txt: hello world and sql: delete from records where category = 'food'")
    write = card(page, 0).get_by_test_id("effect-preview")
    expect(write).to_have_attribute("data-kind", "diff")
    expect(write).to_contain_text("-Scratch notes X.")
    expect(write).to_contain_text("+hello world")
    sql = card(page, 1).get_by_test_id("effect-preview")
    expect(sql).to_have_attribute("data-kind", "sql")
    expect(sql).to_contain_text("DELETE\nFROM records\nWHERE category = 'food'")
    expect(sql.get_by_test_id("effect-preview-note")).to_have_text("Would change 2 rows (counted, then rolled back).")
    assert 0 not in _food_rows(app_server)  # the count was rolled back: nothing was deleted
    for i in (0, 1):
        card(page, i).get_by_test_id("decision-reject").click()
    page.get_by_test_id("submit-decisions").click()
    wait_idle(page)
    assert 0 not in _food_rows(app_server)


def test_axe_finds_no_serious_problem_on_the_chat_and_a_pending_review(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    assert axe_problems(page) == []
    send(page, "email alice@example.com about the report: it is ready and pay 500 to Bob and write notes/x.txt: hi")
    expect(cards(page)).to_have_count(3)
    assert axe_problems(page) == []
    card(page, 0).get_by_test_id("decision-edit").click()
    expect(card(page, 0).get_by_test_id("edit-form")).to_be_visible()
    assert axe_problems(page) == []
    card(page, 0).get_by_test_id("edit-mode-json").click()
    expect(card(page, 0).get_by_test_id("edit-json")).to_be_visible()
    assert axe_problems(page) == []
    page.keyboard.press("Escape")
    page.get_by_test_id("shortcuts-button").click()
    expect(page.get_by_test_id("shortcuts-help")).to_be_visible()
    assert axe_problems(page) == []


VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_screenshots_of_risk_badge_previews_and_keyboard_focus(browser: Browser, app_server: AppServer, size: str):
    """Saved under ``test-artifacts/shots/desk-<size>-*.png`` for people to look at."""
    context = browser.new_context(viewport=VIEWPORTS[size])
    page = watched_page(context)
    try:
        open_new_thread(page, app_server)
        send(
            page,
            "pay 500 to Bob and write notes/x.txt: hello world and "
            "sql: update records set amount = amount * 2 where category = 'food'",
        )
        expect(card(page, 0)).to_be_focused()
        SHOTS.mkdir(parents=True, exist_ok=True)
        shoot_at(page, card(page, 0), f"desk-{size}-risk")
        for i, name in ((1, "preview-file"), (2, "preview-sql")):
            expect(card(page, i).get_by_test_id("effect-preview")).to_be_visible()
            card(page, i).scroll_into_view_if_needed()
            shoot_at(page, card(page, i), f"desk-{size}-{name}")
        card(page, 0).scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"desk-{size}-review.png"))
    finally:
        problems = list(getattr(page, "problems", []))
        context.close()
    assert not problems, problems


def test_a_checked_edit_with_a_long_address_fits_a_phone(browser: Browser, app_server: AppServer):
    """QA (390 px): "Will run with" ran past the card's right edge, the address cut at "...@su"."""
    context = browser.new_context(viewport=VIEWPORTS["phone"])
    page = watched_page(context)
    try:
        open_new_thread(page, app_server)
        send(page, "email alice@example.com about a")
        first = card(page, 0)
        first.get_by_test_id("decision-edit").click()
        long_to = "carol.with.a.very.long.address@subdomain.example.com"
        edit_json(first, json.dumps({"to": long_to, "subject": "a", "body": ""}))
        first.get_by_test_id("edit-check").click()
        summary = first.get_by_test_id("edited-summary")
        expect(summary).to_contain_text(long_to)
        code, box = summary.locator("pre").first.bounding_box(), first.bounding_box()
        assert code is not None and box is not None
        assert code["x"] + code["width"] <= box["x"] + box["width"], (code, box)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        SHOTS.mkdir(parents=True, exist_ok=True)
        shoot_at(page, first, "desk-phone-checked-edit-long-address")
    finally:
        problems = list(getattr(page, "problems", []))
        context.close()
    assert not problems, problems


def test_leaving_a_field_for_check_edit_never_moves_the_button_under_the_pointer(page: Page, app_server: AppServer):
    """Leaving a field sends it and the diff gains a row; drawn above "Check edit", that row moved
    the button between the press and the release and the click was lost (CI, under load). The
    button stays where the pointer pressed it, and the click checks the edit."""
    open_new_thread(page, app_server)
    send(page, "email alice@example.com about the report: it is ready")
    first = card(page, 0)
    first.get_by_test_id("decision-edit").click()
    field = form_field(first, "to")
    field.fill("bob@example.com")
    check = first.get_by_test_id("edit-check")
    before = check.bounding_box()
    check.focus()  # what pressing the button does first: the field is left, so it is sent
    expect(first.get_by_test_id("edit-diff-row")).to_have_count(1)  # the server's answer is drawn
    after = check.bounding_box()
    assert before is not None and after is not None
    assert after["y"] == before["y"], f"Check edit moved from y={before['y']} to y={after['y']} as the field was sent"
    check.click()
    expect(first.get_by_test_id("card-choice")).to_have_text("edit")
