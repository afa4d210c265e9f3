"""Sign-in is checked on every websocket event, against the real app on SQLite and PostgreSQL.

Each test drives the running app with ``WsClient`` (the page's Socket.IO protocol; the session
cookie travels in the websocket handshake as a browser sends it). A refused event must send the tab
to /sign-in, empty what it showed, and run nothing (no thread row, no mail in the outbox).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from hitl_app.store.db import make_engines
from tests.helpers import accounts
from tests.helpers.app_server import AppServer
from tests.helpers.postgres import fresh_database
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app per backend for this module."""
    data = tmp_path_factory.mktemp(f"auth-ws-{request.param}")
    if request.param == "sqlite":
        with AppServer(data, frontend=False) as s:
            yield s
        return
    with fresh_database() as url, AppServer(data, env={"DATABASE_URL": url}, frontend=False) as s:
        yield s


def sql(server: AppServer, statement: str, **params) -> list[tuple]:
    """Run one statement on the server's database (SQLite or PostgreSQL); rows for a SELECT."""
    engines = make_engines(accounts.database_url(server.env))
    try:
        with engines.sync.begin() as conn:
            result = conn.execute(text(statement), params)
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engines.sync.dispose()
        engines.async_.sync_engine.dispose()


def redirected_to_sign_in(c: WsClient) -> bool:
    return any(e.get("name") == "_redirect" and (e.get("payload") or {}).get("path") == "/sign-in" for e in c.events)


def threads_of(server: AppServer, thread_id: str) -> int:
    return sql(server, "SELECT count(*) FROM threads WHERE thread_id = :t", t=thread_id)[0][0]


def outbox_to(server: AppServer, to: str) -> int:
    return sql(server, 'SELECT count(*) FROM outbox WHERE "to" = :to', to=to)[0][0]


async def signed_in_on_thread(server: AppServer) -> tuple[WsClient, str]:
    """A signed-in tab (its own new account) with a thread that has one finished turn."""
    c = await WsClient(server.url).connect()
    tid = str(uuid.uuid4())
    await c.load_thread(tid)
    assert not c.chat.get("load_error")
    await c.send("hello")
    await c.wait_for(lambda c: any(m["role"] == "assistant" for m in c.chat.get("messages") or []), what="a reply")
    await c.wait_idle()
    return c, tid


async def refused(c: WsClient, server: AppServer, tid: str, mail_to: str) -> None:
    """The tab's next events are refused: it is sent to /sign-in, emptied, and nothing runs."""
    c.events.clear()
    await c.send(f"email {mail_to} about x: y")
    await c.wait_for(redirected_to_sign_in, what="redirect to /sign-in")
    await c.wait_for(lambda c: c.chat.get("messages") == [] and c.chat.get("tid") == "", what="the tab emptied")
    assert c.session.get("user_name", "") == ""
    # a forged review action and a reload of the thread are refused the same way
    c.events.clear()
    await c.call("ReviewState.submit")
    await c.wait_for(redirected_to_sign_in, what="redirect after a forged submit")
    c.events.clear()
    await c.hydrate(f"/thread/{tid}", {"thread_id": tid})
    await c.wait_for(redirected_to_sign_in, what="redirect on reload")
    await c.settle()
    assert c.chat.get("messages") == []
    assert outbox_to(server, mail_to) == 0


async def test_signed_out_tab_is_refused_and_nothing_runs(server: AppServer):
    c = await WsClient(server.url, session="").connect()
    try:
        tid = str(uuid.uuid4())
        await c.hydrate(f"/thread/{tid}", {"thread_id": tid})
        await c.wait_for(redirected_to_sign_in, what="redirect to /sign-in")
        c.events.clear()
        await c.send("email mallory@example.com about x: y")
        await c.wait_for(redirected_to_sign_in, what="a refused send")
        # a made-up session cookie is the same as none
        forged = await WsClient(server.url, session="not-a-session-token").connect()
        try:
            await forged.hydrate(f"/thread/{tid}", {"thread_id": tid})
            await forged.wait_for(redirected_to_sign_in, what="forged cookie refused")
            await forged.send("email mallory@example.com about x: y")
        finally:
            await forged.close()
        await c.settle()
        assert threads_of(server, tid) == 0
        assert outbox_to(server, "mallory@example.com") == 0
    finally:
        await c.close()


async def test_expired_session_loses_access_at_the_next_event(server: AppServer):
    c, tid = await signed_in_on_thread(server)
    try:
        sql(server, "UPDATE auth_sessions SET expires_at = :past WHERE account_id = :a",
            past="2000-01-01 00:00:00", a=c.account_id)
        await refused(c, server, tid, "expired@example.com")
    finally:
        await c.close()


