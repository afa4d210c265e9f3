"""What the undo window shows, in Chromium, under examples/policies/team.toml with a 120 s undo
window on ``slow_task`` (QA: the cards went away and only "Running in N s · Undo" was left, so
the reviewer could not see what they had just decided).

* May decides four cards herself (an edit, an approval, an answer, a reject with its reason) and
  submits: beside the Undo bar each card says its tool and decision, the edit with its new
  arguments, the reject with its reason, the answer; a new tab shows the same (it is the server's
  word, not the tab's); at 1280 px and 390 px nothing runs off the screen. Undo puts the cards back
  and the summary goes.
* Rex (reviewer) decides May's payment and wait: May's open tab shows the same summary and
  "unless Rex undoes it", without an Undo button; Rex's shows the button.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_inbox import close, new_page
from tests.e2e.test_kept_choices import reopen, team_app  # noqa: F401 (the module's app, a fixture)
from tests.e2e.ui import card, cards, form_field, open_new_thread, send, shoot, sign_in_browser

NOTES_SHOTS = Path("/work/notes/shots/deskux")


def keep(page: Page, name: str) -> None:
    """The viewport with the undo bar at its top, copied to ``/work/notes/shots/deskux``."""
    page.get_by_test_id("undo").evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)
    NOTES_SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shoot(page, f"deskux-{name}"), NOTES_SHOTS / f"{name}.png")


def decision(page: Page, tool: str):
    """The undo summary's line of ``tool``'s card."""
    return page.locator(f"[data-testid=undo-decision][data-action-name={tool}]")


def expect_summary(page: Page) -> None:
    """The four decisions of the first test, as the summary beside the Undo bar says them."""
    expect(page.get_by_test_id("undo-decision")).to_have_count(4)
    expect(decision(page, "send_email")).to_have_attribute("data-decision", "edit")
    expect(decision(page, "send_email").get_by_test_id("undo-verb")).to_have_text("edited")
    expect(decision(page, "send_email").get_by_test_id("undo-detail")).to_have_text(
        "to: bob@example.com -> alice@example.com"
    )
    expect(decision(page, "send_email").get_by_test_id("undo-args")).to_have_text(
        '{"to": "alice@example.com", "subject": "plans", "body": "hi"}'
    )
    expect(decision(page, "slow_task").get_by_test_id("undo-verb")).to_have_text("approved")
    expect(decision(page, "ask_user").get_by_test_id("undo-verb")).to_have_text("answered")
    expect(decision(page, "ask_user").get_by_test_id("undo-detail")).to_have_text("Tuesday")
    expect(decision(page, "write_file").get_by_test_id("undo-verb")).to_have_text("rejected")
    expect(decision(page, "write_file").get_by_test_id("undo-detail")).to_have_text("not now")


def test_the_undo_window_shows_what_each_card_decided_then_undo_puts_the_cards_back(browser: Browser, team_app):  # noqa: F811
    may = new_page(browser, grant=False)
    sign_in_browser(may, team_app, role="member", name="May")
    open_new_thread(may, team_app)
    send(may, "email bob@example.com about plans: hi and wait 0 seconds and ask me which day and write notes/a.txt: hi")
    expect(cards(may)).to_have_count(4)
    card(may, 0).get_by_test_id("decision-edit").click()
    form_field(card(may, 0), "to").fill("alice@example.com")
    card(may, 0).get_by_test_id("edit-check").click()
    expect(card(may, 0).get_by_test_id("card-choice")).to_have_text("edit")
    card(may, 1).get_by_test_id("decision-approve").click()
    answer = card(may, 2).get_by_test_id("respond-message")
    answer.fill("Tuesday")
    answer.blur()
    card(may, 3).get_by_test_id("decision-reject").click()
    reason = card(may, 3).get_by_test_id("reject-message")
    reason.fill("not now")
    reason.blur()
    submit = may.get_by_test_id("submit-decisions")
    expect(submit).to_have_text("Submit 4 decisions")
    submit.click()

    expect(may.get_by_test_id("undo")).to_contain_text("Running in")
    expect(may.get_by_test_id("undo-button")).to_be_visible()
    expect(cards(may)).to_have_count(0)
    expect_summary(may)
    keep(may, "undo-summary-1280")
    may.set_viewport_size({"width": 390, "height": 844})
    expect_summary(may)
    assert may.evaluate("document.documentElement.scrollWidth") <= 390, "the summary runs off a phone's screen"
    box = may.get_by_test_id("undo-summary").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    keep(may, "undo-summary-390")

    may = reopen(may)  # a new tab: the summary is the server's
    expect_summary(may)
    may.get_by_test_id("undo-button").click()
    expect(cards(may)).to_have_count(4)
    expect(may.get_by_test_id("undo-summary")).to_have_count(0)
    close(may)


def test_the_owner_sees_the_reviewers_decisions_beside_the_undo_bar_without_undo(browser: Browser, team_app):  # noqa: F811
    may, rex = new_page(browser, grant=False), new_page(browser, grant=False)
    sign_in_browser(may, team_app, role="member", name="May")
    sign_in_browser(rex, team_app, role="reviewer", name="Rex")
    thread_url = open_new_thread(may, team_app)
    send(may, "pay 500 to Bob and wait 0 seconds")
    expect(cards(may)).to_have_count(2)

    rex.goto(thread_url)
    expect(cards(rex)).to_have_count(2)
    card(rex, 0).get_by_test_id("decision-approve").click()
    card(rex, 1).get_by_test_id("decision-reject").click()
    rex.get_by_test_id("submit-decisions").click()
    expect(rex.get_by_test_id("undo-button")).to_be_visible()
    expect(rex.get_by_test_id("undo-decision")).to_have_count(2)

    expect(may.get_by_test_id("undo")).to_contain_text("unless Rex undoes it")  # live, no reload
    expect(may.get_by_test_id("undo-button")).to_have_count(0)
    expect(decision(may, "transfer_funds").get_by_test_id("undo-verb")).to_have_text("approved")
    expect(decision(may, "slow_task").get_by_test_id("undo-verb")).to_have_text("rejected")
    expect(decision(may, "slow_task")).to_contain_text("no reason given")
    keep(may, "undo-summary-owner-1280")
    rex.get_by_test_id("undo-button").click()  # leave nothing running for the module's other tests
    expect(cards(rex)).to_have_count(2)
    close(may, rex)
