"""A long thread opens on its latest messages with the pending review ready, and "Show earlier
messages" brings back the earlier ones page by page (issue 5: a 1,000-message thread must be
interactive quickly, so the page renders a window of ``MESSAGE_PAGE`` rows)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from playwright.sync_api import Page, expect

from bench.seed import seed_long_thread
from hitl_app.ui.rows import MESSAGE_PAGE
from tests.e2e.ui import cards, sign_in_browser
from tests.helpers.app_server import AppServer


def test_long_thread_shows_latest_page_and_loads_earlier_ones(page: Page, app_server: AppServer):
    n = MESSAGE_PAGE + 30  # rows: n - 2 seeded history messages, the user's request, the model's reply with the tool call
    with ThreadPoolExecutor(1) as pool:  # its own event loop: Playwright's runs in this thread
        tid = pool.submit(seed_long_thread, app_server.data_dir, n).result(timeout=120)
    sign_in_browser(page, app_server)  # the seeded thread has no owner: any signed-in account opens it
    page.goto(f"{app_server.url}/thread/{tid}")
    rows = page.locator("[data-testid=message]")
    expect(cards(page)).to_have_count(1)
    expect(rows).to_have_count(MESSAGE_PAGE)
    expect(rows.last).to_contain_text("alice@example.com")
    expect(page.get_by_text("Question 0:", exact=False)).to_have_count(0)
    # the review is usable at once, with the earlier messages still hidden
    page.get_by_test_id("decision-reject").click()
    expect(page.get_by_test_id("reject-message")).to_be_visible()
    earlier = page.get_by_test_id("show-earlier")
    expect(earlier).to_contain_text(f"{n - MESSAGE_PAGE} more")
    earlier.click()
    expect(rows).to_have_count(n)
    expect(rows.first).to_contain_text("Question 0:")
    expect(earlier).to_have_count(0)
    # the reviewer's open choice survived the reload of the window
    expect(page.get_by_test_id("reject-message")).to_be_visible()
    expect(rows.last).to_contain_text("alice@example.com")