async def test_sign_out_ends_access_in_every_tab_on_that_session(server: AppServer):
    c, tid = await signed_in_on_thread(server)
    other_tab = await WsClient(server.url, session=c.session_token, browser_id=c.browser_id).connect()
    try:
        await other_tab.load_thread(tid)
        assert [m["text"] for m in other_tab.chat["messages"] if m["role"] == "user"] == ["hello"]
        status, answer, jar = accounts.post_json(f"{server.url}/auth/sign-out", {}, cookie=f"hitl_session={c.session_token}")
        assert status == 200 and answer == {"ok": True}
        assert jar[accounts.COOKIE].value == ""  # the browser's cookie is cleared
        await refused(c, server, tid, "signedout@example.com")
        await refused(other_tab, server, tid, "signedout2@example.com")
        assert threads_of(server, tid) == 1  # the thread is kept for the next sign-in
    finally:
        await other_tab.close()
        await c.close()


async def test_disabled_account_tab_loses_access_at_the_next_event(server: AppServer):
    c, tid = await signed_in_on_thread(server)
    try:
        proc = await asyncio.create_subprocess_exec(
            str(server_python()), "-m", "hitl_app", "users", "disable", accounts.email_for(c.browser_id),
            env=cli_env(server), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        _, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        await refused(c, server, tid, "disabled@example.com")
        # and it cannot sign in again
        status, answer, _ = accounts.post_json(f"{server.url}/auth/sign-in",
                                               {"email": accounts.email_for(c.browser_id), "password": accounts.PASSWORD})
        assert (status, answer) == (403, {"error": "This account is disabled"})
    finally:
        await c.close()


def server_python():
    from tests.helpers.app_server import ROOT

    return ROOT / ".venv/bin/python"


def cli_env(server: AppServer) -> dict[str, str]:
    import os

    return {**os.environ, **server.env}


async def make_legacy_thread(server: AppServer, browser_id: str) -> str:
    """A thread made before accounts: owned by ``browser_id``, its email approved (a mail in that
    browser's outbox). Written through the app's own runtime on the server's database."""
    from hitl_app.desk.cards import BrowserPerson
    from hitl_app.runtime import open_runtime
    from hitl_app.settings import Settings

    settings = Settings(HITL_DATA_DIR=server.data_dir, HITL_DEMO_WPS=0, DATABASE_URL=server.env.get("DATABASE_URL"))
    tid = str(uuid.uuid4())
    async with open_runtime(settings) as rt:
        await rt.service.start_turn(tid, "email legacy@example.com about old: times", owner=browser_id)
        await rt.service.wait(tid, timeout=60)
        view = await rt.service.load(tid, owner=browser_id)
        decisions = [{"type": "approve"}]
        await rt.service.submit_review(tid, view.pending.interrupt_id, decisions, person=BrowserPerson(browser_id, "old"))
        await rt.service.wait(tid, timeout=60)
    return tid


async def test_threads_from_before_accounts_are_claimed_at_that_browsers_first_sign_in(server: AppServer):
    from hitl_app.store.owners import owner_key

    browser_id = str(uuid.uuid4())
    tid = await make_legacy_thread(server, browser_id)
    assert sql(server, "SELECT owner FROM threads WHERE thread_id = :t", t=tid) == [(browser_id,)]
    # someone else's browser (another account, another browser id) cannot open it
    stranger = await WsClient(server.url).connect()
    try:
        await stranger.load_thread(tid)
        assert stranger.chat["load_error"] == "This thread belongs to someone else."
    finally:
        await stranger.close()
    # the browser that made it signs in: its account now owns the thread, its mail and its audit
    c = await WsClient(server.url, browser_id=browser_id).connect()
    try:
        await c.load_thread(tid)
        assert not c.chat.get("load_error")
        assert [m["text"] for m in c.chat["messages"] if m["role"] == "user"] == ["email legacy@example.com about old: times"]
        owner = str(c.account_id)
        assert sql(server, "SELECT owner FROM threads WHERE thread_id = :t", t=tid) == [(owner,)]
        assert sql(server, 'SELECT owner FROM outbox WHERE "to" = :to', to="legacy@example.com") == [(owner_key(owner),)]
    finally:
        await c.close()
    # a later account signing in from that browser finds nothing left to claim
    later = await WsClient(server.url, browser_id=browser_id, session=(await server.asign_in("later")).token).connect()
    try:
        await later.load_thread(tid)
        assert later.chat["load_error"] == "This thread belongs to someone else."
    finally:
        await later.close()
