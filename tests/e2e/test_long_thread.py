"""A long thread opens at its end with the pending review ready; earlier messages load as the reader
scrolls up (no click), and the page holds only the rows near the screen however far up one scrolls
(issue 23: a 10,000-message thread must open and scroll as fast as a short one; timing is in
``bench/thread_open.py``, not here)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from playwright.sync_api import Page, expect

from bench.seed import seed_long_thread
from hitl_app.ui.rows import MESSAGE_PAGE
from tests.e2e.ui import cards, sign_in_browser
from tests.helpers.app_server import AppServer

N = MESSAGE_PAGE * 6  # six pages: n - 2 seeded history messages, the request and the model's reply with the tool call
IN_VIEW = """() => {
  const box = document.getElementById('thread-scroll').getBoundingClientRect();
  const card = document.querySelector('[data-testid=approval-card]');
  if (!card) return false;
  const r = card.getBoundingClientRect();
  return r.top < box.bottom && r.bottom > box.top;
}"""
TO_TOP = """() => {
  const box = document.getElementById('thread-scroll');
  box.scrollTop = 0;
  const rows = document.querySelectorAll('[data-testid=message]');
  window.__mostRows = Math.max(window.__mostRows || 0, rows.length);
  return Array.from(rows).some((m) => m.textContent.startsWith('Question 0:'));
}"""


def _rows_in_dom(page: Page) -> int:
    return page.locator("[data-testid=message]").count()


def test_long_thread_opens_at_its_end_and_loads_earlier_messages_as_you_scroll(page: Page, app_server: AppServer):
    with ThreadPoolExecutor(1) as pool:  # its own event loop: Playwright's runs in this thread
        tid = pool.submit(seed_long_thread, app_server.data_dir, N).result(timeout=120)
    sign_in_browser(page, app_server)  # the seeded thread has no owner: any signed-in account opens it
    page.goto(f"{app_server.url}/thread/{tid}")
    expect(cards(page)).to_have_count(1)
    page.wait_for_function(IN_VIEW)  # it lands at the end: the card is on screen
    rows = page.locator("[data-testid=message]")
    expect(rows.last).to_contain_text("alice@example.com")
    expect(page.get_by_text("Question 0:", exact=False)).to_have_count(0)
    opened = _rows_in_dom(page)
    assert 0 < opened < MESSAGE_PAGE, f"{opened} rows in the DOM: the list should hold only those near the screen"
    elements = page.evaluate("() => document.getElementsByTagName('*').length")
    # the review is usable at once; a choice made now survives the pages loaded above it
    page.get_by_test_id("decision-reject").click()
    expect(page.get_by_test_id("reject-message")).to_be_visible()

    # scrolling up (no click) brings the earlier pages, down to the first message
    page.wait_for_function(TO_TOP, polling=200, timeout=60_000)
    expect(rows.first).to_contain_text("Question 0:")
    most = page.evaluate("() => window.__mostRows")
    assert most < MESSAGE_PAGE, f"{most} rows in the DOM at once while scrolling {N} messages"
    after = page.evaluate("() => document.getElementsByTagName('*').length")
    assert after < elements * 1.5, f"the DOM grew from {elements} to {after} elements while scrolling to the top"

    # back at the end, the choice is still there; a reload lands at the end again, with the card
    page.locator("#thread-scroll").evaluate("b => { b.scrollTop = b.scrollHeight; }")
    expect(page.get_by_test_id("reject-message")).to_be_visible()
    page.reload()
    expect(cards(page)).to_have_count(1)
    page.wait_for_function(IN_VIEW)
    expect(rows.last).to_contain_text("alice@example.com")
