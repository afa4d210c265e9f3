"""No secret at rest in tab state (F8), through the real websocket: Reflex saves each tab's state
(the embedded default: pickles in ``.states/``; with ``REFLEX_REDIS_URL``: Redis keys). After a
signed-in admin's tab made an invite, neither holds the raw session token nor the invite's token,
and the admin was still shown the link once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import socketio

from tests.helpers.app_server import AppServer
from tests.helpers.redis_server import require_redis
from tests.helpers.ws_client import SESSION, WsClient

pytestmark = pytest.mark.app
ADMIN = f"{SESSION}.hitl_app___ui___state___admin____admin_state"
INVITE = re.compile(r"/invite/([A-Za-z0-9_\-]{20,})")


@pytest.fixture(scope="module")
def disk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    s = AppServer(tmp_path_factory.mktemp("secrets-disk") / "app", frontend=False)
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    env = {"REFLEX_REDIS_URL": require_redis().rsplit("/", 1)[0]}
    s = AppServer(tmp_path_factory.mktemp("secrets-redis") / "app", env=env, frontend=False)
    s.start()
    yield s
    s.stop()


async def invite_as_admin(server: AppServer) -> tuple[WsClient, str]:
    """An admin's tab on /admin invites someone; returns the closed tab and the invite token it was shown."""
    bid = str(uuid.uuid4())
    await server.asign_in(bid, role="admin", name="Ada")
    async with WsClient(server.url, browser_id=bid) as tab:
        await tab.hydrate("/admin")
        await tab.wait_for(lambda c: c.state.get(ADMIN, {}).get("accounts"), what="the admin page loaded")
        email = f"new-{uuid.uuid4().hex[:8]}@example.com"
        await tab.call(f"{ADMIN}.invite", form_data={"__reflex_form_data__": [["email", email], ["role", "member"]]})
        shown = await tab.wait_for(lambda c: INVITE.search(json.dumps([c.log, c.events])), what="the invite link shown")
        await tab.round_trip()
    return tab, shown.group(1)


def secrets_of(tab: WsClient, invite: str) -> list[bytes]:
    assert tab.session_token and len(tab.session_token) > 20
    return [tab.session_token.encode(), invite.encode()]


async def test_no_session_token_nor_invite_token_in_the_states_folder(disk_server):
    tab, invite = await invite_as_admin(disk_server)
    assert disk_server.app_root is not None
    states = Path(disk_server.app_root) / ".states"
    await asyncio.sleep(4)  # the disk manager writes after a 2 s debounce
    files = list(states.glob("*.pkl"))
    assert files, "no tab state was written"
    holding = [(p.name, s[:6]) for p in files for s in secrets_of(tab, invite) if s in p.read_bytes()]
    assert holding == []


async def test_no_session_token_nor_invite_token_in_redis(redis_server):
    tab, invite = await invite_as_admin(redis_server)
    url = require_redis().rsplit("/", 1)[0]
    with redis.Redis.from_url(url) as client:
        keys = [k for token in {tab.token, *tab.replaced_tokens} for k in client.scan_iter(f"{token}*")]
        assert keys, "no tab state in Redis"
        values = [(k, client.get(k) or b"") for k in keys if client.type(k) == b"string"]
    holding = [(k, s[:6]) for k, v in values for s in secrets_of(tab, invite) if s in v]
    assert holding == []


async def test_the_kept_hash_is_no_credential(disk_server):
    """A tab state keeps the session's SHA-256 (``hitl_session_sha256=<hex>``); a handshake that
    presents that hash as its cookie is a socket without a session."""
    bid = str(uuid.uuid4())
    signed = await disk_server.asign_in(bid, role="admin", name="Ada")
    forged = f"x; hitl_session_sha256={hashlib.sha256(signed.token.encode()).hexdigest()}"
    for cookie in (forged.removeprefix("x; "), forged):
        tab = WsClient(disk_server.url, browser_id=bid, session="")
        async with _with_cookie(tab, cookie):
            await tab.hydrate("/admin")
            await tab.wait_for(lambda c: "/sign-in" in json.dumps(c.events), what="sent to /sign-in")
            assert not tab.state.get(ADMIN, {}).get("accounts")


class _with_cookie:
    """Connect ``tab`` with a raw ``Cookie`` header (WsClient sends only ``hitl_session=``)."""

    def __init__(self, tab: WsClient, cookie: str) -> None:
        self.tab, self.cookie = tab, cookie

    async def __aenter__(self) -> WsClient:
        sio = socketio.AsyncClient(reconnection=False)
        sio.on("event", self.tab._on_event, namespace="/_event")
        await sio.connect(f"{self.tab.url}/_event/?token={self.tab.token}", transports=["websocket"],
                          namespaces=["/_event"], socketio_path="/_event", wait_timeout=20,
                          headers={"Cookie": self.cookie})
        self.tab._sio = sio
        return self.tab

    async def __aexit__(self, *exc: object) -> None:
        await self.tab.close()
