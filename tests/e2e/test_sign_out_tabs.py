"""Signing out is everywhere at once (issue 19; QA M8, M9).

A person with a chat tab and the review inbox open signs out in the chat tab: the inbox tab goes to
the sign-in page by itself, without a click (before, it kept showing the inbox until clicked). A
person whose account an admin disables is told why on the sign-in page in every open tab. The
tests wait for the pages to move (a generous ceiling), they do not time them.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.ui import open_new_thread, sign_in_browser
from tests.helpers.app_server import AppServer

SIGN_IN_URL = re.compile(r".*/sign-in/?(\?.*)?$")
MOVED_S = 15_000
"""Ceiling (ms) for a tab to reach the sign-in page by itself."""


def two_tabs(page: Page, server: AppServer) -> Page:
    """``page`` on a new thread and a second tab of the same browser on the review inbox."""
    open_new_thread(page, server)
    inbox = page.context.new_page()
    inbox.goto(server.url + "/reviews")
    expect(inbox.get_by_test_id("inbox-empty").or_(inbox.get_by_test_id("inbox-list")).first).to_be_visible()
    expect(page.get_by_test_id("composer-input")).to_be_visible()
    return inbox


def test_sign_out_in_one_tab_signs_out_the_others(page: Page, app_server: AppServer):
    sign_in_browser(page, app_server)
    inbox = two_tabs(page, app_server)
    page.get_by_test_id("user-menu").click()
    page.get_by_test_id("sign-out").click()
    page.wait_for_url(SIGN_IN_URL)
    inbox.wait_for_url(SIGN_IN_URL, timeout=MOVED_S)  # nobody touched this tab
    expect(inbox.get_by_test_id("inbox-empty")).to_have_count(0)
    expect(inbox.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(inbox.get_by_test_id("auth-error")).to_have_count(0)  # a plain sign-out needs no reason


def test_a_disabled_persons_tabs_say_why(page: Page, app_server: AppServer, other_browser):
    mia = sign_in_browser(page, app_server)
    inbox = two_tabs(page, app_server)
    admin = other_browser()
    sign_in_browser(admin, app_server, role="admin")
    admin.goto(app_server.url + "/admin")
    row = admin.locator(f"[data-testid=account-row][data-email='{mia.email}']")
    row.get_by_test_id("disable-account").click()
    admin.get_by_test_id("disable-confirm").click()
    expect(row).to_contain_text("disabled")
    for tab in (page, inbox):
        tab.wait_for_url(SIGN_IN_URL, timeout=MOVED_S)
        expect(tab.get_by_test_id("auth-error")).to_have_text(re.compile("Your account was disabled"))
