"""Accounts in the browser, on a fresh install: the first visit creates the admin account, the
admin invites a reviewer and creates a member with a temporary password, people sign in and out,
a disabled account's open tab lands on sign-in, and single sign-on through a loopback provider.

One app per module (a fresh data folder, so the first visit really is a fresh install), with
single sign-on configured against ``OidcTestProvider``. Screenshots of the pages go to
``test-artifacts/shots/accounts-*.png`` (desktop 1280x800, phone 390x844).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import SHOTS, THREAD_URL, AxeScan, reply_to, shown_secret
from tests.helpers.app_server import AppServer
from tests.helpers.oidc_provider import OidcTestProvider

SIGN_IN_URL = re.compile(r".*/sign-in/?(\?.*)?$")
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
ADMIN = {"name": "Ada <b>Admin</b>", "email": "Ada@Example.com", "password": "first admin pw"}
SSO_USER = {"sub": "sso-7", "email": "sam@example.org", "email_verified": True, "name": "Sam from SSO"}


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcTestProvider]:
    with OidcTestProvider(client_id="hitl", client_secret="s3cret", user=SSO_USER) as p:
        yield p


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory, provider: OidcTestProvider) -> Iterator[AppServer]:
    """A fresh install (no account yet) with single sign-on configured."""
    env = {"HITL_OIDC_ISSUER": provider.issuer, "HITL_OIDC_CLIENT_ID": "hitl", "HITL_OIDC_CLIENT_SECRET": "s3cret"}
    with AppServer(tmp_path_factory.mktemp("accounts"), env=env) as server:
        yield server


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(400)  # let an opening popover finish its animation
    page.screenshot(path=str(SHOTS / f"accounts-{name}.png"))


def fill_and_submit(page: Page, **fields: str) -> None:
    for key, value in fields.items():
        page.get_by_test_id(f"auth-{key}").fill(value)
    page.get_by_test_id("auth-submit").click()


def sign_in(page: Page, server: AppServer, email: str, password: str) -> None:
    page.goto(server.url + "/sign-in")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    fill_and_submit(page, email=email, password=password)


def sign_out(page: Page) -> None:
    page.get_by_test_id("user-menu").click()
    page.get_by_test_id("sign-out").click()
    page.wait_for_url(SIGN_IN_URL)


def expect_menu_name(page: Page, name: str) -> None:
    """The user menu names ``name`` (as plain text)."""
    page.get_by_test_id("user-menu").click()
    expect(page.get_by_test_id("user-menu-name")).to_have_text(name)
    page.keyboard.press("Escape")


def test_first_run_admin_invite_temporary_password_sign_in_out_and_disable(fresh: AppServer, page: Page, other_browser):
    # 1. a fresh install: the first visit offers "Create the admin account", nothing else
    page.set_viewport_size(DESKTOP)
    page.goto(fresh.url + "/")
    page.wait_for_url(SIGN_IN_URL)
    expect(page.get_by_role("heading", name="Create the admin account")).to_be_visible()
    shot(page, "first-run-desktop")
    scan = AxeScan()  # each page only this module reaches, at both widths (tests/e2e/test_axe_pages.py has the rest)
    scan(page, "first-run")
    page.set_viewport_size(PHONE)
    shot(page, "first-run-phone")
    scan(page, "first-run")
    page.set_viewport_size(DESKTOP)
    fill_and_submit(page, name=ADMIN["name"], email=ADMIN["email"], password="short")  # the browser refuses < 8
    expect(page).to_have_url(SIGN_IN_URL)
    fill_and_submit(page, password=ADMIN["password"])
    page.wait_for_url(THREAD_URL)
    # the display name is text, never markup
    expect_menu_name(page, ADMIN["name"])
    assert reply_to(page, "stream 3 words")

    # 2. the admin page: invite a reviewer by link, create a member with a temporary password
    page.get_by_test_id("user-menu").click()
    shot(page, "user-menu-desktop")
    page.get_by_test_id("admin-link").click()
    page.wait_for_url(re.compile(r".*/admin/?$"))
    users = page.get_by_test_id("admin-users")
    expect(users.get_by_test_id("account-row")).to_have_count(1)
    page.get_by_test_id("invite-email").fill("rita@example.com")
    page.get_by_test_id("invite-role").select_option("reviewer")
    page.get_by_test_id("invite-submit").click()
    expect(page.get_by_test_id("admin-secret")).to_contain_text("/invite/")
    invite_link = shown_secret(page)
    page.get_by_test_id("temp-email").fill("mo@example.com")
    page.get_by_test_id("temp-name").fill("Mo")
    page.get_by_test_id("temp-submit").click()
    expect(page.get_by_test_id("admin-message")).to_contain_text("temporary password")
    temporary = shown_secret(page, before=invite_link)
    expect(users.get_by_test_id("account-row")).to_have_count(2)
    shot(page, "admin-desktop")
    page.set_viewport_size(PHONE)
    shot(page, "admin-phone")
    page.set_viewport_size(DESKTOP)

    # 3. the reviewer accepts the invite in another browser and is signed in as a reviewer
    rita = other_browser(DESKTOP)
    rita.goto(invite_link)
    expect(rita.get_by_role("heading", name="Join hitl_app")).to_be_visible()
    fill_and_submit(rita, name="Rita", password="rita's password")
    rita.wait_for_url(THREAD_URL)
    expect_menu_name(rita, "Rita")
    rita.get_by_test_id("user-menu").click()
    expect(rita.get_by_test_id("user-menu-role")).to_have_text("reviewer")
    expect(rita.get_by_test_id("admin-link")).to_have_count(0)
    rita.keyboard.press("Escape")
    rita.goto(invite_link)  # used up: said up front, no form to fill in first
    expect(rita.get_by_test_id("invite-refused")).to_contain_text("used already")
    expect(rita.get_by_test_id("auth-submit")).to_have_count(0)
    scan(rita, "invite-used")
    rita.set_viewport_size(PHONE)
    scan(rita, "invite-used")
    rita.set_viewport_size(DESKTOP)
    rita.goto(fresh.url + "/admin")  # not an admin: back to the chat
    rita.wait_for_url(THREAD_URL)

    # 4. sign out and in again; a wrong password says so plainly
    sign_out(rita)
    rita.goto(fresh.url + "/")
    rita.wait_for_url(SIGN_IN_URL)
    fill_and_submit(rita, email="RITA@example.com", password="wrong password")
    expect(rita.get_by_test_id("auth-error")).to_have_text("Wrong email or password")
    fill_and_submit(rita, email="RITA@example.com", password="rita's password")  # emails ignore case
    rita.wait_for_url(THREAD_URL)

    # 5. the temporary password must be changed before anything else
    mo = other_browser(PHONE)
    sign_in(mo, fresh, "mo@example.com", temporary)
    expect(mo.get_by_role("heading", name="Choose your password")).to_be_visible()
    shot(mo, "change-password-phone")
    scan(mo, "change-password")
    mo.set_viewport_size(DESKTOP)
    scan(mo, "change-password")
    mo.set_viewport_size(PHONE)
    mo.goto(fresh.url + "/")  # nothing else opens until it is changed
    mo.wait_for_url(SIGN_IN_URL)
    mo.get_by_test_id("auth-current-password").fill(temporary)
    fill_and_submit(mo, password="mo's own password")
    mo.wait_for_url(THREAD_URL)
    mo.get_by_test_id("user-menu").click()
    shot(mo, "user-menu-phone")
    mo.keyboard.press("Escape")

    # 6. the admin disables Rita: her open tab is emptied and lands on sign-in without her doing
    # anything (every open tab's watcher re-reads its session when an admin disables an account)
    page.reload()
    row = users.locator("[data-testid=account-row][data-email='rita@example.com']")
    row.get_by_test_id("disable-account").click()  # asks first: it signs her out everywhere
    expect(page.get_by_role("alertdialog")).to_contain_text("signed out everywhere")
    page.get_by_test_id("disable-cancel").click()
    expect(row).to_contain_text("active")
    row.get_by_test_id("disable-account").click()
    page.get_by_test_id("disable-confirm").click()
    expect(row).to_contain_text("disabled")
    expect(page.get_by_text("Account disabled: its open tabs are signed out now.")).to_be_visible()
    rita.wait_for_url(SIGN_IN_URL)
    # the sign-in page says why she is there once it has loaded; she signs in after reading it (filling the
    # form before the page's load event finished lost the attempt in a loaded CI run)
    expect(rita.get_by_test_id("auth-error")).to_have_text(
        "Your account was disabled, so you were signed out. Ask an admin to enable it again.")
    fill_and_submit(rita, email="rita@example.com", password="rita's password")
    expect(rita.get_by_test_id("auth-error")).to_have_text("This account is disabled")
    scan.assert_clean()


def test_sign_in_through_single_sign_on_and_the_sign_in_page_on_a_phone(fresh: AppServer, other_browser):
    fresh.sign_in("someone")  # (past the first run, also when this test runs alone)
    phone = other_browser(PHONE)
    phone.goto(fresh.url + "/sign-in")
    expect(phone.get_by_role("heading", name="Sign in")).to_be_visible()
    shot(phone, "sign-in-phone")
    scan = AxeScan()
    scan(phone, "sign-in-sso")
    desktop = other_browser(DESKTOP)
    desktop.goto(fresh.url + "/sign-in")
    expect(desktop.get_by_test_id("sso-link")).to_be_visible()
    shot(desktop, "sign-in-desktop")
    scan(desktop, "sign-in-sso")
    # the "Signed in. Continue" page refreshes to / at once: here that refresh is answered 204 No Content (the
    # browser stays on the page) while the page is scanned; then its own Continue link goes on
    desktop.route(fresh.url + "/", lambda route: route.fulfill(status=204))
    with desktop.expect_request(fresh.url + "/"):
        desktop.get_by_test_id("sso-link").click()
    expect(desktop.get_by_role("link", name="Continue")).to_be_visible()
    scan(desktop, "sso-continue")
    desktop.set_viewport_size(PHONE)
    scan(desktop, "sso-continue")
    desktop.set_viewport_size(DESKTOP)
    desktop.unroute(fresh.url + "/")
    scan.assert_clean()
    desktop.get_by_role("link", name="Continue").click()
    desktop.wait_for_url(THREAD_URL)
    expect_menu_name(desktop, "Sam from SSO")
    assert reply_to(desktop, "stream 2 words")
    sign_out(desktop)
    desktop.goto(fresh.url + "/")
    desktop.wait_for_url(SIGN_IN_URL)
