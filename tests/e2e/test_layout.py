"""Layout a person notices: the sidebar's rows stay inside it (titles cut with an ellipsis, the
"review" badge always shown, no sideways scrolling), the phone menu gives the thread list and the
Audit link, the review's Submit button can be reached on a phone, and the favicon is served.

Screenshots for people to look at go to test-artifacts/shots/ (layout-*)."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.e2e.ui import THREAD_URL, cards, messages, open_new_thread, reply_to, send, shoot, wait_idle
from tests.helpers.app_server import AppServer

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
LONG_PATH = "notes/" + "a" * 300 + ".md"


def _inside(inner: Locator, outer: Locator) -> bool:
    """True when ``inner``'s box lies within ``outer``'s box horizontally (1 px tolerance)."""
    i, o = inner.bounding_box(), outer.bounding_box()
    assert i and o, "element not rendered"
    return i["x"] >= o["x"] - 1 and i["x"] + i["width"] <= o["x"] + o["width"] + 1


def _no_sideways_scroll(box: Locator) -> bool:
    return box.evaluate("e => e.scrollWidth <= e.clientWidth && e.scrollLeft === 0")


def test_sidebar_rows_stay_inside_with_a_long_title_and_the_review_badge_shows(page: Page, app_server: AppServer):
    page.set_viewport_size(DESKTOP)
    open_new_thread(page, app_server)
    reply_to(page, "hello there")
    short_thread = page.url
    open_new_thread(page, app_server)
    # the title is the first message: one unbroken word far wider than the sidebar
    send(page, f"write {LONG_PATH}: hi")
    expect(cards(page)).to_have_count(1)
    # the card's description wraps the long path instead of running out of the card
    description = cards(page).first.get_by_test_id("card-description")
    assert description.evaluate("e => e.scrollWidth <= e.clientWidth"), "the card's description runs out of the card"

    sidebar = page.get_by_test_id("sidebar")
    rows = sidebar.get_by_test_id("thread-link")
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("mobile-menu")).to_be_hidden()
    long_row = rows.filter(has_text="write notes/aaa")
    badge = long_row.get_by_test_id("pending-badge")
    expect(badge).to_be_visible()
    assert _inside(badge, sidebar), "the review badge is pushed out of the sidebar"
    title = long_row.get_by_test_id("thread-title")
    # cut with an ellipsis, on one line, letters not clipped at the bottom
    assert title.evaluate("e => getComputedStyle(e).textOverflow") == "ellipsis"
    assert title.evaluate("e => e.scrollWidth > e.clientWidth"), "the long title is not cut"
    assert title.evaluate("e => e.scrollHeight <= e.clientHeight + 1"), "the title's letters are clipped"
    # the other row's title is still shown inside the sidebar
    other = rows.filter(has_text="hello there").get_by_test_id("thread-title")
    expect(other).to_be_visible()
    assert _inside(other, sidebar)
    thread_list = page.get_by_test_id("thread-list")
    assert _no_sideways_scroll(thread_list), "the thread list scrolls sideways"
    shoot(page, "layout-sidebar-desktop")

    # after clicking a row the list still does not scroll sideways and the badge stays in view
    rows.filter(has_text="hello there").click()
    page.wait_for_url(short_thread)
    expect(messages(page, "assistant")).to_have_count(1)
    expect(badge).to_be_visible()
    assert _inside(badge, sidebar)
    assert _no_sideways_scroll(thread_list)


def test_phone_menu_lists_threads_and_the_audit_link(other_browser, app_server: AppServer):
    phone = other_browser(PHONE)
    open_new_thread(phone, app_server)
    reply_to(phone, "stream 5 words")
    first = phone.url
    phone.get_by_test_id("new-thread-header").click()
    phone.wait_for_url(lambda u: u != first and THREAD_URL.match(u) is not None)
    expect(phone.get_by_test_id("empty-thread")).to_be_visible()

    menu = phone.get_by_test_id("mobile-menu")
    expect(menu).to_be_visible()
    menu.click()
    drawer = phone.get_by_test_id("mobile-drawer")
    expect(drawer).to_be_visible()
    expect(drawer.get_by_test_id("thread-link")).to_have_count(1)
    expect(drawer.get_by_test_id("audit-link")).to_be_visible()
    expect(drawer.get_by_test_id("new-thread")).to_be_visible()
    assert _inside(drawer.get_by_test_id("thread-link"), drawer)
    shoot(phone, "layout-menu-phone")

    # a thread link opens the thread and closes the menu
    drawer.get_by_test_id("thread-link").click()
    phone.wait_for_url(first)
    expect(drawer).to_have_count(0)
    expect(messages(phone, "assistant")).to_have_count(1)
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]

    # and the audit trail is one more tap away
    menu.click()
    drawer.get_by_test_id("audit-link").click()
    phone.wait_for_url("**/audit")
    expect(phone.get_by_test_id("audit-count")).to_have_text("0 decisions")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]


def test_phone_review_submit_is_reachable_with_a_reject_reason_open(other_browser, app_server: AppServer):
    phone = other_browser(PHONE)
    open_new_thread(phone, app_server)
    send(phone, "email bo@example.com about the plan: it is ready and delete notes/old.txt")
    expect(cards(phone)).to_have_count(2)
    # the new review is revealed whole when it fits: Submit not cut by the thread's edge (QA of issue 21:
    # half of it showed, as the card grew after the first reveal)
    expect(phone.get_by_test_id("submit-decisions")).to_be_in_viewport(ratio=1)
    cards(phone).nth(0).get_by_test_id("decision-approve").click()
    last = cards(phone).nth(1)
    last.get_by_test_id("decision-reject").click()
    reason = last.get_by_test_id("reject-message")
    expect(reason).to_be_visible()
    reason.fill("still needed")
    submit = phone.get_by_test_id("submit-decisions")
    submit.scroll_into_view_if_needed()
    expect(submit).to_be_in_viewport()
    # not hidden under the composer: it lies inside the scrolling thread area
    s, area = submit.bounding_box(), phone.locator("#thread-scroll").bounding_box()
    assert s and area and s["y"] + s["height"] <= area["y"] + area["height"] + 1, "Submit is under the composer"
    shoot(phone, "layout-review-submit-phone")
    submit.click()
    expect(messages(phone, "tool")).to_have_count(2)
    expect(messages(phone, "tool").last).to_have_attribute("data-outcome", "rejected")


def test_favicon_is_served(page: Page, app_server: AppServer):
    # the page fixture fails on any console error, so a missing icon (404) would fail every test
    response = page.request.get(app_server.url + "/favicon.ico")
    assert response.status == 200
    body = response.body()
    assert body[:4] == b"\x00\x00\x01\x00", "not an ICO file"


def test_the_composer_shrinks_back_to_one_line_after_a_long_message_is_sent(page: Page, app_server: AppServer):
    """QA shots 62, 65: after a long message the empty composer stayed four lines tall."""
    page.set_viewport_size(DESKTOP)
    open_new_thread(page, app_server)
    composer = page.get_by_test_id("composer-input")
    one_line = composer.evaluate("e => e.offsetHeight")
    composer.fill("stream 3 words " + "padding words here " * 20)
    composer.press("End")
    composer.press_sequentially(" x")  # typing grows it (auto height follows input events)
    grown = composer.evaluate("e => e.offsetHeight")
    assert grown > one_line * 1.5, (one_line, grown)
    page.get_by_test_id("send-button").click()
    expect(messages(page, "user")).to_have_count(1)
    expect(composer).to_have_value("")
    page.wait_for_function("h => document.getElementById('composer-text').offsetHeight <= h", arg=one_line)
    shoot(page, "layout-composer-after-send")


def test_a_long_user_message_is_folded_and_opens_whole(page: Page, app_server: AppServer):
    """QA C9: a 5,000-character message filled the screen; now its first lines and a "Show the whole
    message" that opens it (and "Show less" folds it again). Short messages are not folded."""
    page.set_viewport_size(DESKTOP)
    open_new_thread(page, app_server)
    long_text = "stream 3 words " + " ".join(f"line{i:04d}" for i in range(560))  # ~5,000 characters
    page.get_by_test_id("composer-input").fill(long_text)
    page.get_by_test_id("send-button").click()
    user = messages(page, "user").first
    fold = user.get_by_test_id("message-fold")
    expect(fold).to_be_visible()
    more = fold.get_by_text("Show the whole message")
    expect(more).to_have_text(f"Show the whole message ({len(long_text):,} characters)".replace(",", ""))
    assert user.evaluate("e => e.offsetHeight") < 320, "folded: a few lines, not the whole screen"
    shoot(page, "layout-long-message-folded")
    more.click()
    expect(fold).to_have_attribute("open", "")
    expect(fold.get_by_text("Show less")).to_be_visible()
    assert user.evaluate("e => e.offsetHeight") > 320
    wait_idle(page)
    assert reply_to(page, "stream 3 words")  # a short message stays as it is
    expect(messages(page, "user").nth(1).get_by_test_id("message-fold")).to_have_count(0)


