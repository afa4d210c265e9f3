"""Live MCP sessions to one server, kept for the app's life (official ``mcp`` SDK sessions).

``ServerSessions`` keeps the sessions to one server: a call takes an idle session (checked with a
ping first: a stdio process that died while idle is noticed before the call is sent, not by the
call), or opens one when none is idle, and gives it back after. So one session serves the usual
one-call-at-a-time traffic and its stdio process is started once, not per call; calls that overlap
(two threads at once) get a second session rather than waiting. A session serves one call at a
time because a server's question (elicitation) is answered inside the session's receive loop, so
the question is known to belong to the call running on it.

A session whose call failed or was abandoned (a transport error, the time limit, a question that
paused the run) is closed, never reused: for stdio the process's stdin is closed and it is ended
(the SDK's shutdown: wait, SIGTERM, SIGKILL), and the next call starts it afresh. ``aclose`` closes
them all at shutdown, so no child process outlives the app.

Sessions belong to the event loop that opened them (their tasks run there). A call from another
running loop (a graph run in another thread) is run on that loop and awaited; when that loop is
gone the sessions are dropped and new ones are opened on the caller's loop.
"""

# Tested by: tests/integration/agent/test_mcp_sessions.py

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import IO, Any

from langchain_mcp_adapters.sessions import create_session
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, ElicitResult, Tool

from hitl_app.agent.mcp.config import McpServer

log = logging.getLogger("hitl_app")

Asker = Callable[[Any], Awaitable[ElicitResult]]
"""Answers one question (the ``ElicitRequestParams``) of the call that runs on a session."""

PING_S = 5.0
"""Longest wait for an idle session's ping before a call (a dead one is closed and replaced)."""

CLOSE_S = 10.0
"""Longest wait for one session to close (stdio: the SDK waits 2 s, then SIGTERM, then SIGKILL)."""


@dataclass(eq=False)
class _Live:
    """One open session: its keeper task holds the SDK's context managers open until ``closing``."""

    closing: asyncio.Event = field(default_factory=asyncio.Event)
    session: ClientSession | None = None
    task: asyncio.Task[None] | None = None
    stderr: IO[str] | None = None
    asker: Asker | None = None

    async def answer(self, context: Any, params: Any) -> ElicitResult:  # noqa: ARG002 - the SDK's signature
        """The session's elicitation callback: the running call's asker answers; none declines."""
        if self.asker is None:
            return ElicitResult(action="decline")
        return await self.asker(params)

    def last_stderr(self) -> str:
        """The last non-empty line the stdio process wrote to stderr ("" for none or HTTP)."""
        if self.stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            lines = [line.strip() for line in self.stderr.read()[-8192:].splitlines() if line.strip()]
            return lines[-1] if lines else ""
        return ""


class SessionFailed(Exception):
    """A session failed: ``cause`` is the SDK's error, ``stderr`` the stdio process's last stderr
    line ("" when none), ``during_call``: False when the session could not be opened at all."""

    def __init__(self, cause: BaseException, stderr: str, *, during_call: bool) -> None:
        super().__init__(str(cause))
        self.cause, self.stderr, self.during_call = cause, stderr, during_call


