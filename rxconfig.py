"""Reflex configuration. Ports are passed on the command line (see Makefile), not set here."""

import os

import reflex as rx

from hitl_app.review.types import MAX_EVENT_BYTES
from hitl_app.settings import allowed_origins
from hitl_app.ui.pages.route_preload import PreloadRoutes

# The largest legitimate event (one text box at its browser cap) must reach the server and be refused
# with a clear message instead of closing the websocket; nothing larger is read (engine.io drops the
# connection). The size and why: MAX_EVENT_BYTES in hitl_app/review/types.py.
os.environ.setdefault("REFLEX_SOCKET_MAX_HTTP_BUFFER_SIZE", str(MAX_EVENT_BYTES))

config = rx.Config(
    app_name="hitl_app",
    telemetry_enabled=False,
    # Listen on loopback unless told otherwise (`reflex run --backend-host 0.0.0.0`, or
    # `HOST=0.0.0.0 make run`); Reflex's own default is every interface.
    backend_host="127.0.0.1",
    # Only the app's own pages may call it or open its websocket (Reflex's default is "*"):
    # HITL_ALLOWED_ORIGINS, else the address it serves on (hitl_app/settings.py).
    cors_allowed_origins=allowed_origins(),
    show_built_with_reflex=False,
    # PreloadRoutes: a thread URL's page (the build's SPA fallback) preloads the thread page's modules too
    plugins=[rx.plugins.RadixThemesPlugin(theme=rx.theme(accent_color="indigo", radius="medium")), PreloadRoutes()],
    disable_plugins=[rx.plugins.SitemapPlugin],
)
