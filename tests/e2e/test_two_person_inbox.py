"""Issue 10's "Finding the reviewer" end to end, in Chromium with three browsers and three accounts,
under examples/policies/team.toml (a payment over 1000 needs two reviewers):

May (member) asks the agent to pay 1500 to Bob; Rex's inbox (reviewer, tab hidden) shows it live and
the browser notification fires; Ria (reviewer) has the thread open before anyone decided: read-only
(no composer) and following live; Rex opens the item and approves, and every tab shows
"1 of 2 approvals: Rex"; Ria approves; May's tab (never reloaded) sees the run resume and finish;
the audit record names both reviewers. Run once with one worker on SQLite, once with three workers,
Redis and PostgreSQL (the three tabs on at least two workers).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_inbox import close, new_page
from tests.e2e.test_multi_worker import REDIS_URL, pid, reload_onto_another_worker, worker_of
from tests.e2e.ui import card, messages, open_new_thread, send, shoot, sign_in_browser
from tests.helpers.app_server import AppServer
from tests.helpers.postgres import fresh_database

TEAM = Path(__file__).resolve().parents[2] / "examples" / "policies" / "team.toml"
SHOTS = Path("/work/notes/shots/inbox2")


@pytest.fixture(scope="module", params=["one-worker-sqlite", "three-workers-redis-postgres"])
def team_app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app under the team policy: one worker on SQLite, or three workers + Redis + PostgreSQL."""
    data = tmp_path_factory.mktemp(f"e2e-{request.param}")
    if request.param == "one-worker-sqlite":
        with AppServer(data, env={"HITL_POLICY": str(TEAM)}) as server:
            yield server
        return
    with fresh_database() as url:
        env = {
            "HITL_POLICY": str(TEAM), "DATABASE_URL": url, "REFLEX_REDIS_URL": REDIS_URL,
            "GUNICORN_CMD_ARGS": "--workers 3 --graceful-timeout 5",
        }
        with AppServer(data, env=env) as server:
            yield server


def progress(page: Page) -> object:
    return expect(card(page, 0).get_by_test_id("approval-progress"))


def test_two_reviewers_approve_from_the_inbox_and_the_member_sees_the_run_finish_live(
    browser: Browser, team_app: AppServer, request: pytest.FixtureRequest
):
    multi = "three" in request.node.callspec.id
    member, rex, ria = (new_page(browser, grant=g) for g in (False, True, True))
    sign_in_browser(member, team_app, role="member", name="May")
    sign_in_browser(rex, team_app, role="reviewer", name="Rex")
    sign_in_browser(ria, team_app, role="reviewer", name="Ria")
    rex.goto(team_app.url + "/reviews")
    expect(rex.get_by_test_id("inbox-empty")).to_be_visible()
    rex.evaluate("window.__hidden = true")  # Rex switched to another tab

    thread_url = open_new_thread(member, team_app)
    member.evaluate("window.__not_reloaded = true")
    send(member, "pay 1500 to Bob")
    expect(card(member, 0)).to_be_visible()
    progress(member).to_have_text("0 of 2 approvals")

    item = rex.get_by_test_id("inbox-item")
    expect(item).to_have_count(1)  # live, no reload
    expect(item).to_contain_text("amount: 1500")
    expect(item).to_contain_text("May")
    expect(item).to_contain_text("needs 2 approvals")
    rex.wait_for_function("window.__notes.length === 1")  # the notification, while hidden
    assert rex.evaluate("__notes[0].title") == "Review waiting: transfer_funds"

    # Ria opens the thread before anyone decided: someone else's thread, read-only, no composer
    ria.goto(thread_url)
    if multi:  # Ria's tab on another worker than May's
        reload_onto_another_worker(ria, avoid=pid(worker_of(member)))
    expect(card(ria, 0)).to_be_visible()
    expect(ria.get_by_test_id("read-only-notice")).to_be_visible()
    expect(ria.get_by_test_id("composer-input")).to_have_count(0)
    expect(ria.get_by_test_id("inbox-count")).to_have_text("1")

    rex.evaluate("window.__hidden = false")
    item.click()  # the inbox item opens the thread with its card
    rex.wait_for_url(thread_url)
    expect(rex.get_by_test_id("read-only-notice")).to_be_visible()
    card(rex, 0).get_by_test_id("decision-approve").click()
    rex.get_by_test_id("submit-decisions").click()
    for page in (rex, member, ria):  # live in every tab
        progress(page).to_have_text("1 of 2 approvals: Rex")
    expect(rex.get_by_test_id("inbox-count")).to_have_count(0)  # Rex decided: nothing waits for him
    expect(ria.get_by_test_id("inbox-count")).to_have_text("1")
    if multi:
        print(f"workers: May {pid(worker_of(member))}, Ria {pid(worker_of(ria))}, Rex {pid(worker_of(rex))}")
    else:
        _shots(browser, team_app, rex, thread_url)

    card(ria, 0).get_by_test_id("decision-approve").click()
    ria.get_by_test_id("submit-decisions").click()
    for page in (member, ria):  # the run resumes and finishes, live in May's tab and in Ria's
        expect(page.get_by_test_id("tool-outcome").last).to_have_text("executed")
        expect(messages(page, "assistant").last).to_have_text("Paid 1500 to Bob.")
        expect(page.get_by_test_id("audit-line").last).to_contain_text("approved by Rex and Ria")
    expect(member.get_by_test_id("composer-input")).to_be_enabled()
    expect(member.get_by_test_id("approval-card")).to_have_count(0)
    # QA: the reviewer's hint about "the cards above" outlived the cards
    expect(ria.get_by_test_id("read-only-notice")).to_contain_text("Nothing here waits for you now.")
    assert member.evaluate("window.__not_reloaded === true")  # all of it without a reload
    expect(ria.get_by_test_id("inbox-count")).to_have_count(0)

    member.goto(team_app.url + "/audit")
    row = member.get_by_test_id("audit-row").first
    expect(row).to_have_attribute("data-tool", "transfer_funds")
    expect(row).to_have_attribute("data-reviewer", "Rex and Ria")
    close(member, rex, ria)


def _shots(browser: Browser, server: AppServer, rex: Page, thread_url: str) -> None:
    """The two-person card at "1 of 2 approvals", desktop and phone."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shoot(rex, "two-person-card-desktop"), SHOTS / "two-person-card-desktop.png")
    phone = new_page(browser, grant=False, viewport={"width": 390, "height": 844})
    phone.context.add_cookies(rex.context.cookies())
    phone.goto(thread_url)
    expect(phone.get_by_test_id("approval-progress")).to_have_text(re.compile(r"^1 of 2 approvals"))
    shutil.copy(shoot(phone, "two-person-card-phone"), SHOTS / "two-person-card-phone.png")
    close(phone)
