"""The Reflex app: pages and the lifespan that opens the database, checkpointer and agent once."""

# Tested by: tests/e2e/test_chat_flow.py - every browser test serves this app

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

import reflex as rx
from reflex import constants
from reflex.utils import prerequisites

from hitl_app.auth.http import auth_app
from hitl_app.errors import StartupError
from hitl_app.http_headers import SecurityHeaders
from hitl_app.logsafe import log_frontend_report, quiet_noisy_loggers
from hitl_app.runtime import get_runtime, open_runtime
from hitl_app.ui.admin_state import AdminState
from hitl_app.ui.audit_state import AuditState
from hitl_app.ui.auth_pages import invite_page, sign_in_page
from hitl_app.ui.auth_state import AuthState
from hitl_app.ui.components.admin import admin_page
from hitl_app.ui.components.audit import audit_page
from hitl_app.ui.components.desk_pages import grants_page, metrics_page
from hitl_app.ui.components.inbox import inbox_page
from hitl_app.ui.components.shortcuts import REVIEW_KEYS_JS_SRC
from hitl_app.ui.debug_hooks import probe_routes
from hitl_app.ui.desk_pages_state import GrantsState, MetricsState
from hitl_app.ui.desk_state import COUNTDOWN_JS_SRC
from hitl_app.ui.disk_state import pace_disk_purge
from hitl_app.ui.editor_test_page import register_test_pages
from hitl_app.ui.inbox_state import INBOX_JS_SRC, InboxState
from hitl_app.ui.pages import index, thread_page
from hitl_app.ui.state import ChatState, IndexState
from hitl_app.ui.state.live import LIVE_JS_SRC, STICK_TO_BOTTOM_JS_SRC

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
quiet_noisy_loggers()


@contextlib.asynccontextmanager
async def lifespan():
    """Open the runtime (database, checkpointer, agent) for the server's lifetime.

    A configuration the app cannot start with is printed as ONE line on stderr
    (``hitl_app cannot start: <what to set>``) and the process exits with status 3.
    """
    try:
        runtime = open_runtime()
        await runtime.__aenter__()
    except StartupError as exc:
        print(f"hitl_app cannot start: {exc}", file=sys.stderr, flush=True)
        os._exit(3)
    pace_disk_purge(app.state_manager)  # the embedded default's state folder is scanned once a minute
    try:
        yield
    finally:
        await runtime.__aexit__(None, None, None)


def frontend_exception_handler(exception: Exception) -> None:
    """Log an error a browser reported as one escaped line of at most 2 KB, rate-limited per
    process: the report is client text, so it must not forge log lines nor fill the disk."""
    log_frontend_report(str(exception))


def _static_dir() -> Path:
    """The compiled front end's folder, as Reflex's prod server mounts it."""
    frontend_path = rx.config.get_config().frontend_path.strip("/")
    return (prerequisites.get_web_dir() / constants.Dirs.STATIC / frontend_path).resolve()


def account_routes():
    """The sign-in, sign-out, first-run, invite and single sign-on routes (``hitl_app.auth.http``)
    on the runtime's database."""
    return auth_app(get_engine=lambda: get_runtime().engines.async_)


def with_security_headers(asgi_app):
    """Wrap the whole backend (pages, static files, API routes) in ``SecurityHeaders``.

    The app's own scripts are files under ``assets/js`` (``script-src 'self'``): no inline
    script beyond the build's needs a hash."""
    return SecurityHeaders(asgi_app, _static_dir())


# plain <script src> in the document head (pre-rendered, so they run before the app's code and
# before any server call can use them)
app = rx.App(
    head_components=[
        rx.el.script(src=src) for src in (LIVE_JS_SRC, STICK_TO_BOTTOM_JS_SRC, COUNTDOWN_JS_SRC, REVIEW_KEYS_JS_SRC, INBOX_JS_SRC)
    ],
    frontend_exception_handler=frontend_exception_handler,
    # the test-only probe routes (HITL_TEST_HOOKS=1) sit inside the security headers
    api_transformer=[t for t in (probe_routes(), account_routes(), with_security_headers) if t is not None],
)
app.register_lifespan_task(lifespan)
app.add_page(index, route="/", on_load=IndexState.open_new_thread, title="hitl_app")
app.add_page(
    thread_page, route="/thread/[thread_id]", on_load=[ChatState.load_thread, InboxState.refresh], title="hitl_app · chat"
)
app.add_page(inbox_page, route="/reviews", on_load=InboxState.refresh, title="hitl_app · reviews")
app.add_page(sign_in_page, route="/sign-in", on_load=AuthState.load_sign_in, title="hitl_app · sign in")
app.add_page(invite_page, route="/invite/[token]", on_load=AuthState.load_invite, title="hitl_app · join")
app.add_page(admin_page, route="/admin", on_load=AdminState.load, title="hitl_app · accounts")
app.add_page(audit_page, route="/audit", on_load=[AuditState.load, InboxState.refresh], title="hitl_app · audit")
app.add_page(grants_page, route="/grants", on_load=[GrantsState.load, InboxState.refresh], title="hitl_app · grants")
app.add_page(metrics_page, route="/metrics", on_load=[MetricsState.load, InboxState.refresh], title="hitl_app · metrics")
register_test_pages(app)  # /test/editor, only when HITL_TEST_HOOKS=1
