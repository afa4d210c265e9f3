"""The review inbox end to end in Chromium, with two browsers (a member and a reviewer) under
examples/policies/team.toml: the member asks to pay, the reviewer's /reviews shows it live (no
reload), the sidebar count and the tab title follow, a notification fires while the reviewer's
tab is hidden (and opens the review when clicked), the item opens the thread with its card, and
the reviewer's approval empties the inbox. The inbox and the card say the same wait for the same
review (QA C6: the inbox said "just now" where the card said "waiting 53 s"). Permission to notify is asked only by the button.
"Nothing waits for you." sits in the middle of the page's column on a desktop and on a phone (QA:
it hugged the left edge)."""

from __future__ import annotations

import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.ui import card, open_new_thread, send, shoot, sign_in_browser
from tests.helpers.app_server import AppServer

TEAM = Path(__file__).resolve().parents[2] / "examples" / "policies" / "team.toml"
SHOTS = Path("/work/notes/shots/inbox2")
DESK_SHOTS = Path("/work/notes/shots/deskux")

# Records every Notification made (and every permission request), and lets the test say the tab
# is hidden (document.visibilityState), as a person switching to another tab would.
SPY = """
(() => {
  window.__notes = []; window.__asks = 0; window.__hidden = false;
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => window.__hidden ? 'hidden' : 'visible'});
  const Real = window.Notification;
  if (!Real) return;
  function Spy(title, options) {
    const record = {title, body: options && options.body, tag: options && options.tag};
    window.__notes.push(record);
    let n; try { n = new Real(title, options); } catch (e) { n = {close() {}}; }
    record.n = n; return n;
  }
  Object.defineProperty(Spy, 'permission', {get: () => Real.permission});
  Spy.requestPermission = (...a) => { window.__asks += 1; return Real.requestPermission(...a); };
  window.Notification = Spy;
})();
"""


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("e2e-inbox"), env={"HITL_POLICY": str(TEAM)})
    server.start()
    yield server
    server.stop()


def new_page(browser: Browser, *, grant: bool, viewport: dict | None = None) -> Page:
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900})
    if grant:
        context.grant_permissions(["notifications"])
    context.add_init_script(SPY)
    return watched_page(context)


def close(*pages: Page) -> None:
    problems = [p for page in pages for p in getattr(page, "problems", [])]
    for page in pages:
        page.context.close()
    assert not problems, f"browser problems: {problems}"


def test_a_payment_reaches_the_reviewer_live_with_count_title_and_notification(browser, team_server):
    member, reviewer = new_page(browser, grant=False), new_page(browser, grant=True)
    sign_in_browser(member, team_server, role="member", name="May")
    sign_in_browser(reviewer, team_server, role="reviewer", name="Rex")
    reviewer.goto(team_server.url + "/reviews")
    expect(reviewer.get_by_test_id("inbox-empty")).to_be_visible()
    expect(reviewer.get_by_test_id("inbox-count")).to_have_count(0)
    assert not reviewer.title().startswith("(")
    expect(reviewer.get_by_test_id("inbox-notify-on")).to_be_visible()  # granted: no button to press
    reviewer.evaluate("window.__hidden = true")  # the reviewer switched to another tab

    thread_url = open_new_thread(member, team_server)
    thread_id = thread_url.rsplit("/", 1)[-1]
    sent = time.monotonic()  # the review is raised after this
    send(member, "pay 500 to Bob")
    expect(card(member, 0)).to_be_visible()
    _backdate_review(team_server, thread_id, WAITED_S)  # it has waited 2 h 30 min: the figures have units to get wrong

    item = reviewer.get_by_test_id("inbox-item")
    expect(item).to_have_count(1)  # live: no reload
    expect(item).to_have_attribute("data-thread-id", thread_id)
    expect(item).to_have_attribute("data-action-name", "transfer_funds")
    expect(item).to_contain_text("amount: 500")
    expect(item).to_contain_text("May")
    expect(item).to_contain_text("needs 1 approval")
    expect(reviewer.get_by_test_id("inbox-count")).to_have_text("1")
    expect(reviewer).to_have_title(re.compile(r"^\(1\) hitl_app"))
    reviewer.wait_for_function("window.__notes.length === 1")
    note = reviewer.evaluate("({title: __notes[0].title, body: __notes[0].body})")
    assert note == {"title": "Review waiting: transfer_funds", "body": "May asked: amount: 500 · to: Bob"}
    assert reviewer.evaluate("window.__asks") == 0  # never asked on load
    expect(member.get_by_test_id("inbox-count")).to_have_count(0)  # the member may only withdraw it

    _shots(browser, team_server, reviewer)

    reviewer.evaluate("window.__hidden = false; window.__notes[0].n.onclick()")  # the person clicks the notification
    reviewer.wait_for_url(thread_url)
    expect(card(reviewer, 0)).to_be_visible()
    expect(reviewer.get_by_test_id("decision-approve")).to_be_visible()
    expect(reviewer).to_have_title(re.compile(r"^\(1\) hitl_app"))  # the title keeps the count on the thread page

    reviewer.get_by_test_id("inbox-link").click()
    reviewer.wait_for_url(re.compile(r".*/reviews$"))
    inbox_waited = _waited(reviewer.get_by_test_id("inbox-waited").locator("[data-waited-ms]"))
    read_inbox = time.monotonic()
    reviewer.get_by_test_id("inbox-item").click()  # the item opens the thread with its card
    reviewer.wait_for_url(thread_url)
    expect(card(reviewer, 0)).to_be_visible()
    card_waited = _waited(reviewer.get_by_test_id("waited"))
    read_card = time.monotonic()
    # QA C6: the inbox and the card say the same wait, counted from the same server time
    assert WAITED_S * 1000 - 1000 <= inbox_waited[1] <= (WAITED_S + read_inbox - sent) * 1000 + 2000, inbox_waited
    assert -2000 <= card_waited[1] - inbox_waited[1] <= (read_card - read_inbox) * 1000 + 2000, (inbox_waited, card_waited)
    assert inbox_waited[0] == waited_label(inbox_waited[1]) and card_waited[0] == waited_label(card_waited[1])
    reviewer.get_by_test_id("decision-approve").click()
    reviewer.get_by_test_id("submit-decisions").click()
    expect(reviewer.get_by_test_id("inbox-count")).to_have_count(0)
    expect(reviewer).not_to_have_title(re.compile(r"^\("))
    close(member, reviewer)


