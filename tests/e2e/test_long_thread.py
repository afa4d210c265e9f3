"""A long thread opens at its end with the pending review ready; earlier messages load as the reader
scrolls up (no click), and the page holds only the rows near the screen however far up one scrolls
(issue 23: a 10,000-message thread must open and scroll as fast as a short one; timing is in
``bench/thread_open.py``, not here)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from playwright.sync_api import Page, expect

from bench.seed import seed_long_thread
from hitl_app.ui.rows import MESSAGE_PAGE, WINDOW_ROWS
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


# The first message on screen in the thread's box: its number in the seeded history (each row's text names
# it: "Question k:" is message 2k, "Item i is" message i), or null when none shows.
FIRST_ON_SCREEN = """() => {
  const box = document.getElementById('thread-scroll').getBoundingClientRect();
  for (const m of document.querySelectorAll('[data-testid=message]')) {
    const r = m.getBoundingClientRect();
    if (r.bottom <= box.top || r.top >= box.bottom) continue;
    const q = /^Question (\\d+):/.exec(m.textContent), a = /Item (\\d+) is/.exec(m.textContent);
    if (q) return 2 * Number(q[1]);
    if (a) return Number(a[1]);
  }
  return null;
}"""


AT_THE_END = f"""() => !document.querySelector('[data-testid=show-later]') && ({IN_VIEW})()
  && Array.from(document.querySelectorAll('[data-testid=message]')).some((m) => m.textContent.includes('alice@example.com'))"""
"""No later rows on the server, the card on screen and the thread's last request among the rows shown."""
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


def test_far_up_a_thread_longer_than_the_window_the_latest_rows_come_back_as_you_scroll_down(page: Page, app_server: AppServer):
    """The tab holds at most ``WINDOW_ROWS`` rows: at the top of a longer thread the latest rows have left
    it ("Show later messages"), and scrolling down (no click) brings them back in order, with the reader's
    place kept, down to the card."""
    n = WINDOW_ROWS + 300
    with ThreadPoolExecutor(1) as pool:
        tid = pool.submit(seed_long_thread, app_server.data_dir, n).result(timeout=300)
    sign_in_browser(page, app_server)
    page.goto(f"{app_server.url}/thread/{tid}")
    expect(cards(page)).to_have_count(1)
    page.wait_for_function(IN_VIEW)
    expect(page.get_by_test_id("show-later")).to_have_count(0)
    # the reader acts (a wheel turn over the thread): the page stops bringing the new review into view
    area = page.locator("#thread-scroll").bounding_box()
    assert area is not None
    page.mouse.move(area["x"] + area["width"] / 2, area["y"] + area["height"] / 2)
    page.mouse.wheel(0, -200)
    page.wait_for_function(TO_TOP, polling=200, timeout=120_000)
    rows = page.locator("[data-testid=message]")
    expect(rows.first).to_contain_text("Question 0:")
    later = page.get_by_test_id("show-later")
    expect(later).to_contain_text("more)")  # the window left the end: the latest rows are on the server
    assert page.evaluate("() => window.__mostRows") < MESSAGE_PAGE

    # down a screen at a time: the first message on screen only moves forward, never back or past a screen
    seen: list[int] = []
    box = page.locator("#thread-scroll")
    while not page.evaluate(AT_THE_END):
        moved = box.evaluate("b => { const t = b.scrollTop; b.scrollTop += b.clientHeight * 0.8; return b.scrollTop > t; }")
        if not moved:  # at the bottom of the rows the tab holds: wait for the later ones (or the end)
            page.wait_for_function(
                "() => !document.querySelector('[data-testid=show-later]') ||"
                " (b => b.scrollHeight - b.scrollTop - b.clientHeight > 1)(document.getElementById('thread-scroll'))",
                timeout=60_000,
            )
            continue
        page.wait_for_function(f"() => ({FIRST_ON_SCREEN})() !== null")
        seen.append(page.evaluate(FIRST_ON_SCREEN))
        assert len(seen) < 1_000, "scrolling down never reached the card"
    jumps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
    assert seen[-1] > n - 60 and 0 <= min(jumps) and max(jumps) < 40, f"the first message on screen went {seen}"
    expect(later).to_have_count(0)
    expect(rows.last).to_contain_text("alice@example.com")