HEADER_GAP = """t => {
    const [a, b] = [...t.querySelectorAll('th')].map(th => {
        const r = document.createRange(); r.selectNodeContents(th); return r.getBoundingClientRect();
    });
    return b.left - a.right;
}"""
"""How far apart (px) the texts of a table's first two header cells are."""
FENCED = "def f(x):\n    return x * 2  # **not bold**"
NOTE = "ripe in a week or two, keep them somewhere cool and dark until then"
ONE_LINE_CELLS = """t => Array.from(t.querySelectorAll('th, td')).filter((c) => c.textContent.trim().split(' ').length === 1)
  .filter((c) => { const r = document.createRange(); r.selectNodeContents(c);
                   return new Set(Array.from(r.getClientRects()).map((x) => Math.round(x.top))).size > 1; })
  .map((c) => c.textContent)"""
"""The texts of a table's one-word cells that wrap onto more than one line (a word or number broken)."""


def test_a_user_message_renders_markdown_safely_and_its_fold_opens_by_keyboard(page: Page, app_server: AppServer):
    """QA: a user's message showed raw markdown. Now it renders like the agent's (bold, lists, code,
    a fenced block as monospace code, a pipe table as a table with room between its cells), raw HTML
    stays text (never an element), and a long one's fold opens and closes with the keyboard."""
    page.set_viewport_size(DESKTOP)
    open_new_thread(page, app_server)
    text = (
        "stream 3 words **bold words** and `code` <img src=x onerror=alert(1)>\n\n- one\n- two\n\n"
        f"```\n{FENCED}\n```\n\n| fruit | count | note |\n| --- | ---: | --- |\n| pear | 3 | {NOTE} |\n| plum | 12 | fine |\n\n"
        + " ".join(f"word{i:04d}" for i in range(300))
    )
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("send-button").click()
    user = messages(page, "user").first
    fold = user.get_by_test_id("message-fold")
    expect(fold).to_be_visible()
    expect(user.locator("strong").first).to_have_text("bold words")
    expect(user.locator("li").first).to_have_text("one")
    expect(user.locator("img")).to_have_count(0)  # the HTML is not an element
    # once the run has ended: under load the Enter below, pressed while the run's deltas still re-drew
    # the thread, once left the fold closed (a helper's run; the cause not pinned down)
    wait_idle(page)
    summary = fold.locator("summary")
    summary.focus()
    page.keyboard.press("Enter")
    expect(fold).to_have_attribute("open", "")
    expect(fold.get_by_text("word0299")).to_be_visible()
    # QA C9: a fenced block is code (monospace, its lines and indent kept), a pipe table is a table
    code = fold.locator("pre code")
    expect(code).to_be_visible()
    expect(code).to_have_text(FENCED)
    family = code.evaluate("e => getComputedStyle(e).fontFamily")
    assert "mono" in family.lower(), family
    assert code.evaluate("e => e.innerText").splitlines()[:2] == FENCED.splitlines(), "the block's lines as typed"
    table = fold.locator("table")
    expect(table).to_be_visible()
    expect(table.locator("th")).to_have_text(["fruit", "count", "note"])
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table.locator("tbody td")).to_have_text(["pear", "3", NOTE, "plum", "12", "fine"])
    gap = table.evaluate(HEADER_GAP)
    assert gap >= 8, f"the header cells touch ({gap:.1f} px apart): it reads 'fruitcount'"
    expect(fold).not_to_contain_text("| ---")  # no raw markdown left
    shoot(page, "layout-user-markdown-open")
    # at phone width a cell's word or number is never broken (a new user's pass saw "cou/nt" and "1" over "2"):
    # the long note wraps at its spaces, and a table wider than the bubble scrolls inside it
    page.set_viewport_size({"width": 390, "height": 844})
    broken = table.evaluate(ONE_LINE_CELLS)
    assert broken == [], f"cells broken across lines at 390 px: {broken}"
    shoot(page, "layout-user-markdown-phone")
    page.set_viewport_size(DESKTOP)
    page.keyboard.press("Enter")
    expect(fold).not_to_have_attribute("open", "")
