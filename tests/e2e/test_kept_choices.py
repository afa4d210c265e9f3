"""Card choices kept on the server until Submit, in Chromium, and the reviewer's own inbox count
right after their decision.

* Rejecting card 1 of 2 with a reason, then reloading and opening the thread in a new tab (a
  new Reflex tab state): card 1 is still "reject" with its reason, card 2 still undecided; a
  reason changed without leaving the field is kept too; approving card 2 and submitting resumes
  the run with exactly those decisions (the email rejected with the reason, the file deleted).
* Under examples/policies/team.toml a reviewer opens a member's payment from the thread page
  (his sidebar says 1 review waits), approves and submits: the badge and the "(1)" in the tab
  title go with his own decision.
* With an undo window (``slow_task``): approve, submit, open the thread in a new tab inside the
  window, Undo: the card comes back approved as submitted (it came back blank) and the count is
  back at once (it waited for the inbox's periodic re-read: an Undo announced nothing).
* An approval's "always allow" scope and an edit typed into the JSON editor but not checked come
  back in a new tab (the scope came back as "just this once", the editor closed and blank); the
  scope also after Submit and Undo, in the same tab and in a new one.
* A value typed into the edit form without leaving the field comes back in a new tab (QA: it was
  kept only on blur, so the typing was lost). Until "Check edit" passes the card's chip says
  "editing: not checked" and the count and Submit do not count it (QA: the chip said "edit" as
  soon as the editor opened); then "edit", "1 of 1 decided".
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.test_inbox import close, new_page
from tests.e2e.ui import (
    card,
    cards,
    edit_json,
    form_field,
    messages,
    open_new_thread,
    send,
    shoot,
    shoot_at,
    sign_in_browser,
    wait_idle,
)
from tests.helpers.app_server import AppServer

TEAM = Path(__file__).resolve().parents[2] / "examples" / "policies" / "team.toml"
NOTES_SHOTS = Path("/work/notes/shots/deskux")
WITH_UNDO = TEAM.read_text(encoding="utf-8").replace(
    'description = "Wait {seconds} seconds"\n', 'description = "Wait {seconds} seconds"\nundo_seconds = 120\n'
)


@pytest.fixture(scope="module")
def team_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app under the team policy, with a 120 s undo window on ``slow_task``."""
    data = tmp_path_factory.mktemp("kept-choices")
    policy = data / "team-undo.toml"
    policy.write_text(WITH_UNDO, encoding="utf-8")
    with AppServer(data / "app", env={"HITL_POLICY": str(policy)}) as server:
        yield server


def keep_shot(page: Page, name: str) -> None:
    """The viewport as ``test-artifacts/shots/<name>.png``, copied to ``/work/notes/shots/deskux``."""
    NOTES_SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shoot_at(page, card(page, 0), name), NOTES_SHOTS / f"{name}.png")


def reopen(page: Page) -> Page:
    """Open ``page``'s URL in a new tab of the same browser (same account, but a new Reflex tab:
    nothing of the old tab's server state comes with it; a plain reload keeps that state)."""
    assert not page.problems, page.problems  # type: ignore[attr-defined]
    later = watched_page(page.context)
    later.goto(page.url)
    return later


def test_a_reject_with_its_reason_stays_chosen_after_a_reload_and_submit_resumes_with_it(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "email bob@example.com about plans: hi and delete notes/old.txt")
    expect(cards(page)).to_have_count(2)
    card(page, 0).get_by_test_id("decision-reject").click()
    reason = card(page, 0).get_by_test_id("reject-message")
    reason.fill("wrong address")
    reason.blur()
    expect(reason).to_have_attribute("value", "wrong address")  # the server has it (it sent the card back)

    page.reload()  # the same tab
    expect(card(page, 0).get_by_test_id("card-choice")).to_have_text("reject")
    page = reopen(page)  # a new tab: only the server's kept choices can bring it back
    expect(cards(page)).to_have_count(2)
    expect(card(page, 0).get_by_test_id("card-choice")).to_have_text("reject")
    reason = card(page, 0).get_by_test_id("reject-message")
    expect(reason).to_have_value("wrong address")
    expect(card(page, 1).get_by_test_id("card-choice")).to_have_count(0)
    expect(page.get_by_test_id("decided-count")).to_have_text("1 of 2 decided")
    shoot(page, "kept-choice-after-reload")

    reason.fill("wrong address, ask Alice")  # no blur: kept once typing pauses
    expect(reason).to_have_attribute("value", "wrong address, ask Alice")
    page = reopen(page)
    expect(card(page, 0).get_by_test_id("reject-message")).to_have_value("wrong address, ask Alice")
    card(page, 1).get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    wait_idle(page)
    outcomes = messages(page, "tool").get_by_test_id("tool-outcome")
    expect(outcomes).to_have_text(["rejected", "executed"])
    expect(messages(page, "tool").first).to_contain_text("wrong address, ask Alice")
    assert not page.problems, page.problems  # type: ignore[attr-defined]