class ServerSessions:
    """The live sessions to ``server`` (module docstring).

    Args:
        server: the server; ``timeout_s``: the longest wait for a session to open (seconds).
    """

    def __init__(self, server: McpServer, *, timeout_s: float) -> None:
        self.server, self.timeout_s = server, timeout_s
        self._idle: list[_Live] = []
        self._all: set[_Live] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.opened = 0
        """How many sessions were opened so far (stdio: how many times the process was started)."""

    async def list_tools(self) -> list[Tool]:
        """Every tool of the server (all pages). Raises ``SessionFailed`` or the SDK's error."""

        async def run(session: ClientSession) -> list[Tool]:
            tools: list[Tool] = []
            cursor: str | None = None
            while True:
                page = await session.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.nextCursor
                if not cursor:
                    return tools

        return await self._on_owner(self._with_session(run, None))

    async def call_tool(self, name: str, args: dict[str, Any], asker: Asker | None) -> CallToolResult:
        """Call tool ``name`` with ``args`` on a live session; ``asker`` answers the server's
        questions during the call. Raises ``SessionFailed`` (no session could be opened) or the
        SDK's error for the call (the session is then closed and replaced by the next call)."""
        return await self._on_owner(self._with_session(lambda s: s.call_tool(name, args), asker))

    async def aclose(self) -> None:
        """Close every session (stdio: end every process). Safe to call twice."""
        lives, self._idle = list(self._all), []
        if self._loop is not None and self._loop is not _running() and self._loop.is_running():
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._close_all(lives), self._loop))
        elif self._loop is None or self._loop is _running():
            await self._close_all(lives)

    async def _close_all(self, lives: list[_Live]) -> None:
        await asyncio.gather(*(self._retire(live) for live in lives))

    async def _on_owner(self, coro: Awaitable[Any]) -> Any:
        loop = _running()
        if self._loop is None or self._loop.is_closed() or not self._loop.is_running():
            self._loop, self._idle, self._all = loop, [], set()  # a loop that is gone took its sessions with it
        if self._loop is loop:
            return await coro
        future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        return await asyncio.wrap_future(future)

    async def _with_session(self, work: Callable[[ClientSession], Awaitable[Any]], asker: Asker | None) -> Any:
        live = await self._take()
        live.asker = asker
        try:
            assert live.session is not None
            result = await work(live.session)
        except Exception as exc:
            stderr = await asyncio.shield(self._retire(live))  # a failed call's session is never reused
            raise SessionFailed(exc, stderr, during_call=True) from exc
        except BaseException:
            await asyncio.shield(self._retire(live))  # nor an abandoned one (time limit, a paused run)
            raise
        live.asker = None
        self._idle.append(live)
        return result

    async def _take(self) -> _Live:
        while self._idle:
            live = self._idle.pop()
            if live.task is not None and not live.task.done() and live.session is not None:
                try:
                    await asyncio.wait_for(live.session.send_ping(), min(PING_S, self.timeout_s))
                    return live
                except Exception:  # noqa: BLE001 - a dead session (the process exited while idle)
                    log.info("MCP server %s: an idle session stopped answering; starting a new one", self.server.name)
            await self._retire(live)
        return await self._open()

    async def _open(self) -> _Live:
        live = _Live()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        live.task = asyncio.ensure_future(self._keep(live, ready))
        self._all.add(live)
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.timeout_s)
        except BaseException as exc:
            stderr = await asyncio.shield(self._retire(live))
            if ready.done() and not ready.cancelled():
                ready.exception()  # seen: not "never retrieved" when the wait ended first
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise SessionFailed(exc, stderr, during_call=False) from exc
        self.opened += 1
        return live

    async def _keep(self, live: _Live, ready: asyncio.Future[None]) -> None:
        try:
            async with self._transport(live) as session:
                await session.initialize()
                live.session = session
                if not ready.done():
                    ready.set_result(None)
                await live.closing.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the opener; a later failure only ends it
            if not ready.done():
                if isinstance(exc, Exception):
                    ready.set_exception(exc)
                else:
                    ready.cancel()
        finally:
            live.session = None

    @contextlib.asynccontextmanager
    async def _transport(self, live: _Live) -> AsyncIterator[ClientSession]:
        server = self.server
        if server.transport == "stdio":
            live.stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in _retire
            params = StdioServerParameters(command=server.command, args=list(server.args), env=dict(server.env) or None,
                                           cwd=server.cwd)
            async with stdio_client(params, errlog=live.stderr) as (read, write), \
                    ClientSession(read, write, elicitation_callback=live.answer) as session:
                yield session
        else:
            connection: Any = {**server.connection(), "session_kwargs": {"elicitation_callback": live.answer}}
            async with create_session(connection) as session:
                yield session

    async def _retire(self, live: _Live) -> str:
        """Close ``live`` (never reused again), wait for its keeper (at most ``CLOSE_S``) and return
        the stdio process's last stderr line ("" for none)."""
        self._all.discard(live)
        with contextlib.suppress(ValueError):
            self._idle.remove(live)
        live.closing.set()
        if live.task is not None and live.session is None:
            live.task.cancel()  # still opening (a server that hangs at start): nothing to close politely
        if live.task is not None and not live.task.done():
            done, _ = await asyncio.wait({live.task}, timeout=CLOSE_S)
            if not done:
                live.task.cancel()
                await asyncio.wait({live.task}, timeout=CLOSE_S)
        last = live.last_stderr()
        if live.stderr is not None:
            live.stderr.close()
        return last


def _running() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()
