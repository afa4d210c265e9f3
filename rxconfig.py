"""Reflex configuration. Ports are passed on the command line (see Makefile), not set here."""

import os

import reflex as rx

# A 1 MB paste must reach the server and be refused with a clear message instead of closing the
# websocket (engine.io's default limit is 1,000,000 bytes; see ../shared/reference/reflex-langgraph-loop.md).
os.environ.setdefault("REFLEX_SOCKET_MAX_HTTP_BUFFER_SIZE", str(8 * 1024 * 1024))

config = rx.Config(
    app_name="hitl_app",
    telemetry_enabled=False,
    show_built_with_reflex=False,
    plugins=[rx.plugins.RadixThemesPlugin(theme=rx.theme(accent_color="indigo", radius="medium"))],
    disable_plugins=[rx.plugins.SitemapPlugin],
)
