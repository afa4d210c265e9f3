"""Security headers on every HTTP response of the app (pages, static files, API routes), and what a
browser may keep of it (``cache_control``).

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

Caching: the build's files under ``/assets/`` carry a hash of their content in their names
(``root-BqE-aM0J.js``), so a browser keeps them for a year without asking again (a new build has new
names). The API, the mail links and the sign-in routes (``/api/``, ``/mail/``, ``/auth/``: card details,
tokens) are never stored (``no-store``); everything else (pages, the head scripts, the favicon) is asked
for again each time (``no-cache``; the static files answer 304 when unchanged). A route's own
``Cache-Control`` wins over both. Without any, a page load re-validated each of its ~40 files (issue 23:
the pages' own load).
"""

# Tested by: tests/integration/app/test_http_hardening.py, tests/e2e/test_browser_hardening.py - on the served app;
# tests/unit/app/test_http_cache.py - what a browser may keep

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

_HASHED_ASSET = re.compile(r"/assets/[^/]+-[A-Za-z0-9_-]{8}\.[A-Za-z0-9]+")
"""A build output named by its content (Vite: ``<name>-<8-character hash>.<ext>`` right under ``/assets/``;
the whole path must match)."""
KEEP_FOR_A_YEAR = b"public, max-age=31536000, immutable"
ASK_AGAIN = b"no-cache"
NEVER_STORE = b"no-store"
_PRIVATE_PREFIXES = ("/api/", "/mail/", "/auth/")
"""Routes whose answers hold what a disk or a shared cache must not keep (cards, tokens, sign-in)."""

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


def cache_control(path: str, status: int, route_set: bytes | None) -> bytes:
    """The ``Cache-Control`` value for a response to ``path`` (the URL path) with ``status``.

    ``KEEP_FOR_A_YEAR`` for a content-hashed build file answered 200 or 304 (a 304's headers replace the
    stored copy's, so it must say the same); else the route's own value (``route_set``) when it set one;
    else ``NEVER_STORE`` under ``/api/``, ``/mail/`` and ``/auth/``; else ``ASK_AGAIN``.
    (``immutable``: RFC 8246; a 304 updates the stored headers: RFC 9111 section 4.3.4.)
    """
    if status in (200, 304) and _HASHED_ASSET.fullmatch(path):
        return KEEP_FOR_A_YEAR
    if route_set is not None:
        return route_set
    return NEVER_STORE if path.startswith(_PRIVATE_PREFIXES) else ASK_AGAIN


class SecurityHeaders:
    """ASGI middleware adding ``security_headers`` to each HTTP response (replacing any the inner
    app set under the same names) and its ``cache_control``.

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
                route_set = next((v for k, v in kept if k.lower() == b"cache-control"), None)
                cache = cache_control(scope.get("path", ""), int(message.get("status", 200)), route_set)
                kept = [(k, v) for k, v in kept if k.lower() != b"cache-control"]
                message["headers"] = [*kept, *self.headers, (b"cache-control", cache)]
            await send(message)

        await self.app(scope, receive, send_with_headers)
