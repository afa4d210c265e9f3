"""The session cookie: its name and lifetime, setting and clearing it on a response, and reading the
session from a tab's raw ``Cookie`` header (the websocket gate's SHA-256 of it, or the cookie itself).

The cookie (``SESSION_COOKIE``) is HttpOnly, SameSite=Strict, Secure on https; the server decides how
long a session lasts (sliding expiry of its row), the browser may keep the cookie long.
"""

from __future__ import annotations

import re
from datetime import timedelta
from http.cookies import CookieError, SimpleCookie

from starlette.requests import Request
from starlette.responses import Response

from hitl_app.auth.tokens import hash_token

SESSION_COOKIE = "hitl_session"
COOKIE_MAX_AGE = int(timedelta(days=400).total_seconds())
"""The browser may keep the cookie long; the server decides (sliding expiry of the session row)."""

SESSION_KEY_COOKIE = "hitl_session_sha256"
"""The name the websocket gate (``hitl_app.ui.state.socket_gate``) gives the session cookie's SHA-256 in
the ``Cookie`` header it leaves for a tab's state: the state keeps the hash, never the token."""
_SESSION_KEY = re.compile(rf"^{SESSION_KEY_COOKIE}=([0-9a-f]{{64}})$")


def session_key(cookie_header: str | None) -> str:
    """The session's SHA-256 (64 hex characters, as the database keeps it) from a tab's ``Cookie``
    header, or "": the gate's ``hitl_session_sha256=<hex>``, else the hash of a raw header's
    ``hitl_session`` cookie (a state built without the gate, e.g. in-process tests)."""
    if not cookie_header:
        return ""
    if found := _SESSION_KEY.match(cookie_header):
        return found.group(1)
    token = session_token_from_cookie_header(cookie_header)
    return hash_token(token) if token else ""


def session_token_from_cookie_header(header: str | None) -> str:
    """The session token in a raw ``Cookie`` header, or "" (also for a malformed header)."""
    if not header:
        return ""
    jar = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return ""
    morsel = jar.get(SESSION_COOKIE)
    return morsel.value if morsel else ""


def is_https(request: Request) -> bool:
    """True when ``request`` came over https (its cookies are then marked Secure)."""
    return request.url.scheme == "https"


def set_session_cookie(response: Response, request: Request, token: str) -> None:
    """Put the session ``token`` in the cookie on ``response`` (HttpOnly, SameSite=Strict, path ``/``)."""
    response.set_cookie(
        SESSION_COOKIE, token, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="strict",
        secure=is_https(request),
    )


def clear_session_cookie(response: Response, request: Request) -> None:
    """Remove the session cookie from the browser that sent ``request``."""
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=is_https(request))
