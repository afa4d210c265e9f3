"""The audit trail in the browser: the reviewer (the signed-in account), the line under each tool call, the audit
page's filters and its CSV/JSON exports (downloaded and parsed), how each decision arrived, and an admin's
signed download that ``python -m hitl_app audit verify --export`` checks."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys

from playwright.sync_api import Page, expect

from tests.e2e.test_chat_flow import open_new_thread, send
from tests.e2e.ui import sign_in_browser
from tests.helpers.app_server import AppServer


def _decide(page: Page, kinds: list[str]) -> None:
    cards = page.get_by_test_id("approval-card")
    expect(cards).to_have_count(len(kinds))
    for i, kind in enumerate(kinds):
        cards.nth(i).get_by_test_id(f"decision-{kind}").click()
    page.get_by_test_id("submit-decisions").click()
    expect(page.locator("[data-testid=message][data-role=tool]")).to_have_count(len(kinds))
    expect(page.get_by_test_id("composer-input")).to_be_enabled()


def _download(page: Page, testid: str) -> str:
    with page.expect_download() as info:
        page.get_by_test_id(testid).click()
    return open(info.value.path(), encoding="utf-8").read()


def test_reviewer_name_audit_line_and_audit_page_filters_and_exports(page: Page, app_server: AppServer):
    sign_in_browser(page, app_server, name="Dana")  # the reviewer named in the audit is the signed-in account
    open_new_thread(page, app_server)
    expect(page.get_by_test_id("user-menu")).to_contain_text("Dana")

    send(page, "email quinn@example.com about audit: one and delete notes/old.txt")
    _decide(page, ["approve", "reject"])
    lines = page.get_by_test_id("audit-line")
    expect(lines).to_have_count(2)
    expect(lines.filter(has_text="approved by Dana")).to_have_count(1)
    expect(lines.filter(has_text="rejected by Dana")).to_have_count(1)
    expect(lines.first).to_contain_text(" UTC, waited ")
    first_thread = page.url.rsplit("/", 1)[1]

    open_new_thread(page, app_server)
    send(page, "email rae@example.com about audit: two")
    _decide(page, ["approve"])

    page.goto(app_server.url + "/audit")
    rows = page.get_by_test_id("audit-row")
    expect(rows).to_have_count(3)
    # newest first
    expect(rows.first).to_have_attribute("data-tool", "send_email")
    expect(rows.first).to_contain_text("rae@example.com")
    expect(rows.first).to_have_attribute("data-reviewer", "Dana")
    expect(rows.first.get_by_test_id("audit-waited")).to_have_text(re.compile(r"^\d+ (s|min)$"))  # not "13.625 s"

    page.get_by_test_id("audit-filter-tool").select_option("send_email")
    expect(rows).to_have_count(2)
    page.get_by_test_id("audit-filter-decision").select_option("approve")
    expect(rows).to_have_count(2)
    # the Thread filter names threads by their title (the id is the value)
    option = page.locator(f"[data-testid=audit-filter-thread] option[value='{first_thread}']")
    expect(option).to_contain_text("email quinn@example.com about audit")
    expect(option).not_to_contain_text(first_thread)
    page.get_by_test_id("audit-filter-thread").select_option(first_thread)
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("quinn@example.com")
    expect(page.get_by_test_id("audit-count")).to_have_text("1 decision")
    # readable: the arguments' JSON gets a real column, the time stays on one line
    proposed = rows.first.get_by_test_id("audit-proposed")
    assert (proposed.bounding_box() or {"width": 0})["width"] >= 200, "the Proposed column is squeezed"
    when = rows.first.get_by_test_id("audit-when").locator("span, p").first
    assert when.evaluate(
        "e => e.getClientRects().length === 1 && e.offsetHeight < 2 * parseFloat(getComputedStyle(e).lineHeight)"
    )

    data = list(csv.DictReader(io.StringIO(_download(page, "audit-export-csv"))))
    assert len(data) == 1
    (row,) = data
    assert (
        row["thread_id"], row["tool_name"], row["decision_type"], row["reviewer"]
    ) == (first_thread, "send_email", "approve", "Dana")
    assert json.loads(row["args_proposed"])["to"] == "quinn@example.com"
    assert row["interrupt_id"] and row["tool_call_id"].startswith("call_") and row["checkpoint_id"]
    assert float(row["waited_seconds"]) >= 0 and row["requested_at"] <= row["decided_at"]

    page.get_by_test_id("audit-filter-tool").select_option("any")
    page.get_by_test_id("audit-filter-decision").select_option("reject")
    expect(rows).to_have_count(1)
    items = json.loads(_download(page, "audit-export-json"))
    assert [(i["tool_name"], i["decision_type"], i["args_proposed"], i["args_executed"]) for i in items] == [
        ("delete_file", "reject", {"path": "notes/old.txt"}, None)
    ]
    page.get_by_test_id("audit-filter-thread").select_option("any")
    page.get_by_test_id("audit-filter-decision").select_option("any")
    expect(rows).to_have_count(3)
    assert len(json.loads(_download(page, "audit-export-json"))) == 3

    # a link to one thread's decisions (the Thread filter lists the threads decided on most recently): that
    # thread, whatever tool or decision was picked before
    page.get_by_test_id("audit-filter-decision").select_option("reject")
    expect(rows).to_have_count(1)
    page.goto(f"{app_server.url}/audit?thread={first_thread}")
    expect(page.get_by_test_id("audit-filter-thread")).to_have_value(first_thread)
    expect(page.get_by_test_id("audit-filter-decision")).to_have_value("any")
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("audit-thread-note")).to_have_count(0)  # both threads are listed
    expect(page.get_by_test_id("audit-link-note")).to_have_count(0)
    # a link to a thread with no decisions of hers (here: none at all) says so and shows every thread
    page.goto(f"{app_server.url}/audit?thread=00000000-0000-4000-8000-000000000000")
    expect(page.get_by_test_id("audit-link-note")).to_contain_text("No decisions you may see on that thread")
    expect(page.get_by_test_id("audit-filter-thread")).to_have_value("any")
    expect(rows).to_have_count(3)
    # a thread's title opens the thread, in the page (no reload)
    page.evaluate("() => { window.__stayed = true; }")
    rows.filter(has_text="rae@example.com").locator("a.audit-title").click()
    expect(page).to_have_url(re.compile(r"/thread/[0-9a-f-]{36}$"))
    expect(page.get_by_test_id("composer-input")).to_be_visible()
    assert page.evaluate("() => window.__stayed === true"), "the thread link reloaded the whole page"


def test_audit_page_shows_only_this_browsers_decisions(page: Page, app_server: AppServer):
    # a fresh browser context has its own browser id: decisions of other tests are not listed
    open_new_thread(page, app_server)
    page.goto(app_server.url + "/audit")
    expect(page.get_by_test_id("audit-count")).to_have_text("0 decisions")
    expect(page.get_by_test_id("audit-row")).to_have_count(0)
    expect(page.get_by_test_id("audit-empty")).to_contain_text("No decisions you may see yet")  # says why it is empty


def test_an_admins_signed_download_verifies_with_the_command_line(page: Page, app_server: AppServer, tmp_path):
    sign_in_browser(page, app_server, role="admin", name="Ada Audit")
    open_new_thread(page, app_server)
    send(page, "email sig@example.com about audit: signed")
    _decide(page, ["approve"])
    page.goto(app_server.url + "/audit")
    row = page.locator("[data-testid=audit-row]", has_text="sig@example.com")
    expect(row.get_by_test_id("audit-via")).to_have_text("page")
    expect(page.get_by_test_id("audit-no-key")).to_have_count(0)
    exported = tmp_path / "chain.json"
    exported.write_text(_download(page, "audit-export-signed"), encoding="utf-8")
    doc = json.loads(exported.read_text(encoding="utf-8"))
    assert doc["format"] == "hitl-audit-export/1" and doc["signature"]["alg"] == "Ed25519"
    assert any('"via":"page"' in link["body"] and "sig@example.com" in link["body"] for link in doc["links"])
    public = app_server.data_dir / "audit.pub"
    checked = subprocess.run([sys.executable, "-m", "hitl_app", "audit", "verify", "--export", str(exported),
                              "--public-key", str(public)], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and "intact" in checked.stdout, checked.stdout + checked.stderr
    exported.write_text(exported.read_text(encoding="utf-8").replace("sig@example.com", "sag@example.com"), encoding="utf-8")
    forged = subprocess.run([sys.executable, "-m", "hitl_app", "audit", "verify", "--export", str(exported),
                             "--public-key", str(public)], capture_output=True, text=True, timeout=120)
    assert forged.returncode == 1 and "NOT intact" in forged.stderr, forged.stdout + forged.stderr


def test_a_member_is_offered_no_signed_download(page: Page, app_server: AppServer):
    sign_in_browser(page, app_server, role="member")
    page.goto(app_server.url + "/audit")
    expect(page.get_by_test_id("audit-count")).to_be_visible()
    expect(page.get_by_test_id("audit-export-signed")).to_have_count(0)
    expect(page.get_by_test_id("audit-no-key")).to_have_count(0)
