"""Accounts for tests against a running app: create one in its database, sign it in over HTTP.

Accounts are made with the app's own functions (``hitl_app.auth.add_account`` as the command line
does) on the server's database (``DATABASE_URL`` or the SQLite file in ``HITL_DATA_DIR``); the
session token comes from the real ``POST /auth/sign-in`` route (its ``Set-Cookie``), so a test's
tab is signed in exactly as a browser is. The token goes into the websocket handshake's ``Cookie``
header (``WsClient(session=...)``) or a Playwright context's cookies (``browser_cookie``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import urllib.error
import urllib.request
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

PASSWORD = "correct horse battery"
"""The password of every account the tests make (at least 8 characters)."""
COOKIE = "hitl_session"


def database_url(env: dict[str, str]) -> str:
    """The server's database URL from its environment (``DATABASE_URL`` or its data folder's SQLite)."""
    return env.get("DATABASE_URL") or f"sqlite:///{Path(env['HITL_DATA_DIR']) / 'hitl.sqlite'}"


def email_for(key: str) -> str:
    """A stable test email for ``key`` (e.g. a simulated browser's id)."""
    return f"u-{hashlib.sha256(key.encode()).hexdigest()[:12]}@example.com"


async def ensure_account(env: dict[str, str], email: str, *, name: str = "Tester", role: str = "member",
                         password: str = PASSWORD) -> int:
    """Create the account unless its email exists; return its account id."""
    from hitl_app import auth
    from hitl_app.auth import SYSTEM, AuthError, Role
    from hitl_app.store.db import create_schema, make_engines

    engines = make_engines(database_url(env))
    try:
        await asyncio.to_thread(create_schema, engines)
        try:
            who = await auth.add_account(engine=engines.async_, email=email, display_name=name, role=Role.parse(role),
                                         password=password, by=SYSTEM)
            return who.account_id
        except AuthError:
            found = await auth.find_account(engine=engines.async_, email=email)
            assert found is not None, f"could not create {email}"
            return found.account_id
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


def post_json(url: str, body: dict[str, Any], cookie: str = "") -> tuple[int, dict[str, Any], SimpleCookie]:
    """POST ``body`` as JSON; returns (status, JSON answer, cookies set). Errors are returned, not raised."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **({"Cookie": cookie} if cookie else {})})
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            status, raw, headers = r.status, r.read(), r.headers
    except urllib.error.HTTPError as exc:
        status, raw, headers = exc.code, exc.read(), exc.headers
    jar = SimpleCookie()
    for value in headers.get_all("Set-Cookie") or []:
        jar.load(value)
    try:
        answer = json.loads(raw or b"{}")
    except ValueError:
        answer = {"raw": raw.decode(errors="replace")}
    return status, answer, jar


def sign_in(url: str, email: str, password: str = PASSWORD) -> str:
    """Sign in through ``POST /auth/sign-in``; returns the session token from the cookie.

    Raises AssertionError with the server's answer when the sign-in is refused.
    """
    status, answer, jar = post_json(f"{url.rstrip('/')}/auth/sign-in", {"email": email, "password": password})
    assert status == 200 and COOKIE in jar, f"sign-in of {email} refused: {status} {answer}"
    return jar[COOKIE].value


def browser_cookie(url: str, token: str) -> dict[str, Any]:
    """The session cookie as Playwright's ``context.add_cookies`` takes it."""
    return {"name": COOKIE, "value": token, "url": url.rstrip("/"), "httpOnly": True, "sameSite": "Strict"}


def run_sync(coro: Any) -> Any:
    """Run ``coro`` to completion in a fresh thread with its own event loop (usable from sync tests,
    also while Playwright's loop runs in this thread)."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            result["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


async def make_api_token(env: dict[str, str], account_id: int, *, scopes: tuple[str, ...] = ("read", "decide"),
                         name: str = "test script", days: int = 30) -> str:
    """A personal API token for ``account_id`` made with the app's own function (as the account page
    does) on the server's database; returns the token (shown once)."""
    from hitl_app.auth import Principal, Role
    from hitl_app.auth.api_tokens import create_api_token
    from hitl_app.store.db import make_engines

    engines = make_engines(database_url(env))
    try:
        owner = Principal(account_id=account_id, display_name="", role=Role.MEMBER)
        token, _view = await create_api_token(engine=engines.async_, owner=owner, name=name, scopes=scopes, days=days)
        return token
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


def run_sql(env: dict[str, str], statement: str, **params: Any) -> list[tuple[Any, ...]]:
    """Rows of one statement on the server's database (SQLite or PostgreSQL, from its ``env``); commits."""
    from sqlalchemy import text

    from hitl_app.store.db import make_engines

    engines = make_engines(database_url(env))
    try:
        with engines.sync.begin() as conn:
            result = conn.execute(text(statement), params)
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engines.sync.dispose()
