"""What a websocket may send (F10), through the real websocket (prod app):

* a socket without a session changes no state outside the sign-in pages: its events to the other
  states are refused (it is sent to /sign-in), while the sign-in page still loads;
* client-storage values (``hitl_browser_id`` / ``hitl_reviewer`` localStorage, sent at hydration)
  are size-bounded: a megabyte value is not taken into the tab's state;
* the socket's largest message fits the largest legitimate event (a composer paste at the
  browser's cap, ``MAX_PASTE_CHARS``, at the widest JSON encoding) and no more: that paste is
  answered with the limit message, a 3 MB message closes the connection.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from hitl_app.review.types import MAX_PASTE_CHARS
from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import FIELD, SESSION, WsClient

pytestmark = pytest.mark.app
AUTH = "reflex___state____state.hitl_app___ui___state___auth____auth_state"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    s = AppServer(tmp_path_factory.mktemp("ws-gate") / "app", frontend=False)
    s.start()
    yield s
    s.stop()


def redirected_to_sign_in(tab: WsClient) -> bool:
    return "/sign-in" in json.dumps(tab.events)


async def test_a_socket_without_a_session_changes_no_state_outside_the_sign_in_pages(server):
    async with WsClient(server.url, session="") as tab:
        await tab.hydrate("/sign-in")
        await tab.wait_for(lambda c: c.state.get(AUTH, {}).get("sso_enabled") is not None
                           or c.root.get("is_hydrated") is True, what="the sign-in page loaded")
        mark = tab.mark()
        await tab.call("SessionState.save_reviewer", form_data={"__reflex_form_data__": [["reviewer", "Eve"]]})
        await tab.call("ChatState.adopt_identity", stored={"browser_id": str(uuid.uuid4()), "reviewer": "Mallory"})
        await tab.wait_for(redirected_to_sign_in, what="the refusal (a redirect to /sign-in)")
        await tab.hydrate("/sign-in")  # one more round trip: anything the events changed has arrived
        await tab.wait_for(lambda c: c.root.get("is_hydrated") is True and c.mark() > mark, what="hydrated again")
        changed = [(s, v, x) for s, v, x in tab.log[mark:] if s == "SessionState"]
        assert [x for _, v, x in changed if v == "reviewer" and x in ("Eve", "Mallory")] == []


async def test_client_storage_values_are_size_bounded(server):
    async with WsClient(server.url) as tab:
        await tab.call("State.hydrate_and_load", vars={
            f"{SESSION}.browser_id{FIELD}": "b" * 1_000_000, f"{SESSION}.reviewer{FIELD}": "r" * 1_000_000,
        })
        await tab.wait_for(lambda c: c.root.get("is_hydrated") is True, what="hydrated")
        await tab.round_trip()
        longest = max((len(json.dumps(value)) for _, _, value in tab.log), default=0)
    assert longest < 10_000, f"a {longest:,}-character value came back from the tab's state"


async def test_the_largest_legitimate_event_fits_and_a_larger_one_closes_the_socket(server):
    async with WsClient(server.url) as tab:
        await tab.load_thread(str(uuid.uuid4()))
        await tab.send("\x01" * MAX_PASTE_CHARS)  # 6 bytes a character in JSON (\u0001)
        await tab.wait_for(lambda c: "too long" in c.chat.get("composer_error", ""), what="the limit message")
        assert tab.connected
        await tab.send("z" * 3_000_000)
        await tab.wait_for(lambda c: not c.connected, timeout=20, what="the connection closed")
