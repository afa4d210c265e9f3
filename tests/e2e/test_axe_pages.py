"""Every page and every dialog, at desktop (1280 px) and phone (390 px) width, scanned by axe-core
(WCAG 2.1 A/AA, ``tests.e2e.ui.axe_problems``) with a pending review and a pending payment: zero
serious or critical problems (issue 23, "Every page for everyone").

Under ``examples/policies/team.toml``: Mia (member) asks for a mail and a payment (the payment waits
for a reviewer); Ada (admin) has a decided review with a grant (audit, metrics and grants have rows)
and a pending invite. Pages: the thread (Mia's own and, for Ada, someone else's), /reviews, /audit,
/grants, /metrics, /admin, /admin/webhooks, /account, /sign-in (with its error), the invite page.
Dialogs and overlays: the keys list, the user menu, Disable's confirmation, the phone's menu drawer
and workspace; Mia's mail card with its edit form, its reject reason and its grant select. Each scan's
screenshot goes to ``test-artifacts/shots/axe-<name>-<width>.png`` (``tests.e2e.ui.AxeScan``).

What needs another server or a flow of its own is scanned, at both widths, where that flow already
runs: the first-run form, the change-password form, a used invite link, the sign-in page with single
sign-on and its "Continue" page (tests/e2e/test_accounts.py); the revoke-token dialog and the mail
link's decided and used pages (tests/e2e/test_api_tokens.py); /admin/webhooks with a new endpoint's
secret shown, and its rotate and delete dialogs (tests/e2e/test_webhooks_page.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.ui import AxeScan, card, cards, open_new_thread, send, shown_secret, sign_in_browser, wait_idle
from tests.helpers.app_server import AppServer

TEAM = Path(__file__).resolve().parents[2] / "examples" / "policies" / "team.toml"
WIDTHS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("e2e-axe"), env={"HITL_POLICY": str(TEAM)})
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def scene(browser: Browser, team_server: AppServer) -> Iterator[dict[str, object]]:
    """Mia's thread with a pending mail and payment; Ada's decided review with a grant; an invite link."""
    mia = watched_page(browser.new_context(viewport=WIDTHS["desktop"]))
    sign_in_browser(mia, team_server, role="member", name="Mia Member")
    thread = open_new_thread(mia, team_server)
    send(mia, "email alice@example.com about plans: soon and pay 50 to Bob")
    expect(cards(mia)).to_have_count(2)

    ada = watched_page(browser.new_context(viewport=WIDTHS["desktop"]))
    sign_in_browser(ada, team_server, role="admin", name="Ada Admin")
    open_new_thread(ada, team_server)
    send(ada, "write notes/plan.md: hello and email bob@example.com about lunch: noon")
    expect(cards(ada)).to_have_count(2)
    card(ada, 0).get_by_test_id("decision-approve").click()
    card(ada, 0).get_by_test_id("grant-scope").select_option(index=1)
    card(ada, 1).get_by_test_id("decision-reject").click()
    card(ada, 1).get_by_test_id("reject-message").fill("not today")
    ada.get_by_test_id("submit-decisions").click()
    wait_idle(ada)
    ada.goto(team_server.url + "/admin")
    ada.get_by_test_id("invite-email").fill("new.person@example.com")
    ada.get_by_test_id("invite-submit").click()
    expect(ada.get_by_test_id("admin-secret")).to_contain_text("/invite/")
    invite = shown_secret(ada)
    yield {"mia": mia, "ada": ada, "thread": thread, "invite": invite}
    problems = [p for page in (mia, ada) for p in getattr(page, "problems", [])]
    for page in (mia, ada):
        page.context.close()
    assert not problems, f"browser problems: {problems}"


def _every_cell_reachable(page: Page, table: str) -> None:
    """The page never scrolls sideways, and each cell of ``table`` is inside its box or the box
    scrolls sideways to it (a cell cut at the right edge with no way to it is what QA saw)."""
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    cut = page.get_by_test_id(table).evaluate("""box => {
        const edge = box.getBoundingClientRect().right, scrolls = box.scrollWidth > box.clientWidth
            && getComputedStyle(box).overflowX !== 'hidden';
        const cut = Array.from(box.querySelectorAll('td')).filter(td => td.getBoundingClientRect().right > edge + 1 && !scrolls);
        const chain = [];
        for (let el = cut.length ? cut[0] : null; el && el !== box.parentElement; el = el.parentElement) {
            const cs = getComputedStyle(el);
            const name = `${el.tagName}.${(el.className || '').toString().slice(0, 40)}`;
            chain.push(`${name} ox=${cs.overflowX} sw=${el.scrollWidth} cw=${el.clientWidth}`);
        }
        return cut.map(td => td.innerText.slice(0, 40)).concat(cut.length ? chain : []);
    }""")
    assert cut == [], f"{table}: cells cut off at the right edge: {cut}"


def _shown(element: Locator) -> None:
    """Wait for ``element`` to show and scroll it into view (the scan's screenshot shows it)."""
    expect(element).to_be_visible()
    element.scroll_into_view_if_needed()


def _open(page: Page, url: str, ready: str) -> None:
    page.goto(url)
    expect(page.get_by_test_id(ready).first).to_be_visible()


@pytest.mark.parametrize("width", list(WIDTHS))
def test_every_page_and_dialog_has_no_serious_axe_problem(browser: Browser, team_server: AppServer, scene, width: str):
    mia, ada = scene["mia"], scene["ada"]
    base, scan = team_server.url, AxeScan()
    for page in (mia, ada):
        page.set_viewport_size(WIDTHS[width])
    phone = width == "phone"

    _open(mia, scene["thread"], "approval-card")
    scan(mia, "thread-own-review")
    mail = card(mia, 0)  # her own mail's card, in each state that shows more of it (a pick is kept: any order works)
    mail.get_by_test_id("decision-edit").click()
    scan(mia, "card-edit-form", lambda: _shown(mail.get_by_test_id("edit-form")))
    mail.get_by_test_id("decision-reject").click()
    scan(mia, "card-reject-reason", lambda: _shown(mail.get_by_test_id("reject-message")))
    mail.get_by_test_id("decision-approve").click()
    scan(mia, "card-grant", lambda: _shown(mail.get_by_test_id("grant-scope")))
    mia.get_by_test_id("shortcuts-button").click()
    scan(mia, "keys-dialog", lambda: expect(mia.get_by_test_id("shortcuts-help")).to_be_visible())
    mia.keyboard.press("Escape")
    expect(mia.get_by_test_id("shortcuts-help")).to_have_count(0)
    mia.get_by_test_id("user-menu").first.click()
    scan(mia, "user-menu", lambda: expect(mia.get_by_test_id("user-menu-name")).to_be_visible())
    mia.keyboard.press("Escape")
    if phone:
        mia.get_by_test_id("mobile-menu").click()
        scan(mia, "phone-menu", lambda: expect(mia.get_by_test_id("mobile-drawer")).to_be_visible())
        mia.keyboard.press("Escape")
        expect(mia.get_by_test_id("mobile-drawer")).to_have_count(0)
    mia.locator("[data-testid^=workspace-toggle]:visible").first.click()
    scan(mia, "workspace", lambda: expect(mia.get_by_test_id("workspace-panel")).to_be_visible())
    mia.get_by_test_id("workspace-close").click()
    expect(mia.get_by_test_id("workspace-panel")).to_have_count(0)

    _open(ada, scene["thread"], "approval-card")  # someone else's thread, the payment hers to decide
    expect(ada.get_by_test_id("thread-heading")).to_have_text("Mia Member's thread")  # QA C1: not "Chat"
    scan(ada, "thread-other-review")
    for path, ready, name in (
        ("/reviews", "inbox-item", "reviews"),
        ("/audit", "audit-row", "audit"),
        ("/grants", "grant-row", "grants"),
        ("/metrics", "metrics-reviews", "metrics"),
        ("/admin/webhooks", "user-menu", "webhooks"),
        ("/account", "user-menu", "account"),
        ("/admin", "account-row", "accounts"),
    ):
        _open(ada, base + path, ready)
        scan(ada, name)
        if name == "reviews":  # QA C6: live, in the card's words ("waiting 53 s"), not "waiting just now"
            expect(ada.get_by_test_id("inbox-waited").first).to_have_text(re.compile(r"^waiting \d+ (s|min)$"))
        if name == "metrics":  # QA C7: the tile's reviews and the audit's decisions reconciled in words
            expect(ada.get_by_test_id("metrics-reconcile")).to_have_text(
                "1 review with 2 decisions on its cards, plus 0 made by a grant without a card: "
                "the Audit page and the chart below count all 2 decisions."
            )
        if name in ("grants", "metrics"):  # QA C2: the user menu, as on the thread page
            ada.get_by_test_id("user-menu").click()
            expect(ada.get_by_test_id("user-menu-name")).to_have_text("Ada Admin")
            ada.keyboard.press("Escape")
            expect(ada.get_by_test_id("user-menu-name")).to_have_count(0)
        if name in ("audit", "accounts"):  # QA M4 and the accounts table at 390 px: nothing cut off
            _every_cell_reachable(ada, "audit-table" if name == "audit" else "admin-users")
    ada.locator("[data-testid=account-row]").filter(has_text="Mia Member").get_by_test_id("disable-account").click()
    scan(ada, "disable-dialog", lambda: expect(ada.get_by_test_id("disable-cancel")).to_be_visible())
    ada.get_by_test_id("disable-cancel").click()

    guest = watched_page(browser.new_context(viewport=WIDTHS[width]))
    try:
        _open(guest, scene["invite"], "invite-email")
        scan(guest, "invite")
        _open(guest, base + "/sign-in", "auth-submit")
        scan(guest, "sign-in")
        guest.get_by_test_id("auth-email").fill("mia@example.com")
        guest.get_by_test_id("auth-password").fill("not her password")
        guest.get_by_test_id("auth-submit").click()
        expect(guest.get_by_test_id("auth-error")).to_have_text("Wrong email or password")
        expect(guest.get_by_test_id("auth-email")).to_have_value("mia@example.com")  # QA M7: kept, not emptied
        expect(guest.get_by_test_id("auth-password")).to_have_value("")
        scan(guest, "sign-in-error")
    finally:
        problems = list(getattr(guest, "problems", []))
        guest.context.close()
    scan.assert_clean()
    assert not problems, f"browser problems: {problems}"


def test_a_pending_invite_gets_a_new_link_and_the_old_one_stops(browser: Browser, team_server: AppServer, scene):
    """QA M6: the link is shown once (only its hash is kept); "New link" on its pending row shows a new
    one for the same email and role, and the earlier link is refused."""
    ada, old = scene["ada"], scene["invite"]
    ada.set_viewport_size(WIDTHS["desktop"])
    _open(ada, team_server.url + "/admin", "invite-row")
    row = ada.locator("[data-testid=invite-row][data-email='new.person@example.com']")
    row.get_by_test_id("invite-renew").click()
    secret = ada.get_by_test_id("admin-secret")
    expect(secret).to_contain_text("/invite/")
    expect(secret).not_to_have_text(old)
    expect(ada.get_by_test_id("admin-message")).to_contain_text("New invite link for new.person@example.com (member)")
    expect(row).to_have_count(1)  # still one pending invite for that email
    new = secret.inner_text()
    guest = watched_page(browser.new_context(viewport=WIDTHS["desktop"]))
    try:
        guest.goto(old)
        expect(guest.get_by_test_id("invite-refused")).to_be_visible()
        _open(guest, new, "invite-email")
        expect(guest.get_by_test_id("invite-email")).to_have_text("new.person@example.com")
    finally:
        problems = list(getattr(guest, "problems", []))
        guest.context.close()
    assert not problems, f"browser problems: {problems}"
