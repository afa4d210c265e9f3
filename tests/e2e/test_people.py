"""People and roles in Chromium, under examples/policies/team.toml:

- a link shows only where its page lets the person in (no Metrics link for a member, no Accounts
  for a reviewer);
- a card's state and the review's progress are announced (``aria-live="polite"`` in the DOM) and
  axe finds no serious problem on the /reviews inbox with an item in it;
- the line above a member's locked composer says whom the review waits for, not "decide every
  card" when nothing is theirs to decide;
- the Accounts page lists a pending invite (who, role, expiry) and revokes it; a revoked or used
  invite link shows a plain refusal up front, with no form.

Screenshots (desktop and phone) go to /work/notes/shots/people/ for a person to look at.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.ui import axe_problems, card, open_new_thread, send, shown_secret, sign_in_browser
from tests.helpers.app_server import AppServer

TEAM = Path(__file__).resolve().parents[2] / "examples" / "policies" / "team.toml"
SHOTS = Path(os.environ.get("HITL_SHOTS", "/work/notes/shots/people"))
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("e2e-people"), env={"HITL_POLICY": str(TEAM)})
    server.start()
    yield server
    server.stop()


def person(browser: Browser, server: AppServer, role: str, name: str) -> Page:
    page = watched_page(browser.new_context(viewport={"width": 1280, "height": 900}))
    sign_in_browser(page, server, role=role, name=name)
    return page


def close(*pages: Page) -> None:
    problems = [p for page in pages for p in getattr(page, "problems", [])]
    for page in pages:
        page.context.close()
    assert not problems, f"browser problems: {problems}"


def shots(page: Page, name: str) -> None:
    """Desktop and phone screenshots of what the page shows now."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    page.screenshot(path=str(SHOTS / f"{name}-desktop.png"))
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(300)  # let the layout settle before the picture (not an assertion)
    page.screenshot(path=str(SHOTS / f"{name}-phone.png"), full_page=True)
    if size:
        page.set_viewport_size(size)


def test_a_link_shows_only_where_its_page_lets_the_person_in(browser, team_server):
    member = person(browser, team_server, "member", "Mo")
    open_new_thread(member, team_server)
    for shown in ("audit-link", "grants-link"):
        expect(member.get_by_test_id(shown)).to_be_visible()
    expect(member.get_by_test_id("metrics-link")).to_have_count(0)
    member.get_by_test_id("user-menu").click()
    expect(member.get_by_test_id("user-menu-role")).to_have_text("member")
    expect(member.get_by_test_id("admin-link")).to_have_count(0)
    member.get_by_test_id("grants-link").click()  # the links a member sees let them in
    member.wait_for_url(re.compile(r".*/grants$"))
    expect(member.get_by_test_id("grants-page")).to_be_visible()
    member.go_back()
    member.get_by_test_id("audit-link").click()
    member.wait_for_url(re.compile(r".*/audit$"))
    expect(member.get_by_test_id("audit-export-csv")).to_be_visible()

    reviewer = person(browser, team_server, "reviewer", "Rex")
    open_new_thread(reviewer, team_server)
    reviewer.get_by_test_id("user-menu").click()
    expect(reviewer.get_by_test_id("user-menu-role")).to_have_text("reviewer")
    expect(reviewer.get_by_test_id("admin-link")).to_have_count(0)
    reviewer.keyboard.press("Escape")
    reviewer.get_by_test_id("metrics-link").click()
    reviewer.wait_for_url(re.compile(r".*/metrics$"))
    expect(reviewer.get_by_test_id("metrics-page")).to_be_visible()
    expect(reviewer.get_by_text("Review metrics are for reviewers and admins.")).to_have_count(0)
    close(member, reviewer)


