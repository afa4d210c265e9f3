"""The websocket's door: what a socket's events carry and may reach before the tab's states see them.

Reflex copies each socket's handshake headers (the ``Cookie`` header included) into the
``router_data`` of every event, and from there into each state it saves (pickles in ``.states/``
for the embedded default, Redis keys with ``REFLEX_REDIS_URL``). ``install_socket_gate`` wraps
Reflex's event namespace once at start so that, for every event:

* the ``Cookie`` header is replaced, before any state sees it, by ``hitl_session_sha256=<hex>``:
  the SHA-256 of the session cookie, which is what the database keeps (``auth.cookie.session_key`` reads it;
  ``auth.resolve_session_hash`` resolves it). A raw session token is never saved with a tab.
* a socket without a valid session reaches only the sign-in pages' state (``AuthState``), the
  phone menu's open/closed flag (``MenuState``) and Reflex's own hydration states; any other event
  is refused and the tab is sent to /sign-in (a tab whose session ended is emptied first, as its
  handlers would).
  Validity is re-read at most every ``SESSION_RECHECK_S`` per socket; every handler still
  re-reads the session itself (``SessionState._require_principal``).
* client-storage values sent at hydration (``hitl_browser_id``, ``hitl_reviewer``) longer than
  ``CLIENT_VALUE_MAX_CHARS`` are dropped (the state keeps its default, as for a first visit).
"""

# Tested by: tests/integration/ui/test_socket_gate_ws.py, tests/integration/ui/test_secrets_at_rest_ws.py

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import reflex as rx
from reflex.event import fix_events
from reflex.state import FrontendEventExceptionState, OnLoadInternalState, State, StateUpdate, UpdateVarsInternalState

from hitl_app.auth import resolve_session_hash
from hitl_app.auth.cookie import SESSION_KEY_COOKIE, session_key, session_token_from_cookie_header
from hitl_app.auth.tokens import hash_token
from hitl_app.runtime import get_runtime
from hitl_app.ui.state.auth import AuthState
from hitl_app.ui.state.chat import ChatState, signed_out
from hitl_app.ui.state.menu import MenuState
from hitl_app.ui.state.session import SessionState, signed_in

log = logging.getLogger("hitl_app.ui")

CLIENT_VALUE_MAX_CHARS = 256
"""Longest client-storage value (JSON text) taken from a browser at hydration (a browser id is 36)."""
CLIENT_VALUES_MAX = 16
"""Most client-storage values taken from one hydration event."""
SESSION_RECHECK_S = 5.0
"""Seconds a socket's "has a valid session" answer is reused by the gate."""


def _open_states(also: tuple[type[rx.State], ...]) -> tuple[str, ...]:
    """Full names of the states a socket without a session may send events to."""
    states: tuple[type[rx.State], ...] = (
        State, UpdateVarsInternalState, OnLoadInternalState, FrontendEventExceptionState, AuthState, MenuState, *also,
    )
    return tuple(s.get_full_name() for s in states)


class _Gate:
    """The wrapper around one ``EventNamespace`` (see the module docstring)."""

    def __init__(self, namespace: Any, also_open: tuple[type[rx.State], ...]) -> None:
        self.ns = namespace
        self.open = _open_states(also_open)
        self.checked: dict[str, tuple[float, bool]] = {}  # sid -> (monotonic time, has a session)
        self.rewritten: set[str] = set()  # sids whose Cookie header the gate has replaced
        self.on_event: Callable[[str, Any], Awaitable[Any]] = namespace.on_event
        self.on_disconnect: Callable[[str], Any] = namespace.on_disconnect

    def _router(self, sid: str) -> dict[str, Any] | None:
        static = self.ns._static_router_data.get(sid)
        if static is None and self.ns.app.sio is not None:
            environ = self.ns.app.sio.get_environ(sid, self.ns.namespace)
            if environ is not None:
                static = self.ns._static_router_data[sid] = self.ns._build_static_router_data(sid, environ)
                self.rewritten.discard(sid)  # a fresh copy of the handshake's headers
        return static

    def _key(self, sid: str) -> str:
        """The socket's session key; the raw ``Cookie`` header is replaced by it on first sight."""
        static = self._router(sid)
        headers = static.get("headers") if static else None
        if not isinstance(headers, dict):
            return ""

        if sid not in self.rewritten:  # only the handshake's own hitl_session counts, never a sent hash
            token = session_token_from_cookie_header(str(headers.get("cookie") or ""))
            headers["cookie"] = f"{SESSION_KEY_COOKIE}={hash_token(token)}" if token else ""
            self.rewritten.add(sid)
        return session_key(headers["cookie"])

    async def _signed_in(self, sid: str) -> bool:
        key = self._key(sid)
        seen = self.checked.get(sid)
        if seen is not None and time.monotonic() - seen[0] < SESSION_RECHECK_S:
            return seen[1]
        who = await resolve_session_hash(engine=get_runtime().engines.async_, token_hash=key) if key else None
        ok = who is not None and not who.must_change_password
        self.checked[sid] = (time.monotonic(), ok)
        return ok

    async def event(self, sid: str, data: Any) -> Any:
        token = self.ns.sid_to_token.get(sid)
        if token is None or not isinstance(data, dict):
            return await self.on_event(sid, data)
        name = data.get("name")
        state = name.rpartition(".")[0] if isinstance(name, str) else ""
        if state not in self.open and not await self._signed_in(sid):
            log.info("refused an event of a socket without a session: %.100r", name)
            if self._key(sid):  # a session that ended (signed out, expired, disabled): the tab is emptied
                async with self.ns.app.modify_state(rx.BaseStateToken(ident=token, cls=ChatState)) as root:
                    await signed_in(await root.get_state(SessionState))  # None now: the user menu is emptied
                    await signed_out(await root.get_state(ChatState))
            redirect = fix_events([rx.redirect("/sign-in")], token)
            await self.ns.emit_update(StateUpdate(events=redirect, final=True), token)
            return None
        self._key(sid)  # the open states' events carry no raw cookie either
        _bound_client_values(data)
        return await self.on_event(sid, data)

    def disconnect(self, sid: str) -> Any:
        self.checked.pop(sid, None)
        self.rewritten.discard(sid)
        return self.on_disconnect(sid)


def _bound_client_values(data: dict[str, Any]) -> None:
    """Drop over-long client-storage values from a hydration event's ``vars`` (in place)."""
    payload = data.get("payload")
    values = payload.get("vars") if isinstance(payload, dict) else None
    if not isinstance(payload, dict) or not isinstance(values, dict):
        return
    kept = {k: v for k, v in list(values.items())[:CLIENT_VALUES_MAX]
            if isinstance(k, str) and len(k) <= 300 and isinstance(v, str | int | float | bool | None)
            and len(str(v)) <= CLIENT_VALUE_MAX_CHARS}
    if len(kept) != len(values):
        payload["vars"] = kept


def install_socket_gate(namespace: Any, also_open: tuple[type[rx.State], ...] = ()) -> None:
    """Wrap ``namespace`` (Reflex's ``App.event_namespace``) with the gate; once, before it serves.
    ``also_open``: more states a socket without a session may use (the test-only pages' states,
    under ``HITL_TEST_HOOKS=1``).

    Raises:
        RuntimeError: ``namespace`` is None (Reflex made no event namespace).
    """
    if namespace is None:
        raise RuntimeError("the websocket has no event namespace to guard")
    if getattr(namespace, "_hitl_gate", None) is not None:
        return
    gate = _Gate(namespace, also_open)
    namespace._hitl_gate = gate
    namespace.on_event = gate.event
    namespace.on_disconnect = gate.disconnect
