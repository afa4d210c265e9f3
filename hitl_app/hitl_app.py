"""The Reflex app: pages and the lifespan that opens the database, checkpointer and agent once."""

# Tested by: tests/e2e/test_chat_flow.py - every browser test serves this app
# ruff: noqa: E402 - the imports come after the collector is paused (below)

from __future__ import annotations

import gc

# Start-up: no garbage collection while the app's modules load (LangChain, LangGraph, SQLAlchemy and
# Reflex make a great many long-lived objects, and the collector kept scanning them: ~17% of the import's
# CPU, bench/README.md round 12), then those objects are frozen out of the collector's view before
# gunicorn's preloading master forks its workers. This is the order Python's documentation gives for a
# preforking server (https://docs.python.org/3.11/library/gc.html#gc.freeze: "call gc.disable() early in
# the parent process, gc.freeze() right before fork()"); the collector runs again at the end of this module.
_GC_WAS_ON = gc.isenabled()
gc.disable()

import contextlib
import os
import sys
from pathlib import Path

import reflex as rx
from reflex import constants
from reflex.utils import prerequisites

from hitl_app.api.mail_links import mail_link_app
from hitl_app.api.routes import api_body_cap, decision_api
from hitl_app.auth.http import auth_app
from hitl_app.errors import StartupError
from hitl_app.http_headers import SecurityHeaders
from hitl_app.logsafe import configure_logging, log_frontend_report
from hitl_app.runtime import get_inbox, get_runtime, get_service, open_runtime
from hitl_app.ui.components.shortcuts import REVIEW_KEYS_JS_SRC
from hitl_app.ui.pages.account import account_page
from hitl_app.ui.pages.admin import admin_page
from hitl_app.ui.pages.audit import audit_page
from hitl_app.ui.pages.auth import invite_page, sign_in_page
from hitl_app.ui.pages.inbox import inbox_page
from hitl_app.ui.pages.review_desk import grants_page, metrics_page
from hitl_app.ui.pages.thread import index, thread_page
from hitl_app.ui.pages.webhooks import webhooks_page
from hitl_app.ui.state.account import AccountState
from hitl_app.ui.state.admin import AdminState
from hitl_app.ui.state.audit import AuditState
from hitl_app.ui.state.auth import AuthState
from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.desk import COUNTDOWN_JS_SRC
from hitl_app.ui.state.desk_pages import GrantsState, MetricsState
from hitl_app.ui.state.disk import pace_disk_purge
from hitl_app.ui.state.inbox import INBOX_JS_SRC, InboxState, tabs_signed_out
from hitl_app.ui.state.live import LIVE_JS_SRC, STICK_TO_BOTTOM_JS_SRC, use_tab_check
from hitl_app.ui.state.socket_gate import install_socket_gate
from hitl_app.ui.state.thread_list import IndexState
from hitl_app.ui.state.webhooks import WebhooksState

TEST_HOOKS = os.environ.get("HITL_TEST_HOOKS") == "1"
"""The test suite's switch: the editor test page, its state and the probe routes exist only then."""
if TEST_HOOKS:  # imported only under the switch, so a normal run's state tree has no test-only state
    from hitl_app.ui.testing import editor_page, probes

configure_logging()


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
    # no raw session cookie in tab states; a socket without a session uses only the sign-in pages
    install_socket_gate(app.event_namespace, also_open=editor_page.TEST_STATES if TEST_HOOKS else ())
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
    return auth_app(get_engine=lambda: get_runtime().engines.async_, signed_out=tabs_signed_out)


def api_routes():
    """The decision API under ``/api/v1`` (``hitl_app.api.routes``) on the runtime's database,
    thread service and inbox."""
    return decision_api(
        get_engine=lambda: get_runtime().engines.async_, get_service=get_service, get_inbox=get_inbox,
        per_minute=lambda: get_runtime().settings.api_requests_per_minute,
        get_card_facts=lambda: (get_runtime().risks, get_runtime().origins),
    )


def mail_routes():
    """The reminder mails' one-time decision links, ``/mail/{token}`` (``hitl_app.api.mail_links``)."""
    return mail_link_app(get_engine=lambda: get_runtime().engines.async_, get_service=get_service)


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
    api_transformer=[
        t for t in (
            probes.probe_routes() if TEST_HOOKS else None, account_routes(), api_routes(), mail_routes(), api_body_cap,
            with_security_headers,
        ) if t is not None
    ],
)
app.register_lifespan_task(lifespan)


async def tab_connected(token: str) -> bool:
    """Whether client ``token``'s websocket is connected to any worker (Reflex's token manager;
    True while the app has none yet)."""
    manager = getattr(app.event_namespace, "_token_manager", None)
    return True if manager is None else bool(await manager.is_token_connected(token))


use_tab_check(tab_connected)  # the inbox watchers ask it whether their tab is still there
app.add_page(index, route="/", on_load=IndexState.open_new_thread, title="hitl_app")
app.add_page(
    thread_page, route="/thread/[thread_id]", on_load=[ChatState.load_thread, InboxState.refresh], title="hitl_app · chat"
)
app.add_page(inbox_page, route="/reviews", on_load=InboxState.refresh, title="hitl_app · reviews")
app.add_page(sign_in_page, route="/sign-in", on_load=AuthState.load_sign_in, title="hitl_app · sign in")
app.add_page(invite_page, route="/invite/[token]", on_load=AuthState.load_invite, title="hitl_app · join")
app.add_page(admin_page, route="/admin", on_load=AdminState.load, title="hitl_app · accounts")
app.add_page(webhooks_page, route="/admin/webhooks", on_load=WebhooksState.load, title="hitl_app · webhooks")
app.add_page(account_page, route="/account", on_load=AccountState.load, title="hitl_app · API tokens")
app.add_page(audit_page, route="/audit", on_load=[AuditState.load, InboxState.refresh], title="hitl_app · audit")
app.add_page(grants_page, route="/grants", on_load=[GrantsState.load, InboxState.refresh], title="hitl_app · grants")
app.add_page(metrics_page, route="/metrics", on_load=[MetricsState.load, InboxState.refresh], title="hitl_app · metrics")
if TEST_HOOKS:
    editor_page.register_test_pages(app)  # /test/editor

# The modules are loaded: what they made lives as long as the process, so the collector need not scan it
# again (and a forked worker does not copy those pages by touching their GC headers); collect as before.
gc.freeze()
if _GC_WAS_ON:
    gc.enable()