def test_card_state_is_announced_and_the_composer_line_says_whom_it_waits_for(browser, team_server):
    member = person(browser, team_server, "member", "Mo")
    thread_id = open_new_thread(member, team_server).rsplit("/", 1)[-1]
    send(member, "pay 1500 to Bob")
    first = card(member, 0)
    expect(first).to_be_visible()
    expect(first.get_by_test_id("approval-progress")).to_have_text("0 of 2 approvals")
    for testid in ("approval-progress", "card-state", "decided-count"):
        expect(member.get_by_test_id(testid).first).to_have_attribute("aria-live", "polite")
    line = member.get_by_test_id("composer-lock-reason")
    expect(line).to_have_text("Waiting for a reviewer to decide (2 approvals still needed); nothing here is yours to approve.")
    shots(member, "composer-line")

    reviewer = person(browser, team_server, "reviewer", "Rex")
    reviewer.goto(team_server.url + "/reviews")
    item = reviewer.locator(f"[data-testid=inbox-item][data-thread-id='{thread_id}']")
    expect(item).to_have_count(1)
    assert axe_problems(reviewer) == []
    item.click()
    expect(card(reviewer, 0)).to_be_visible()
    notice = reviewer.get_by_test_id("read-only-notice")
    expect(notice).to_contain_text("decide every card")
    reviewer.get_by_test_id("decision-approve").click()
    reviewer.get_by_test_id("submit-decisions").click()
    expect(first.get_by_test_id("approval-progress")).to_have_text(re.compile(r"^1 of 2 approvals: Rex"))  # live
    expect(notice).to_have_text(  # the reviewer's part is done: no "decide the cards" any more
        "Someone else's thread: you can't message the agent here. Your decisions are in; waiting for 1 more approval from a"
        " reviewer."
    )
    shots(reviewer, "reviewer-after-approving")
    expect(line).to_have_text("Waiting for a reviewer to decide (1 approval still needed); nothing here is yours to approve.")
    close(member, reviewer)


def test_accounts_page_lists_a_pending_invite_and_a_revoked_or_used_link_refuses_up_front(browser, team_server):
    admin = person(browser, team_server, "admin", "Ada")
    admin.goto(team_server.url + "/admin")
    links = {}
    for email, role in (("rita.long.name@example.com", "reviewer"), ("ulla@example.com", "member")):
        admin.get_by_test_id("invite-email").fill(email)
        admin.get_by_test_id("invite-role").select_option(role)
        admin.get_by_test_id("invite-submit").click()
        expect(admin.get_by_test_id("admin-message")).to_contain_text(f"Invite for {email}")
        links[email] = shown_secret(admin, before=next(reversed(links.values()), ""))
    rita = admin.locator("[data-testid=invite-row][data-email='rita.long.name@example.com']")
    expect(rita).to_contain_text("reviewer")
    expect(rita).to_contain_text("Invited by Ada")
    expect(rita).to_contain_text(re.compile(r"expires in 3 days \(\w{3} \d+, \d\d:\d\d UTC\)"))
    shots(admin, "accounts-pending-invite")

    rita.get_by_test_id("invite-revoke").click()
    expect(admin.get_by_test_id("admin-message")).to_contain_text("revoked")
    expect(rita).to_have_count(0)
    expect(admin.locator("[data-testid=invite-row][data-email='ulla@example.com']")).to_have_count(1)

    guest = watched_page(browser.new_context())
    guest.goto(links["rita.long.name@example.com"])
    expect(guest.get_by_test_id("invite-refused")).to_contain_text("withdrawn by an admin")
    expect(guest.get_by_test_id("auth-submit")).to_have_count(0)
    guest.screenshot(path=str(SHOTS / "invite-revoked-desktop.png"))

    guest.goto(links["ulla@example.com"])  # a pending link: the form; accepted once, then refused
    guest.get_by_test_id("auth-name").fill("Ulla")
    guest.get_by_test_id("auth-password").fill("correct horse 1")
    guest.get_by_test_id("auth-submit").click()
    expect(guest.get_by_test_id("composer-input")).to_be_visible()
    other = watched_page(browser.new_context())
    other.goto(links["ulla@example.com"])
    expect(other.get_by_test_id("invite-refused")).to_contain_text("used already")
    expect(other.get_by_test_id("auth-submit")).to_have_count(0)
    admin.reload()
    expect(admin.get_by_test_id("admin-users")).to_contain_text("ulla@example.com")
    expect(admin.get_by_test_id("pending-invites")).to_have_count(0)
    close(admin, guest, other)


