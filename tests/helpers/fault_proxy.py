"""A loopback HTTP proxy in front of a deployment that can answer some requests with an error instead.

``FaultProxy(target).start()`` serves on 127.0.0.1 (its ``url``) and forwards every request to
``target`` (streams too, chunk by chunk), unless ``fail`` names it: ``fail = ("POST", "/runs/stream",
503)`` answers each POST whose path ends with ``/runs/stream`` with HTTP 503 (the server never sees it),
and counts it in ``failed``. Runs in the test's event loop (aiohttp).
"""

from __future__ import annotations

from typing import Any

import aiohttp
from aiohttp import web

from tests.helpers.app_server import free_port

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}


class FaultProxy:
    """See the module. ``fail``: ``(method, path suffix, status)`` or None (forward everything)."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.port = free_port()
        self.fail: tuple[str, str, int] | None = None
        self.failed = 0
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

    async def close(self) -> None:
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
        async with self._client.request(
            request.method, self.target + request.path_qs, headers=headers, data=body or None
        ) as upstream:
            response = web.StreamResponse(
                status=upstream.status, headers={k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
            )
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
