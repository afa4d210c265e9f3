"""The review panel's counter, card status and Submit label in shared reviews, in Chromium under
examples/policies/team.toml (screenshots in /work/notes/shots/labels/).

* Partial submit: Mo (member) approves the email card and answers the question of a batch whose
  delete needs a reviewer, and submits. His panel reads "2 of 3 decided · 1 waiting for a
  reviewer" (nobody acted on it yet, so not "another"), the two cards say "Decided", and no
  Submit is offered (a note says he waits for a reviewer and may still withdraw) — before:
  "0 of 3 decided" and "Submit 3 decisions".
* Two-person card: Rex approves a payment of 1500; his card reads "1 of 2 approvals: Rex", the
  header "0 of 1 decided · 1 waiting for another reviewer", and Submit is gone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_inbox import close, new_page
from tests.e2e.ui import card, open_new_thread, send, sign_in_browser
from tests.helpers.app_server import AppServer

TEAM = Path(__file__).resolve().parents[2] / "examples" / "policies" / "team.toml"
SHOTS = Path("/work/notes/shots/labels")


@pytest.fixture(scope="module")
def team_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    with AppServer(tmp_path_factory.mktemp("labels"), env={"HITL_POLICY": str(TEAM)}) as server:
        yield server


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.get_by_test_id("review-panel").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_partial_submit_counts_the_cards_decided_and_offers_no_submit_for_the_card_left_to_a_reviewer(
    browser: Browser, team_app: AppServer
):
    mo = new_page(browser, grant=False)
    sign_in_browser(mo, team_app, role="member", name="Mo Member")
    open_new_thread(mo, team_app)
    send(mo, "email bob@example.com about labels: hi and ask me which colour and delete notes.txt")
    expect(mo.get_by_test_id("approval-card")).to_have_count(3)
    count = mo.get_by_test_id("decided-count")
    expect(count).to_have_text("0 of 3 decided · 1 waiting for a reviewer")
    expect(mo.get_by_test_id("submit-decisions")).to_have_text("Submit")  # nothing chosen yet (C5: disabled)
    expect(card(mo, 2).get_by_test_id("card-standing")).to_have_text("Waiting for a reviewer")

    card(mo, 0).get_by_test_id("decision-approve").click()
    answer = card(mo, 1).get_by_test_id("respond-message")
    answer.fill("blue")
    answer.blur()
    expect(count).to_have_text("2 of 3 decided · 1 waiting for a reviewer")
    mo.get_by_test_id("submit-decisions").click()

    # one note, not three (QA shot 33): the waiting callout and the composer line; no "saved" note beside them
    expect(mo.get_by_test_id("nothing-left")).to_contain_text("Waiting for a reviewer")
    expect(mo.get_by_test_id("review-note")).to_have_count(0)
    for i in (0, 1):
        expect(card(mo, i).get_by_test_id("card-standing")).to_have_text("Decided")
        expect(card(mo, i).get_by_test_id("card-note")).to_contain_text("already decided")
    expect(card(mo, 0).get_by_test_id("card-state")).to_have_text(re.compile(r"^send_email: decided \(Approved by Mo"))
    expect(card(mo, 2).get_by_test_id("card-state")).to_have_text(re.compile(r"^delete_file: waiting for a reviewer"))
    expect(count).to_have_text("2 of 3 decided · 1 waiting for a reviewer")
    expect(mo.get_by_test_id("submit-decisions")).to_have_count(0)
    expect(mo.get_by_test_id("approve-all")).to_have_count(0)
    expect(mo.get_by_test_id("nothing-left")).to_contain_text("Waiting for a reviewer")
    _shot(mo, "partial-submit-desktop")
    close(mo)


def test_the_first_of_two_approvals_waits_for_another_reviewer(browser: Browser, team_app: AppServer):
    may, rex = new_page(browser, grant=False), new_page(browser, grant=False)
    sign_in_browser(may, team_app, role="member", name="May")
    sign_in_browser(rex, team_app, role="reviewer", name="Rex")
    thread_url = open_new_thread(may, team_app)
    send(may, "pay 1500 to Bob")
    expect(card(may, 0)).to_be_visible()
    rex.goto(thread_url)
    expect(rex.get_by_test_id("decided-count")).to_have_text("0 of 1 decided")
    expect(rex.get_by_test_id("submit-decisions")).to_have_text("Submit")
    card(rex, 0).get_by_test_id("decision-approve").click()
    rex.get_by_test_id("submit-decisions").click()

    expect(card(rex, 0).get_by_test_id("approval-progress")).to_have_text("1 of 2 approvals: Rex")
    expect(rex.get_by_test_id("decided-count")).to_have_text("0 of 1 decided · 1 waiting for another reviewer")
    expect(card(rex, 0).get_by_test_id("card-standing")).to_have_text("Waiting for another reviewer")
    expect(rex.get_by_test_id("submit-decisions")).to_have_count(0)
    expect(rex.get_by_test_id("nothing-left")).to_contain_text("Waiting for another reviewer")
    expect(card(may, 0).get_by_test_id("approval-progress")).to_have_text("1 of 2 approvals: Rex")
    _shot(rex, "two-person-1-of-2-desktop")
    close(may, rex)
