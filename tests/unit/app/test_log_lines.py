"""Every server log record is one line: text from clients or providers cannot forge log lines."""

from __future__ import annotations

import logging

import httpx
import pytest

from hitl_app.auth.http import auth_app
from hitl_app.auth.oidc import OidcClient, OidcSettings
from hitl_app.logsafe import configure_logging

FORGED = "x\n2026-12-05 00:00:00,000 INFO hitl_app: admin@example.com signed in as admin"


@pytest.fixture
def server_logging():
    """The server's logging set up on the root logger (pytest's capture handler included)."""
    root = logging.getLogger()
    before = {h: list(h.filters) for h in root.handlers}
    configure_logging()
    yield
    for handler in root.handlers:
        handler.filters[:] = before.get(handler, [])


async def test_a_provider_error_in_the_callback_logs_one_line(server_logging, caplog):
    oidc = OidcClient(OidcSettings("http://127.0.0.1:9", "hitl", "s3cret"))
    app = auth_app(get_engine=lambda: None, oidc=oidc, allowed_origins=[])  # the error path needs no database
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as c:
        r = await c.get("/auth/oidc/callback", params={"error": FORGED})
    assert r.headers["location"] == "/sign-in?error=sso"
    lines = [line for line in caplog.text.splitlines() if "provider answered" in line or "signed in as admin" in line]
    assert len(lines) == 1 and "\\n2026-12-05" in lines[0], caplog.text


def test_any_record_with_a_newline_in_its_arguments_stays_one_line(server_logging, caplog):
    logging.getLogger("hitl_app.somewhere").warning("user said %s", "hello\r\nINFO forged\x1b[2J")
    [record] = [r for r in caplog.records if r.name == "hitl_app.somewhere"]
    assert "\n" not in caplog.text.rstrip("\n") and "\\r\\nINFO forged\\x1b[2J" in caplog.text
    assert record.getMessage() == "user said hello\\r\\nINFO forged\\x1b[2J"
