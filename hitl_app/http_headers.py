"""Security headers on every HTTP response of the app (pages, static files, API routes).

A plain ASGI middleware (no Reflex import: ``hitl_app.py`` wraps the app with it through Reflex's
``api_transformer``). Websocket handshakes pass through unchanged.

The Content-Security-Policy is as tight as Reflex 0.10's compiled front end allows:

* ``script-src 'self'`` plus the SHA-256 hashes of the inline ``<script>`` blocks that the build
  wrote into its prerendered HTML pages (theme switch, React Router hydration data) and of the
  app's own head scripts (which React Helmet inserts at run time). A script that is not part of
  the build, e.g. in an HTML file written into the static folder later, does not run.
  ``'unsafe-eval'`` stays: Reflex runs the JavaScript of ``rx.call_script`` events (the
  live-streaming updates and the scroll helper) with ``eval``.
* ``style-src 'self' 'unsafe-inline'``: Emotion and Radix inject ``<style>`` elements and
  ``style=""`` attributes at run time.
* ``img-src 'self' data:`` and ``connect-src 'self'`` (same-origin ``ws://``/``wss://`` included),
  so model text cannot make the browser contact another origin.
* ``frame-ancestors 'none'`` (with ``X-Frame-Options: DENY``), ``object-src 'none'``.
"""

# Tested by: tests/integration/app/test_http_hardening.py, tests/e2e/test_browser_hardening.py - on the served app

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)


def script_hash(body: str) -> str:
    """The CSP source expression allowing the inline script ``body``: ``'sha256-<base64>'``."""
    return f"'sha256-{base64.b64encode(hashlib.sha256(body.encode('utf-8')).digest()).decode()}'"


def inline_script_hashes(static_dir: Path | None, extra_scripts: Iterable[str] = ()) -> list[str]:
    """``script_hash`` of every inline script in the ``*.html`` files under ``static_dir`` and of
    each of ``extra_scripts`` (sorted, no duplicates; a missing folder adds nothing)."""
    bodies = list(extra_scripts)
    if static_dir is not None and static_dir.is_dir():
        for page in static_dir.rglob("*.html"):
            bodies += _INLINE_SCRIPT.findall(page.read_text(encoding="utf-8", errors="replace"))
    return sorted({script_hash(body) for body in bodies})


def content_security_policy(script_hashes: Iterable[str] = ()) -> str:
    """The Content-Security-Policy header value, with ``script_hashes`` allowed as inline scripts."""
    scripts = " ".join(["'self'", *script_hashes, "'unsafe-eval'"])
    return "; ".join(
        [
            "default-src 'self'",
            f"script-src {scripts}",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "media-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def security_headers(script_hashes: Iterable[str] = ()) -> list[tuple[bytes, bytes]]:
    """The headers added to every HTTP response, as ASGI ``(name, value)`` byte pairs."""
    return [
        (b"content-security-policy", content_security_policy(script_hashes).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
    ]


class SecurityHeaders:
    """ASGI middleware adding ``security_headers`` to each HTTP response (replacing any the inner
    app set under the same names).

    Args:
        app: the inner ASGI app.
        static_dir: the compiled front end's folder; its inline scripts are hashed once, here, so
            a page added to the folder after start-up gets no allowance.
        extra_scripts: texts of inline scripts the page inserts at run time (``rx.script`` in
            ``head_components``), allowed by their hashes.
    """

    def __init__(self, app: ASGIApp, static_dir: Path | None = None, extra_scripts: Iterable[str] = ()):
        self.app = app
        self.headers = security_headers(inline_script_hashes(static_dir, extra_scripts))
        self._names = {name for name, _ in self.headers}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``scope`` through the wrapped app, adding the security headers to HTTP responses."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in self._names]
                message["headers"] = kept + self.headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
