"""The review desk in Chromium: a grant from a card, revoking it, a deadline that expires while
the page is open and after a reload (and the row of a card without a deadline that it answered too),
Undo; screenshots of the countdown, grants and metrics."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import card, cards, messages, open_new_thread, send, shoot, sign_in_browser, wait_idle
from tests.helpers.app_server import AppServer

NOTES_SHOTS = Path("/work/notes/shots/desk2")

POLICY = """
[tools.send_email]
allowed_decisions = ["approve", "edit", "reject"]
description = "Send an email to {to}"

[tools.write_file]
allowed_decisions = ["approve", "reject"]
description = "Write the file {path}"
deadline = "6s"
timeout_message = "Nobody approved writing the file in time; do not write it."

[tools.delete_file]
allowed_decisions = ["approve", "reject"]
description = "Delete the file {path}"
deadline = "15m"
approvals = 2
reviewers = ["owner", "reviewer"]

[tools.slow_task]
allowed_decisions = ["approve", "reject"]
description = "Wait {seconds} seconds"
undo_seconds = 4

[tools.transfer_funds]
allowed_decisions = ["approve", "reject"]
description = "Pay {amount} to {to}"
grantable = false
"""


@pytest.fixture(scope="module")
def desk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    data = tmp_path_factory.mktemp("e2e-desk")
    policy = data / "desk.toml"
    policy.write_text(POLICY, encoding="utf-8")
    server = AppServer(data / "app", env={"HITL_POLICY": str(policy), "HITL_SWEEP_SECONDS": "0.5"})
    server.start()
    yield server
    server.stop()


def keep(page: Page, name: str) -> None:
    path = shoot(page, f"desk2-{name}")
    NOTES_SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, NOTES_SHOTS / f"{name}.png")


def ask_card(page: Page, text: str) -> None:
    send(page, text)
    expect(cards(page)).to_have_count(1)


def test_grant_from_a_card_then_revoke(page: Page, desk_server: AppServer):
    # a reviewer: the Metrics page is for reviewers and admins (a member is refused)
    sign_in_browser(page, desk_server, role="reviewer")
    open_new_thread(page, desk_server)
    ask_card(page, "email a@example.com about one")
    first = card(page, 0)
    expect(first.get_by_test_id("grant-scope")).to_have_count(0)  # offered next to an approval
    first.get_by_test_id("decision-approve").click()
    first.get_by_test_id("grant-scope").select_option("thread:24")
    page.get_by_test_id("submit-decisions").click()
    wait_idle(page)
    expect(messages(page, "tool")).to_have_count(1)
    # the next call runs without a card, and says which grant approved it
    send(page, "email b@example.com about two")
    wait_idle(page)
    expect(messages(page, "tool")).to_have_count(2)
    expect(cards(page)).to_have_count(0)
    expect(messages(page, "tool").last).to_contain_text("approved by grant: this tool in this thread, by")
    # a non-grantable tool offers no grant
    ask_card(page, "pay 20 to Bob")
    card(page, 0).get_by_test_id("decision-approve").click()
    expect(card(page, 0).get_by_test_id("grant-scope")).to_have_count(0)
    expect(card(page, 0).get_by_test_id("grant-note")).to_contain_text("The policy does not allow grants for transfer_funds")
    card(page, 0).get_by_test_id("decision-reject").click()
    page.get_by_test_id("submit-decisions").click()
    wait_idle(page)
    thread_url = page.url
    # the Grants page lists it with one use; revoke it
    page.goto(desk_server.url + "/grants")
    expect(page.get_by_test_id("grants-page")).to_be_visible()
    row = page.get_by_test_id("grant-row")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-status", "active")
    expect(row.get_by_test_id("grant-uses")).to_have_text("1")
    keep(page, "grants-page-active")
    row.get_by_test_id("grant-revoke").click()
    expect(row).to_have_attribute("data-status", "revoked")
    expect(row.get_by_test_id("grant-revoke")).to_have_count(0)
    keep(page, "grants-page-revoked")
    # the very next matching call asks again
    page.goto(thread_url)
    ask_card(page, "email c@example.com about three")
    # the metrics of these reviews, as charts
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(desk_server.url + "/metrics")
    expect(page.get_by_test_id("metrics-page")).to_be_visible()
    expect(page.locator(".recharts-wrapper")).to_have_count(2)
    for chart in ("metrics-days-chart", "metrics-tools-chart"):  # drawn after the numbers, in the place kept for them
        expect(page.get_by_test_id(chart)).not_to_have_attribute("aria-busy", "true")
        assert (page.get_by_test_id(chart).bounding_box() or {"height": 0})["height"] >= 200
    expect(page.get_by_test_id("metrics-reviews")).to_have_text("2")  # the grant's call had no card
    expect(page.locator(".recharts-legend-item-text", has_text="granted")).to_be_visible()
    keep(page, "metrics-page")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator(".recharts-wrapper")).to_have_count(2)
    keep(page, "metrics-page-phone")
    page.goto(desk_server.url + "/grants")
    expect(page.get_by_test_id("grant-row")).to_have_count(1)
    # every column fits the phone's width: the row is a block of labelled lines, nothing scrolls sideways
    box = page.get_by_test_id("grant-row").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390, box
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    keep(page, "grants-page-phone")


def test_a_short_deadline_expires_while_open_and_after_a_reload(page: Page, desk_server: AppServer):
    open_new_thread(page, desk_server)
    ask_card(page, "write notes/a.txt: hello")
    deadline = card(page, 0).get_by_test_id("deadline")
    expect(deadline).to_contain_text("Rejected by policy in")
    keep(page, "deadline-countdown")
    expect(cards(page)).to_have_count(0, timeout=20_000)  # the server rejected it; the page follows
    expect(page.get_by_test_id("inbox-count")).to_have_count(0)  # and the sidebar's "Reviews 1" goes (it stayed)
    expect(messages(page, "tool").last).to_contain_text(
        "rejected by the policy: the deadline of card 1 passed (6 s without a decision)"
    )
    # a second one: reload while it waits, the countdown comes back, and it still expires
    ask_card(page, "write notes/b.txt: hello")
    page.reload()
    expect(card(page, 0).get_by_test_id("deadline")).to_contain_text("Rejected by policy in")
    expect(cards(page)).to_have_count(0, timeout=20_000)
    expect(messages(page, "tool")).to_have_count(2)
    expect(messages(page, "tool").last).to_contain_text("the deadline of card 1 passed (6 s")
    # issue 23: a card without a deadline (the mail) beside one with 6 s: when card 1's deadline passes,
    # the whole review is answered, and the mail's own row says so plainly, never "0 s" or "the reviewer"
    send(page, "write notes/c.txt: hello and email b@example.com about lunch")
    expect(cards(page)).to_have_count(2)
    expect(card(page, 1).get_by_test_id("deadline")).to_contain_text("Rejected by policy in")  # the review's deadline
    expect(cards(page)).to_have_count(0, timeout=20_000)
    tools = messages(page, "tool")
    expect(tools).to_have_count(4)
    own, sibling = tools.nth(2), tools.nth(3)
    expect(own).to_have_attribute("data-outcome", "rejected")
    expect(sibling).to_have_attribute("data-outcome", "rejected")
    expect(sibling.get_by_test_id("audit-line")).to_have_text(
        "rejected by the policy: the deadline of card 1 passed (6 s without a decision), which answered the whole review"
    )
    expect(sibling).to_contain_text("That answered the whole review, so the send_email call did not run.")
    expect(sibling).not_to_contain_text(re.compile(r"\b0 s\b|reviewer rejected"))
    expect(page.get_by_test_id("inbox-count")).to_have_count(0)
    sibling.locator("summary").click()  # opened, as a person reads it
    expect(sibling).to_have_attribute("open", "")
    keep(page, "deadline-sibling-row")
    wait_idle(page)
    summary = messages(page, "assistant").last
    expect(summary).to_contain_text("rejected by the policy: the deadline of card 1 passed")
    expect(summary).not_to_contain_text(re.compile(r"\b0 s\b|reviewer rejected"))


def test_undo_puts_the_card_back_then_the_window_runs_it(page: Page, desk_server: AppServer):
    open_new_thread(page, desk_server)
    ask_card(page, "wait 0 seconds")
    card(page, 0).get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    undo = page.get_by_test_id("undo")
    expect(undo).to_contain_text("Running in")
    # the composer line counts down to the run too (not "decide every card, then submit")
    expect(page.get_by_test_id("composer-undo-left")).to_contain_text(
        re.compile(r"^Every card is decided: the agent goes on in \d+ s unless the submission is undone\.$")
    )
    keep(page, "undo-window")
    undo.get_by_test_id("undo-button").click()
    expect(cards(page)).to_have_count(1)
    expect(card(page, 0).get_by_test_id("card-choice")).to_have_text("approve")  # as it was
    expect(page.get_by_test_id("review-note")).to_have_text(
        "Undone: your decisions are back on the cards. Nothing happens until you press Submit."
    )
    expect(messages(page, "tool")).to_have_count(0)
    page.get_by_test_id("submit-decisions").click()
    expect(page.get_by_test_id("undo")).to_be_visible()
    url, context = page.url, page.context
    page.close()  # the tab is gone: the server still runs it when the window ends
    later = context.new_page()
    later.wait_for_timeout(5_000)
    later.goto(url)
    expect(messages(later, "tool")).to_have_count(1)
    expect(cards(later)).to_have_count(0)


def test_a_decided_card_shows_no_deadline(page: Page, desk_server: AppServer):
    # the review's deadline decides only the cards still open: a card already decided shows none
    open_new_thread(page, desk_server)
    send(page, "email a@example.com about x and delete notes/x.txt")
    expect(cards(page)).to_have_count(2)
    expect(card(page, 0).get_by_test_id("deadline")).to_contain_text("Rejected by policy in")
    card(page, 0).get_by_test_id("decision-approve").click()
    card(page, 1).get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    expect(card(page, 1).get_by_test_id("approval-progress")).to_contain_text("1 of 2 approvals")
    expect(card(page, 0).get_by_test_id("card-standing")).to_contain_text("Decided")
    expect(card(page, 0).get_by_test_id("deadline")).to_have_count(0)
    expect(card(page, 1).get_by_test_id("deadline")).to_contain_text("Rejected by policy in")
    page.reload()
    expect(card(page, 1).get_by_test_id("deadline")).to_contain_text("Rejected by policy in")
    expect(card(page, 0).get_by_test_id("deadline")).to_have_count(0)
