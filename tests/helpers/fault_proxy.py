"""A loopback HTTP proxy in front of a deployment that can answer some requests with an error instead.

``FaultProxy(target).start()`` serves on 127.0.0.1 (its ``url``) and forwards every request to
``target`` (streams too, chunk by chunk), unless ``fail`` names it: ``fail = ("POST", "/runs/stream",
503)`` answers each POST whose path ends with ``/runs/stream`` with HTTP 503 (the server never sees it),
and counts it in ``failed``. ``hold("POST", "/runs/stream")`` keeps each matching request (read whole)
until the test sets the ``Hold``'s ``release``: a slow deployment, by events and not by time. A held
request is forwarded even if its client gave up meanwhile (as a request already on the wire reaches a
slow server), and its answer is then read to the end (the server's run ends). Runs in the test's event
loop (aiohttp).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.helpers.app_server import free_port

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}


@dataclass
class Hold:
    """Requests ``(method, path suffix)`` held until ``release`` is set. ``arrived``: set when one is held
    (``count`` of them); ``forwarded``: set when one of them was answered by the server to the end;
    ``client_gone``: how many of them had lost their client when released. ``drop`` (set before
    ``release``): the released requests are lost on the way instead (answered 504, the server never sees them)."""

    method: str
    suffix: str
    release: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    forwarded: asyncio.Event = field(default_factory=asyncio.Event)
    count: int = 0
    client_gone: int = 0
    drop: bool = False

    def matches(self, request: web.Request) -> bool:
        return request.method == self.method and request.path.endswith(self.suffix)


class FaultProxy:
    """See the module. ``fail``: ``(method, path suffix, status)`` or None (forward everything)."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.port = free_port()
        self.fail: tuple[str, str, int] | None = None
        self.failed = 0
        self.holds: list[Hold] = []
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FaultProxy:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self._client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        return self

    def hold(self, method: str, suffix: str) -> Hold:
        """Hold the requests ``method`` whose path ends with ``suffix`` until the returned ``Hold`` is released."""
        held = Hold(method, suffix)
        self.holds.append(held)
        return held

    async def close(self) -> None:
        for held in self.holds:  # requests still held are lost with the proxy
            held.drop = True
            held.release.set()
        if self._client is not None:
            await self._client.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        if self.fail is not None and request.method == self.fail[0] and request.path.endswith(self.fail[1]):
            self.failed += 1
            return web.json_response({"detail": "injected failure"}, status=self.fail[2])
        assert self._client is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        body: Any = await request.read()
        held = next((h for h in self.holds if h.matches(request)), None)
        if held is not None:
            held.count += 1
            held.arrived.set()
            await held.release.wait()
            held.client_gone += request.transport is None or request.transport.is_closing()
            if held.drop:
                held.forwarded.set()
                return web.json_response({"detail": "lost on the way"}, status=504)
            try:
                return await self._send(request, headers, body)
            finally:
                held.forwarded.set()
        return await self._send(request, headers, body)

    async def _send(self, request: web.Request, headers: dict[str, str], body: Any) -> web.StreamResponse:
        assert self._client is not None
        async with self._client.request(
            request.method, self.target + request.path_qs, headers=headers, data=body or None
        ) as upstream:
            response = web.StreamResponse(
                status=upstream.status, headers={k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
            )
            gone = False
            try:
                await response.prepare(request)
            except (ConnectionError, RuntimeError):
                gone = True
            async for chunk in upstream.content.iter_any():
                if not gone:
                    try:
                        await response.write(chunk)
                    except (ConnectionError, RuntimeError):
                        gone = True  # the client gave up: the server's answer is still read to its end
            if not gone:
                await response.write_eof()
            return response