def test_a_form_edit_typed_without_leaving_the_field_comes_back_in_a_new_tab(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    send(page, "email bob@example.com about plans: hi")
    expect(cards(page)).to_have_count(1)
    card(page, 0).get_by_test_id("decision-edit").click()
    expect(card(page, 0).get_by_test_id("edit-form")).to_be_visible()
    chip = card(page, 0).get_by_test_id("card-choice")
    expect(chip).to_have_text("editing: not checked")  # not "edit": nothing is decided yet (QA)
    expect(page.get_by_test_id("decided-count")).to_have_text("0 of 1 decided")
    expect(page.get_by_test_id("submit-decisions")).to_be_disabled()
    form_field(card(page, 0), "to").fill("carol@example.com")  # no blur, no "Check edit"
    expect(card(page, 0).get_by_test_id("edit-diff")).to_contain_text("carol@example.com")  # the server has it
    keep_shot(page, "chip-editing-not-checked")
    page = reopen(page)
    expect(card(page, 0).get_by_test_id("card-editor")).to_be_visible()  # still open, not checked
    expect(card(page, 0).get_by_test_id("card-choice")).to_have_text("editing: not checked")
    expect(form_field(card(page, 0), "to")).to_have_value("carol@example.com")
    card(page, 0).get_by_test_id("edit-check").click()
    expect(card(page, 0).get_by_test_id("card-choice")).to_have_text("edit")  # checked: now it is decided
    expect(page.get_by_test_id("decided-count")).to_have_text("1 of 1 decided")
    expect(page.get_by_test_id("submit-decisions")).to_have_text("Submit 1 decision")
    keep_shot(page, "chip-edit-checked")
    page.get_by_test_id("submit-decisions").click()
    wait_idle(page)
    expect(messages(page, "tool").get_by_test_id("tool-outcome")).to_have_text(["edited"])
    assert not page.problems, page.problems  # type: ignore[attr-defined]


def test_the_reviewers_own_count_goes_with_his_decision_on_the_thread_page(browser: Browser, team_app: AppServer):
    member, rex = new_page(browser, grant=False), new_page(browser, grant=False)
    sign_in_browser(member, team_app, role="member", name="May")
    sign_in_browser(rex, team_app, role="reviewer", name="Rex")
    thread_url = open_new_thread(member, team_app)
    send(member, "pay 500 to Bob")
    expect(card(member, 0)).to_be_visible()

    rex.goto(thread_url)
    expect(card(rex, 0)).to_be_visible()
    expect(rex.get_by_test_id("inbox-count")).to_have_text("1")
    expect(rex).to_have_title("(1) hitl_app · chat")
    card(rex, 0).get_by_test_id("decision-approve").click()
    rex.get_by_test_id("submit-decisions").click()
    expect(rex.get_by_test_id("inbox-count")).to_have_count(0)
    expect(rex).to_have_title("hitl_app · chat")
    expect(messages(member, "assistant").last).to_have_text("Paid 500 to Bob.")
    close(member, rex)


def test_undo_after_a_reload_brings_back_the_submitted_choice_and_the_count(browser: Browser, team_app: AppServer):
    may = new_page(browser, grant=False)
    sign_in_browser(may, team_app, role="member", name="May")
    open_new_thread(may, team_app)
    send(may, "wait 0 seconds")
    expect(card(may, 0)).to_be_visible()
    count = may.get_by_test_id("inbox-count")
    expect(count).to_have_text("1")
    card(may, 0).get_by_test_id("decision-approve").click()
    may.get_by_test_id("submit-decisions").click()
    expect(may.get_by_test_id("undo")).to_contain_text("Running in")
    expect(count).to_have_count(0)

    may = reopen(may)  # a new tab inside the window
    count = may.get_by_test_id("inbox-count")
    expect(may.get_by_test_id("undo")).to_contain_text("Running in")
    may.get_by_test_id("undo-button").click()
    expect(may.get_by_test_id("undo")).to_have_count(0)
    expect(card(may, 0).get_by_test_id("card-choice")).to_have_text("approve")  # as submitted
    expect(may.get_by_test_id("submit-decisions")).to_have_text("Submit 1 decision")
    expect(count).to_have_text("1")
    shoot(may, "undo-after-reload")
    close(may)


TYPED = '{"to": "alice@example.com",\n "subject": "plans", "body": "draft one"}'


def kept_draft(server: AppServer, text: str, timeout: float = 10.0) -> None:
    """Wait until an open edit with JSON ``text`` is kept in ``card_choices`` (the editor keeps it
    once typing has paused 800 ms, without a blur)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        con = sqlite3.connect(server.data_dir / "hitl.sqlite", timeout=10)
        try:
            found = [json.loads(c) for (c,) in con.execute("SELECT choice FROM card_choices WHERE submitted = 0")]
        finally:
            con.close()
        if any(c.get("open") and c.get("text") == text for c in found):
            return
        time.sleep(0.2)
    raise AssertionError(f"the open edit was not kept within {timeout} s")


def test_a_grant_scope_and_an_unchecked_edit_come_back_in_a_new_tab_and_after_an_undo(browser: Browser, team_app: AppServer):
    may = new_page(browser, grant=False)
    sign_in_browser(may, team_app, role="member", name="May")
    open_new_thread(may, team_app)
    send(may, "email bob@example.com about plans: hi and wait 0 seconds")
    expect(cards(may)).to_have_count(2)
    card(may, 1).get_by_test_id("decision-approve").click()
    card(may, 1).get_by_test_id("grant-scope").select_option("thread:24")
    card(may, 0).get_by_test_id("decision-edit").click()
    edit_json(card(may, 0), TYPED)  # no blur, no "Check edit": kept once typing pauses (800 ms)
    expect(card(may, 0).get_by_test_id("edit-diff")).to_contain_text("alice@example.com")  # the server has the text
    kept_draft(team_app, TYPED)

    may = reopen(may)  # a new tab: only what the server kept comes back
    editor = card(may, 0).get_by_test_id("card-editor")
    expect(editor).to_be_visible()  # still open, not checked
    expect(editor.get_by_test_id("edit-json").locator(".cm-content")).to_have_text(TYPED.replace("\n", ""))
    expect(card(may, 1).get_by_test_id("grant-scope")).to_have_value("thread:24")
    expect(card(may, 0).get_by_test_id("card-choice")).to_have_text("editing: not checked")
    expect(may.get_by_test_id("decided-count")).to_have_text("1 of 2 decided")
    shoot(may, "kept-open-edit-and-scope")

    card(may, 0).get_by_test_id("edit-check").click()
    expect(editor).to_have_count(0)
    may.get_by_test_id("submit-decisions").click()
    expect(may.get_by_test_id("undo")).to_contain_text("Running in")
    may.get_by_test_id("undo-button").click()  # the same tab
    expect(may.get_by_test_id("undo")).to_have_count(0)
    expect(card(may, 1).get_by_test_id("grant-scope")).to_have_value("thread:24")
    may = reopen(may)  # and a new one
    expect(card(may, 1).get_by_test_id("card-choice")).to_have_text("approve")
    expect(card(may, 1).get_by_test_id("grant-scope")).to_have_value("thread:24")
    expect(card(may, 0).get_by_test_id("card-choice")).to_have_text("edit")
    expect(may.get_by_test_id("submit-decisions")).to_have_text("Submit 2 decisions")
    close(may)