LONG_NAME = "Bartholomew" + "x" * 89
"""An unbroken 100-character display name (the longest allowed)."""


def no_sideways_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_long_names_wrap_a_longer_one_is_refused_and_disable_asks_first(browser, team_server):
    admin = person(browser, team_server, "admin", "Ada")
    admin.goto(team_server.url + "/admin")
    admin.get_by_test_id("temp-email").fill("long3000@example.com")  # 3,000 characters: refused, not cut
    admin.get_by_test_id("temp-name").fill("y" * 3000)
    admin.get_by_test_id("temp-submit").click()
    expect(admin.get_by_test_id("admin-error")).to_contain_text("Use at most 100 characters for the name (this one has 3,000)")
    admin.get_by_test_id("temp-email").fill("long@example.com")
    admin.get_by_test_id("temp-name").fill(LONG_NAME)
    admin.get_by_test_id("temp-submit").click()
    expect(admin.get_by_test_id("admin-message")).to_be_visible()
    temporary = shown_secret(admin)
    row = admin.locator("[data-testid=account-row][data-email='long@example.com']")
    expect(row.get_by_test_id("account-name")).to_have_text(LONG_NAME)
    box = row.get_by_test_id("disable-account").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1280 - 16, "Disable is pushed off-screen by the name"
    assert no_sideways_scroll(admin)
    shots(admin, "accounts-long-name")

    row.get_by_test_id("disable-account").click()  # one click only asks: it signs the person out everywhere
    dialog = admin.get_by_role("alertdialog")
    expect(dialog).to_contain_text("signed out everywhere")
    shots(admin, "accounts-disable-confirm")
    admin.get_by_test_id("disable-cancel").click()
    expect(dialog).to_have_count(0)
    expect(row).to_contain_text("must change password")  # still enabled
    expect(row.get_by_test_id("disable-account")).to_be_visible()

    long = watched_page(browser.new_context(viewport={"width": 1280, "height": 900}))
    long.goto(team_server.url + "/sign-in")
    long.get_by_test_id("auth-email").fill("long@example.com")
    long.get_by_test_id("auth-password").fill(temporary)
    long.get_by_test_id("auth-submit").click()
    expect(long.get_by_role("heading", name="Choose your password")).to_be_visible()
    expect(long.get_by_text(LONG_NAME)).to_be_visible()
    assert no_sideways_scroll(long)
    shots(long, "change-password-long-name")
    close(admin, long)


def test_a_member_opening_metrics_sees_only_why_and_a_join_page_names_the_email(browser, team_server):
    member = person(browser, team_server, "member", "Mo")
    member.goto(team_server.url + "/metrics")
    expect(member.get_by_test_id("metrics-error")).to_have_text("Review metrics are for reviewers and admins.")
    expect(member.get_by_test_id("metrics-reviews")).to_have_count(0)  # no zero counts, no empty charts
    expect(member.locator(".recharts-wrapper")).to_have_count(0)
    expect(member.get_by_test_id("metrics-period")).to_have_count(0)
    shots(member, "metrics-member")

    admin = person(browser, team_server, "admin", "Ada")
    admin.goto(team_server.url + "/admin")
    admin.get_by_test_id("invite-email").fill("Join.Me@example.com")
    admin.get_by_test_id("invite-submit").click()
    link = shown_secret(admin)
    admin.get_by_test_id("invite-email").fill("join.me@EXAMPLE.com")  # the same email in another case
    admin.get_by_test_id("invite-submit").click()
    expect(admin.get_by_test_id("admin-error")).to_contain_text("already a pending invite")
    guest = watched_page(browser.new_context(viewport={"width": 1280, "height": 900}))
    guest.goto(link)
    expect(guest.get_by_test_id("invite-email")).to_have_text("Join.Me@example.com")
    shots(guest, "join-names-the-email")
    close(member, admin, guest)