def test_notification_permission_is_asked_only_from_the_button(browser, team_server):
    page = new_page(browser, grant=False)
    sign_in_browser(page, team_server, role="reviewer", name="Ria")
    page.goto(team_server.url + "/reviews")
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    permission = page.evaluate("Notification.permission")
    if permission == "default":
        button = page.get_by_test_id("inbox-notify")
        expect(button).to_be_visible()
        page.wait_for_timeout(500)
        assert page.evaluate("window.__asks") == 0
        button.click()
        page.wait_for_function("window.__asks === 1")
    else:  # this Chromium answers without a prompt: no button to press, and nothing was asked
        expect(page.get_by_test_id("inbox-notify")).to_have_count(0)
        assert page.evaluate("window.__asks") == 0
    close(page)


CENTRE_OFFSET = """el => {
  const column = el.parentElement.getBoundingClientRect(), middle = (column.left + column.right) / 2;
  const lines = [];
  for (const p of el.querySelectorAll('p, span')) {
    for (const node of p.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE || !node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      lines.push(...[...range.getClientRects()].map(r => Math.abs((r.left + r.right) / 2 - middle)));
    }
  }
  return lines.length ? Math.max(...lines) : 999;
}"""
"""How far (px) the empty inbox's lines of text sit from the middle of the page's column, at most
(every wrapped line of each text, measured one by one)."""


@pytest.mark.parametrize("width", [1280, 390])
def test_nothing_waits_is_centred_in_the_page_on_desktop_and_phone(browser, team_server, width):
    page = new_page(browser, grant=False, viewport={"width": width, "height": 844})
    sign_in_browser(page, team_server, role="reviewer", name="Nia")
    page.goto(team_server.url + "/reviews")
    empty = page.get_by_test_id("inbox-empty")
    expect(empty).to_contain_text("Nothing waits for you.")
    expect(page.get_by_test_id("inbox-hint")).to_have_count(0)  # no "Oldest first. Open one..." with nothing to open
    assert empty.evaluate(CENTRE_OFFSET) <= 2, "the empty inbox is off the middle of the page"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    DESK_SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shoot(page, f"inbox-empty-{width}"), DESK_SHOTS / f"inbox-empty-{width}.png")
    close(page)


WAITED_S = 2 * 3600 + 30 * 60


