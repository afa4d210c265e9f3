"""Drive the running app over its Socket.IO websocket, as a browser tab would, without a browser.

Used by the raw websocket tests (tests/integration/ui/test_websocket_trust.py, test_faults.py) and the
benchmark. Protocol (read off real Chromium frames against Reflex 0.10.1):

* connect to ``<url>/_event/?token=<uuid>&EIO=4&transport=websocket``, namespace ``/_event``;
* emit ``"event"`` with ``{"name": "<full state path>.<handler>", "payload": {...},
  "router_data": {"pathname", "asPath", "query"}}``;
* the first event is ``reflex___state____state.hydrate_and_load`` with the browser's localStorage
  values in ``payload["vars"]`` (keys ``"<state path>.<var>_rx_state_"``); for a page with an
  on_load handler the server then runs it (``ChatState.load_thread`` for ``/thread/<id>``);
* the server sends ``"event"`` messages ``{"delta": {"<state path>": {"<var>_rx_state_": value}}}``
  and ``{"events": [...]}`` (redirects, toasts).

Usage::

    async with WsClient(server.url, browser_id=bid) as c:
        await c.load_thread(tid)
        await c.send("email bob@example.com about x: y")
        await c.wait_for(lambda c: c.review["cards"])
        await c.call("ReviewState.choose", index=0, kind="approve")
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: c.chat["status"] == "idle" and not c.chat["streaming"])
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import socketio

CONNECT_TRIES = 3
"""How often ``connect`` tries a handshake that failed at the transport (the page's client retries too)."""


ROOT_STATE = "reflex___state____state"
_MOD = "hitl_app___ui___state"
SESSION = f"{ROOT_STATE}.{_MOD}___session____session_state"
STATE_PATHS: dict[str, str] = {
    "State": ROOT_STATE,
    "SessionState": SESSION,
    "ThreadListState": f"{SESSION}.{_MOD}___thread_list____thread_list_state",
    "ChatState": f"{SESSION}.{_MOD}___chat____chat_state",
    "ReviewState": f"{SESSION}.{_MOD}___review____review_state",
    "MenuState": f"{ROOT_STATE}.hitl_app___ui___state___menu____menu_state",
    "InboxState": f"{SESSION}.hitl_app___ui___state___inbox____inbox_state",
}
"""Short state name -> Reflex full state name (``State.get_full_name()``; checked in the tests)."""

FIELD = "_rx_state_"


class WsTimeout(AssertionError):
    """``wait_for`` gave up; the message shows the accumulated state of the relevant states."""


class WsClient:
    """One simulated browser tab.

    Args:
        url: the app's base URL (``AppServer.url``).
        token: the tab's Reflex client token (a new uuid4 by default; reuse it to simulate a
            reconnect of the same tab).
        browser_id: the ``hitl_browser_id`` localStorage value (thread owner); a new one by default.
        reviewer: the ``hitl_reviewer`` localStorage value ("" = anonymous).
        session: the ``hitl_session`` cookie sent in the websocket handshake. None (default): the
            tab signs in as the test account of its ``browser_id`` on the server it connects to
            (``AppServer.asign_in``), so distinct browser ids are distinct accounts; "" = signed out.

    Attributes:
        state: accumulated deltas, ``{"ChatState": {"status": ..., ...}, ...}`` keyed by short name
            (unknown states keep their full name), var names without the ``_rx_state_`` suffix.
        log: every var change in arrival order, ``(short state, var, value)`` (see ``seen_since``).
        events: every ``{"events": [...]}`` item the server sent (redirects, toasts, ...).
        deltas: how many delta messages arrived (a cheap progress counter).
    """

    def __init__(self, url: str, *, token: str | None = None, browser_id: str | None = None, reviewer: str = "",
                 session: str | None = None):
        self.url = url.rstrip("/")
        self.token = token or str(uuid.uuid4())
        self.browser_id = browser_id or str(uuid.uuid4())
        self.reviewer = reviewer
        self.session_token = session
        self.account_id: int | None = None
        self.state: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.deltas = 0
        self.log: list[tuple[str, str, Any]] = []
        self.replaced_tokens: list[str] = []
        self.pathname = "/"
        self.query: dict[str, str] = {}
        self._sio: socketio.AsyncClient | None = None
        self._changed = asyncio.Event()
        self._short = {v: k for k, v in STATE_PATHS.items()}

    # ------------------------------------------------------------------ connection
    async def connect(self) -> WsClient:
        """Open the websocket (no hydrate yet; see ``load_thread`` / ``hydrate``)."""
        if self.session_token is None:
            from tests.helpers.app_server import SERVERS

            server = SERVERS.get(self.url)
            if server is not None:
                signed = await server.asign_in(self.browser_id)
                self.session_token, self.account_id = signed.token, signed.account_id
        # A transport-level failure of the handshake is tried again, as the page's socket.io client
        # does (it reconnects with a back-off); a refusal still fails after the last try.
        for attempt in range(CONNECT_TRIES):
            sio = socketio.AsyncClient(reconnection=False)
            sio.on("event", self._on_event, namespace="/_event")
            sio.on("new_token", self._on_new_token, namespace="/_event")
            try:
                await sio.connect(
                    f"{self.url}/_event/?token={self.token}",
                    transports=["websocket"],
                    namespaces=["/_event"],
                    socketio_path="/_event",
                    wait_timeout=20,
                    headers={"Cookie": f"hitl_session={self.session_token}"} if self.session_token else {},
                )
            except socketio.exceptions.ConnectionError:
                if attempt == CONNECT_TRIES - 1:
                    raise
                await asyncio.sleep(0.5 * (attempt + 1))
                continue
            self._sio = sio
            return self
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Close the websocket (the server keeps the tab's state under its token)."""
        if self._sio is not None:
            await self._sio.disconnect()
            self._sio = None

    @property
    def connected(self) -> bool:
        """True while the websocket is open."""
        return self._sio is not None and self._sio.connected

    async def __aenter__(self) -> WsClient:
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _on_new_token(self, token: Any) -> None:
        # the server saw this token still linked to an older socket and gave the tab a new one
        # (Reflex's duplicate-tab rule); the page adopts it, so do we
        if isinstance(token, str):
            self.replaced_tokens.append(self.token)
            self.token = token

    async def _on_event(self, data: Any) -> None:
        if isinstance(data, dict):
            for full, changes in (data.get("delta") or {}).items():
                bucket = self.state.setdefault(self._short.get(full, full), {})
                for key, value in changes.items():
                    bucket[key.removesuffix(FIELD)] = value
                    self.log.append((self._short.get(full, full), key.removesuffix(FIELD), value))
                self.deltas += 1
            self.events.extend(data.get("events") or [])
        self._changed.set()

    # ------------------------------------------------------------------ sending
    def _router_data(self) -> dict[str, Any]:
        return {"pathname": self.pathname, "asPath": self.pathname, "query": dict(self.query)}

    async def emit_raw(self, message: Any) -> None:
        """Emit any ``"event"`` message as is (for malformed-payload tests)."""
        assert self._sio is not None, "not connected"
        await self._sio.emit("event", message, namespace="/_event")

    async def call(self, handler: str, **payload: Any) -> None:
        """Send one event: ``handler`` is ``"ReviewState.choose"`` or a full ``state.handler`` name."""
        state, _, name = handler.rpartition(".")
        full = f"{STATE_PATHS.get(state, state)}.{name}"
        await self.emit_raw({"name": full, "payload": payload, "router_data": self._router_data()})

    async def hydrate(self, pathname: str = "/", query: dict[str, str] | None = None) -> None:
        """Send the hydrate event a page sends on (re)connect, with this browser's localStorage."""
        self.pathname, self.query = pathname, dict(query or {})
        vars_ = {
            f"{SESSION}.browser_id{FIELD}": self.browser_id,
            f"{SESSION}.reviewer{FIELD}": self.reviewer,
        }
        await self.call("State.hydrate_and_load", vars=vars_)

    async def load_thread(self, thread_id: str, timeout: float = 20) -> dict[str, Any]:
        """Open ``/thread/<thread_id>`` (hydrate + on_load) and wait until the page loaded it.

        Returns the ChatState vars. The page has loaded when ``ChatState.tid`` is the id and the
        root state reports hydrated (or a ``load_error`` is shown).
        """
        self.state.pop("ChatState", None)
        await self.hydrate(f"/thread/{thread_id}", {"thread_id": thread_id})
        await self.wait_for(
            lambda c: (c.chat.get("tid") == thread_id or c.chat.get("load_error")) and c.root.get("is_hydrated") is True,
            timeout=timeout,
            what=f"thread {thread_id} loaded",
        )
        return self.chat

    async def send(self, text: Any) -> None:
        """Press Send with ``text`` in the composer (the form payload a browser sends)."""
        await self.call("ChatState.send", form_data={"__reflex_form_data__": [["text", text]]})

    async def set_reviewer(self, name: str) -> None:
        """Save the reviewer name through the header popover's handler."""
        await self.call("SessionState.save_reviewer", form_data={"__reflex_form_data__": [["reviewer", name]]})

    # ------------------------------------------------------------------ reading
    @property
    def root(self) -> dict[str, Any]:
        """Vars of the root state (``is_hydrated``, router data)."""
        return self.state.get("State", {})

    @property
    def chat(self) -> dict[str, Any]:
        """ChatState vars seen so far."""
        return self.state.get("ChatState", {})

    @property
    def review(self) -> dict[str, Any]:
        """ReviewState vars seen so far."""
        return self.state.get("ReviewState", {})

    @property
    def session(self) -> dict[str, Any]:
        """SessionState vars seen so far."""
        return self.state.get("SessionState", {})

    def mark(self) -> int:
        """A position in the change log, for ``seen_since``."""
        return len(self.log)

    def seen_since(self, mark: int, state: str, var: str, predicate: Callable[[Any], Any]) -> bool:
        """True if ``state.var`` took a value matching ``predicate`` after ``mark`` (even briefly)."""
        return any(s == state and v == var and predicate(value) for s, v, value in self.log[mark:])

    def toasts(self) -> list[str]:
        """Texts of the toasts / window alerts the server asked the page to show."""
        out = []
        for e in self.events:
            if e.get("name") in ("_call_function", "_call_script", "_toast") or "toast" in str(e.get("name")):
                out.append(str(e.get("payload")))
        return out

    async def wait_for(self, predicate: Callable[[WsClient], Any], timeout: float = 20, what: str = "") -> Any:
        """Wait until ``predicate(self)`` is truthy (re-checked on every server message).

        Raises WsTimeout with the chat/review state when it does not become true in ``timeout`` s.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                result = predicate(self)
            except (KeyError, IndexError, TypeError):
                result = None
            if result:
                return result
            left = deadline - time.monotonic()
            if left <= 0:
                brief = {k: v for k, v in self.chat.items() if k not in ("messages",)}
                raise WsTimeout(
                    f"timed out waiting for {what or predicate}: chat={brief} "
                    f"review_error={self.review.get('review_error')!r} cards={len(self.review.get('cards') or [])} "
                    f"messages={[(m.get('role'), m.get('text', '')[:60]) for m in self.chat.get('messages') or []]}"
                )
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 0.5))
            except TimeoutError:
                pass

    async def wait_idle(self, timeout: float = 30) -> None:
        """Wait until no run streams and the thread is not running (status idle/review/failed/...)."""
        await self.wait_for(
            lambda c: c.chat.get("streaming") is False and c.chat.get("status") != "running",
            timeout=timeout,
            what="run ended",
        )

    async def wait_review(self, n: int | None = None, timeout: float = 30) -> list[dict[str, Any]]:
        """Wait until approval cards are shown (``n`` of them if given); returns the cards."""
        return await self.wait_for(
            lambda c: c.review.get("cards") if c.review.get("cards") and (
                n is None or len(c.review["cards"]) == n
            ) and c.chat.get("status") == "review" else None,
            timeout=timeout,
            what=f"{n or 'some'} approval card(s)",
        )

    async def round_trip(self, timeout: float = 20) -> None:
        """Return once the server has processed every event this tab sent before the call.

        Reflex runs a tab's events one at a time, in order. This sends two cheap ones (open, then
        close the phone menu, which no test reads) and waits for their deltas: when the second
        arrives, everything sent before it has been handled and its changes have been sent.
        """
        for value in (True, False):
            mark = self.mark()
            await self.call("MenuState.set_open", value=value)
            await self.wait_for(
                lambda c, m=mark, v=value: c.seen_since(m, "MenuState", "open", lambda x: x is v),
                timeout=timeout,
                what=f"the round trip's MenuState.open={value}",
            )

    async def settle(self) -> None:
        """Wait for a server round trip (for asserting that something did NOT change)."""
        await self.round_trip()


async def open_client(url: str, *, token: str | None = None, browser_id: str | None = None, reviewer: str = "",
                      session: str | None = None) -> WsClient:
    """Connect a new ``WsClient`` (remember to ``await client.close()``)."""
    return await WsClient(url, token=token, browser_id=browser_id, reviewer=reviewer, session=session).connect()
