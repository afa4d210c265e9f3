"""A minimal Reflex client over one websocket: what a browser tab sends, and every byte it gets back.

Speaks engine.io 4 / socket.io 5 by hand on an ``aiohttp`` websocket (the same frames the
browser's socket.io client exchanges with Reflex 0.10; checked against a Chromium capture), so
every received byte is counted exactly. Like Chromium, the client offers permessage-deflate
(``compress=15``, context takeover); whether the server accepts it is in ``self.compressed``.
The client answers the server's websocket PING frames (aiohttp ``autoping``): uvicorn closes a
socket with 1011 when a ping is not answered within 20 s, so without it every tab died after ~40 s.
``bytes_received`` = the bytes read from the TCP socket after the handshake (websocket frame
headers + payloads as sent, i.e. compressed when deflate was negotiated), counted by wrapping the
connection protocol's ``data_received``; ``payload_bytes_received`` = the sum of the decoded TEXT
frames' UTF-8 lengths (what the app sent before compression).

Events sent: ``hydrate_and_load`` for ``/thread/<uuid>`` (in the CONNECT auth, as the browser
does; that runs the page's on_load ``ChatState.load_thread``), ``ChatState.send`` with form data
``{"text": ...}``, ``ChatState.stop``, ``ReviewState.approve_all``. Received state deltas are
folded into ``self.state`` (state name -> var -> value) and the live reply text is rebuilt from
either stream shape (the earlier ``stream_chunks``+``stream_tail`` vars, or the append-only
``hitlLive([key, seq, text(, 1 = reset)])`` script events) so that each word's arrival time is known.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import aiohttp

NS = "/_event"
ROOT = "reflex___state____state"
SESSION = f"{ROOT}.hitl_app___ui___state___session____session_state"
CHAT = f"{SESSION}.hitl_app___ui___state___chat____chat_state"
REVIEW = f"{SESSION}.hitl_app___ui___state___review____review_state"
SUFFIX = "_rx_state_"


async def sign_in(base_url: str, key: str) -> str:
    """A session token for a member account named after ``key`` on the bench's server at ``base_url``.

    Every page and event needs a signed-in account; the account is created in the server's own
    database and signed in through its real ``/auth`` route (``AppServer.asign_in``, the same path
    the tests take). Raises KeyError if ``base_url`` is not a server this process started.
    """
    from tests.helpers.app_server import SERVERS

    return (await SERVERS[base_url.rstrip("/")].asign_in(key)).token


class ReflexClient:
    """One simulated browser tab on ``base_url`` (``http://127.0.0.1:PORT``).

    Attributes:
        bytes_received: websocket payload bytes received since ``reset_counters()``.
        frames_received: frames received since ``reset_counters()``.
        word_times: ``time.time()`` at which each word of the current live reply was first seen.
        state: merged deltas, ``{state_name: {var: value}}`` (var names without the suffix).
    """

    def __init__(
        self, base_url: str, browser_id: str | None = None, version: str = "0.10.1", session_token: str | None = None
    ):
        self.base_url = base_url.rstrip("/")
        self.session_token = session_token
        self.token = str(uuid.uuid4())
        self.browser_id = browser_id or str(uuid.uuid4())
        self.version = version
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.state: dict[str, dict[str, Any]] = {}
        self.bytes_received = 0
        self.payload_bytes_received = 0
        self.frames_received = 0
        self.compressed = False
        self.word_times: list[float] = []
        self.live_text = ""
        self._live_seq = -1
        self._live_key: str | None = None
        self._changed = asyncio.Event()
        self._reader: asyncio.Task | None = None
        self.thread_id = ""
        self.errors: list[str] = []

    # ------------------------------------------------------------ connection
    async def connect(self, thread_id: str) -> None:
        """Open the socket and hydrate ``/thread/<thread_id>`` (runs on_load); waits until hydrated."""
        self.thread_id = thread_id
        if self.session_token is None:
            self.session_token = await sign_in(self.base_url, self.browser_id)
        self.session = aiohttp.ClientSession()
        url = self.base_url.replace("http", "ws", 1) + f"/_event/?token={self.token}&EIO=4&transport=websocket"
        self.ws = await self.session.ws_connect(
            url, protocols=[self.version], compress=15, max_msg_size=0, autoping=True,
            headers={"Cookie": f"hitl_session={self.session_token}"},
        )
        self.compressed = bool(self.ws.compress)
        proto = self.ws._conn.protocol  # aiohttp's ResponseHandler: every TCP read after the upgrade
        inner = proto.data_received

        def counting(data: bytes) -> None:
            self.bytes_received += len(data)
            inner(data)

        proto.data_received = counting
        first = await self.ws.receive_str()
        if not first.startswith("0"):
            raise RuntimeError(f"unexpected engine.io open: {first[:100]}")
        # the page sends its localStorage (the browser id) with the hydrate; a tab without one is
        # asked for it by the server (a JS call this client does not run)
        stored = {f"{SESSION}.browser_id_rx_state_": self.browser_id, f"{SESSION}.reviewer_rx_state_": ""}
        hydrate = self._event(f"{ROOT}.hydrate_and_load", {"vars": stored})
        await self.ws.send_str(f"40{NS}," + json.dumps({"event": hydrate}))
        self._reader = asyncio.create_task(self._read())
        await self.wait_for(lambda: self.get(ROOT, "is_hydrated") is True, timeout=30)

    def _event(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        path = f"/thread/{self.thread_id}"
        return {
            "name": name, "payload": payload,
            "router_data": {"pathname": path, "asPath": path, "query": {"thread_id": self.thread_id}}
        }

    async def emit(self, name: str, payload: dict[str, Any]) -> float:
        """Send one event; returns the ``time.time()`` just before sending."""
        assert self.ws is not None
        t = time.time()
        await self.ws.send_str(f"42{NS}," + json.dumps(["event", self._event(name, payload)]))
        return t

    async def send(self, text: str) -> float:
        """``ChatState.send`` with form data ``{"text": text}`` (as the composer's form submits it)."""
        self.reset_live()
        return await self.emit(f"{CHAT}.send", {"form_data": {"__reflex_form_data__": [["text", text]]}})

    async def close(self) -> None:
        """Close the socket and the HTTP session."""
        if self._reader:
            self._reader.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()

    # ------------------------------------------------------------ receiving
    def reset_counters(self) -> None:
        """Zero the byte and frame counters."""
        self.bytes_received = 0
        self.payload_bytes_received = 0
        self.frames_received = 0

    def reset_live(self) -> None:
        """Forget the rebuilt live text (before a new reply)."""
        self.word_times = []
        self.live_text = ""
        self._live_seq = -1
        self._live_key = None

    def get(self, state: str, var: str, default: Any = None) -> Any:
        """The last received value of ``state.var``."""
        return self.state.get(state, {}).get(var, default)

    async def _read(self) -> None:
        assert self.ws is not None
        try:
            async for msg in self.ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                        break
                    continue
                data: str = msg.data
                now = time.time()
                self.payload_bytes_received += len(data.encode())
                self.frames_received += 1
                if data == "2":
                    await self.ws.send_str("3")
                    continue
                if data.startswith(f"42{NS},"):
                    try:
                        name, body = json.loads(data[len(NS) + 3 :])[:2]
                    except ValueError:
                        self.errors.append(f"bad frame {data[:80]}")
                        continue
                    if name == "event":
                        self._apply(body.get("delta") or {}, now)
                        for ev in body.get("events") or []:
                            if ev.get("name") == "_call_script":
                                self._script(str((ev.get("payload") or {}).get("javascript_code", "")), now)
                elif data.startswith(f"44{NS}"):
                    self.errors.append(f"connect error {data[:200]}")
                self._changed.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded as a client error
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self._changed.set()

    def _script(self, code: str, now: float) -> None:
        """An append-only live delta: ``hitlLive([key, seq, text(, 1 = reset)])`` (hitl_app.ui.state.live.live_script)."""
        if not code.startswith("hitlLive(") or not code.endswith(")"):
            return
        args = json.loads(code[len("hitlLive(") : -1])
        key, seq, piece = args[:3]
        reset = bool(args[3]) if len(args) > 3 else False
        if reset:
            self._live_key, self._live_seq = key, seq
            if not piece:
                return  # a new, empty bubble (after a message boundary)
            text = piece
        elif key == getattr(self, "_live_key", None) and seq == self._live_seq + 1:
            self._live_seq = seq
            text = self.live_text + piece
        else:
            if key == getattr(self, "_live_key", None):
                self.errors.append(f"live delta out of order: {self._live_seq} -> {seq}")
            return
        self._grow(text, now)

    def _grow(self, text: str, now: float) -> None:
        if len(text) > len(self.live_text):
            words = len(text.split())
            while len(self.word_times) < words:
                self.word_times.append(now)
            self.live_text = text

    def _apply(self, delta: dict[str, Any], now: float) -> None:
        for state, vars_ in delta.items():
            target = self.state.setdefault(state, {})
            for key, value in vars_.items():
                target[key.removesuffix(SUFFIX)] = value
        chat = delta.get(CHAT)
        if not chat:
            return
        if any(k.removesuffix(SUFFIX) in ("stream_tail", "stream_chunks") for k in chat):
            # the earlier shape: frozen chunks + a tail, each flush resending the tail
            self._grow("".join(self.get(CHAT, "stream_chunks") or []) + (self.get(CHAT, "stream_tail") or ""), now)

    async def wait_for(self, cond, timeout: float) -> None:
        """Wait until ``cond()`` is true (re-checked on every received frame)."""
        deadline = time.monotonic() + timeout
        while not cond():
            if self.ws is None or self.ws.closed:
                raise RuntimeError(f"socket closed (code {self.ws.close_code if self.ws else None})")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("condition not met in time")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass

    def messages(self) -> list[dict[str, Any]]:
        """The committed messages (``ChatState.messages`` rows)."""
        return self.get(CHAT, "messages") or []

    def streaming(self) -> bool:
        """``ChatState.streaming``."""
        return bool(self.get(CHAT, "streaming"))