def _backdate_review(server: AppServer, thread_id: str, seconds: int) -> None:
    """Move the thread's "review requested" time ``seconds`` into the past (server data)."""
    db = sqlite3.connect(server.data_dir / "hitl.sqlite", timeout=10)
    with db:
        (raised,) = db.execute("SELECT requested_at FROM review_requests WHERE thread_id = ?", (thread_id,)).fetchone()
        earlier = datetime.fromisoformat(raised) - timedelta(seconds=seconds)
        db.execute("UPDATE review_requests SET requested_at = ? WHERE thread_id = ?", (earlier.isoformat(sep=" "), thread_id))
    db.close()


def waited_label(ms: int) -> str:
    """``assets/waited.js`` ``waitedLabel``: what a wait of ``ms`` reads as on the card."""
    s = max(0, ms // 1000)
    minutes, hours = s // 60, s // 3600
    if s < 60:
        return f"waiting {s} s"
    if minutes < 60:
        return f"waiting {minutes} min"
    return f"waiting {hours} h {minutes % 60} min" if hours < 48 else f"waiting {hours // 24} days"


def _waited(span) -> tuple[str, int]:
    """A live waited figure's text and the milliseconds it stands for, read at one moment, once it
    shows the backdated wait (a page shown again may first paint what it read before the backdate)."""
    expect(span).to_have_text(re.compile(r"^waiting 2 h "))
    text, ms = span.evaluate("el => [el.textContent, Number(el.dataset.waitedMs)]")
    return text, ms


def _shots(browser: Browser, server: AppServer, reviewer: Page) -> None:
    """Desktop and phone screenshots of the reviewer's inbox with the waiting card."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shoot(reviewer, "inbox-desktop"), SHOTS / "inbox-desktop.png")
    phone = new_page(browser, grant=False, viewport={"width": 390, "height": 844})
    phone.context.add_cookies(reviewer.context.cookies())
    phone.goto(server.url + "/reviews")
    expect(phone.get_by_test_id("inbox-item")).to_have_count(1)
    shutil.copy(shoot(phone, "inbox-phone"), SHOTS / "inbox-phone.png")
    phone.get_by_test_id("mobile-menu").click()
    expect(phone.get_by_test_id("inbox-count").last).to_have_text("1")
    phone.wait_for_timeout(600)  # the drawer's opening animation
    shutil.copy(shoot(phone, "inbox-phone-menu"), SHOTS / "inbox-phone-menu.png")
    close(phone)


def test_a_long_inbox_shows_its_count_and_pages_with_load_more(browser, team_server):
    """60 payments waiting (written straight into the app's tables, as the scale bench does): the
    first page shows the oldest 50 and the count of all 60, "Load more" brings the rest."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from bench.scale_inbox import seed
    from hitl_app.store.db import make_engines

    async def write() -> None:
        engines = make_engines(f"sqlite:///{team_server.data_dir / 'hitl.sqlite'}")
        try:
            await seed(engines.async_, 60, 10)
        finally:
            await engines.async_.dispose()
            engines.sync.dispose()

    with ThreadPoolExecutor(1) as pool:  # Playwright holds this thread's event loop
        pool.submit(asyncio.run, write()).result()
    page = new_page(browser, grant=False)
    try:
        sign_in_browser(page, team_server, role="reviewer", name="Paige")
        page.goto(team_server.url + "/reviews")
        expect(page.get_by_test_id("inbox-item")).to_have_count(50)
        expect(page.get_by_test_id("inbox-total")).to_have_text("60 waiting · showing the oldest 50")
        expect(page.get_by_test_id("inbox-hint")).to_have_text("Oldest first. Open one to see the thread and decide its cards.")
        expect(page.get_by_test_id("inbox-count")).to_have_text("60")
        expect(page).to_have_title(re.compile(r"^\(60\) hitl_app"))
        page.get_by_test_id("inbox-more").scroll_into_view_if_needed()
        (SHOTS.parent / "inbox").mkdir(parents=True, exist_ok=True)
        shutil.copy(shoot(page, "inbox-long"), SHOTS.parent / "inbox" / "inbox-long-load-more.png")
        page.get_by_test_id("inbox-more").click()
        expect(page.get_by_test_id("inbox-item")).to_have_count(60)
        expect(page.get_by_test_id("inbox-total")).to_have_text("60 waiting")
        expect(page.get_by_test_id("inbox-more")).to_have_count(0)
        close(page)
    finally:  # the other tests' reviewers start with an empty inbox
        con = sqlite3.connect(team_server.data_dir / "hitl.sqlite", timeout=10)
        with con:
            con.execute("UPDATE threads SET pending_review = 0 WHERE title LIKE 'Thread %' AND owner LIKE '1000%'")
        con.close()
