"""Reading the auth forms safely: the same-site check on their origin, and their fields read with
a size cap (used by ``hitl_app.auth.http``; no database, no accounts)."""

# Tested by: tests/integration/auth/test_auth_http.py, tests/integration/auth/test_signin_limits.py

from __future__ import annotations

import json
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import Message


def origin_key(origin: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an origin like ``https://chat.example.com`` (the default port
    filled in), or None for anything that is not an http(s) origin."""
    try:
        parts = urlsplit(origin.strip().rstrip("/"))
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


def same_site(request: Request, allowed: frozenset[tuple[str, str, int]]) -> bool:
    """False for a request another site made the browser send (no sign-in or sign-out from there).

    ``Origin`` must be the app's own origin (scheme, host AND port, as the request reached it) or
    one of ``allowed`` (``HITL_ALLOWED_ORIGINS``, the list the websocket checks too). Browsers send
    ``Origin`` on every POST; it is ``null`` for a form post under the app's
    ``Referrer-Policy: no-referrer``, and then ``Sec-Fetch-Site`` (sent by current browsers) decides.
    A request with neither header is a non-browser client and is let through.
    """
    origin = request.headers.get("origin")
    if origin and origin != "null":
        key = origin_key(origin)
        return key is not None and (key == origin_key(f"{request.url.scheme}://{request.url.netloc}") or key in allowed)
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    return origin is None


MAX_AUTH_BODY = 16 * 1024
"""The largest request body the auth routes read, in bytes (a longer one is answered 413 unread)."""


class BodyTooLarge(Exception):
    """The request body is longer than ``MAX_AUTH_BODY``."""


async def read_body(request: Request, limit: int = MAX_AUTH_BODY) -> bytes:
    """The request body, read from the stream and never more than ``limit`` bytes of it.

    Raises:
        BodyTooLarge: the declared ``Content-Length`` or the bytes actually sent pass ``limit``.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


async def read_fields(request: Request) -> tuple[dict[str, str], bool]:
    """The form or JSON fields of a request (read with ``read_body``'s limit) and whether it was JSON.

    Raises:
        BodyTooLarge: see ``read_body``.
    """
    raw = await read_body(request)
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        return ({k: str(v) for k, v in body.items()} if isinstance(body, dict) else {}), True

    async def replay() -> Message:
        return {"type": "http.request", "body": raw, "more_body": False}

    form = await Request(request.scope, receive=replay).form()
    return {k: str(v) for k, v in form.items() if isinstance(v, str)}, False
