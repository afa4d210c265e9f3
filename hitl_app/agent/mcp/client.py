"""MCP servers' tools for the built-in agent, through ``langchain-mcp-adapters`` and the ``mcp`` SDK.

``connect_servers`` lists each server's tools at start-up (all servers at once, each within the
time limit; a server that fails is reported, the others are used) and turns them into LangChain
tools named ``<server>__<tool>`` (characters other than letters, digits, ``_`` and ``-`` become
``_``; a name longer than 64 characters or clashing after that is left out and reported).

Each server's sessions live for the app's life (``sessions.ServerSessions``: a stdio process is
started once and reused by every call, restarted after it dies; ``McpServers.aclose`` ends them at
shutdown). A server that did not answer at start-up is tried again in the background with a
growing pause (``RETRY_S``) so the Workspace MCP tab shows when it is back; its tools join the
agent at the next start (the agent's tool set is fixed when the graph is built).

``CallGuard``, an adapter interceptor around every call, keeps failures plain: past ``timeout_s``
the call is stopped, a server that does not start, crashes or drops the connection, or returns an
error, gives an error tool message naming the server and what happened (``failures.py``); a
result longer than ``max_result_chars`` is cut with a note; non-text content is named, not passed
on. The thread stays usable, the other servers are not touched, and ``McpServers`` keeps each
server's status for the Workspace panel. A server's question during a call becomes a card
(``elicit.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool
from langchain_mcp_adapters.interceptors import MCPToolCallRequest, MCPToolCallResult
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
from mcp.types import CallToolResult, TextContent, Tool

from hitl_app.agent.mcp.config import McpServer
from hitl_app.agent.mcp.elicit import ElicitationBridge, current_asker
from hitl_app.agent.mcp.failures import describe_failure
from hitl_app.agent.mcp.policy import McpToolInfo
from hitl_app.agent.mcp.sessions import ServerSessions, SessionFailed
from hitl_app.review.shown import shown_controls

log = logging.getLogger("hitl_app")

MAX_TOOL_NAME = 64
"""The longest tool name model providers accept (OpenAI: 64)."""

RETRY_S = (5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Pauses (seconds) between the tries to reach a server that was down at start-up; the last repeats."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class ServerStatus:
    """What the app knows about one server (shown in the Workspace panel).

    Attributes:
        name: the server's name; where: ``McpServer.describe()`` (no secrets).
        connected: its tools were listed at start-up.
        tools: the agent's names of its tools.
        error: why it is not connected (one line), or the last call's failure.
        skipped: tools left out (name too long or clashing), in words.
        sessions: its live sessions (None before connecting).
        retry_at: when a server down at start-up is tried again (``time.time()``; 0: not waiting).
        back: a server down at start-up answered later (its tools join at the next start).
    """

    name: str
    where: str
    connected: bool = False
    tools: tuple[str, ...] = ()
    error: str = ""
    skipped: tuple[str, ...] = ()
    sessions: ServerSessions | None = None
    retry_at: float = 0.0
    back: bool = False

    def live(self) -> str:
        """The server's state now, in words: "running, started 1 time", "restarted 2 times",
        "down since start-up; next try in 25 s", "answering again; its tools join at the next start"."""
        if self.back:
            return "answering again; its tools join the agent at the next start"
        if not self.connected:
            wait = max(0, round(self.retry_at - time.time())) if self.retry_at else 0
            return f"not answering; next try in {wait} s" if self.retry_at else "not connected"
        opened = self.sessions.opened if self.sessions else 0
        if opened <= 1:
            return "running"
        return f"running; started {opened} times (restarted after failures)"


@dataclass
class McpServers:
    """The servers of ``HITL_MCP``: their LangChain tools, what the policy needs of each, the status."""

    tools: list[BaseTool] = field(default_factory=list)
    infos: list[McpToolInfo] = field(default_factory=list)
    statuses: dict[str, ServerStatus] = field(default_factory=dict)
    retrying: asyncio.Task[None] | None = None

    def loaded(self) -> dict[str, list[str]]:
        """Server -> its tools' own names, for the servers that answered."""
        out: dict[str, list[str]] = {s.name: [] for s in self.statuses.values() if s.connected}
        for info in self.infos:
            out.setdefault(info.server, []).append(info.tool)
        return out

    def retry_down(self, timeout_s: float) -> None:
        """Try the servers that were down at start-up again in the background (``RETRY_S``)."""
        down = [s for s in self.statuses.values() if not s.connected and s.sessions is not None]
        if down and self.retrying is None:
            for status in down:
                status.retry_at = time.time() + RETRY_S[0]
            self.retrying = asyncio.ensure_future(_retry(down, timeout_s))

    async def aclose(self) -> None:
        """Stop the retries and close every server's sessions (stdio: end every process)."""
        if self.retrying is not None:
            self.retrying.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.retrying
        await asyncio.gather(*(s.sessions.aclose() for s in self.statuses.values() if s.sessions is not None))


def qualified_name(server: str, tool: str) -> str:
    """``<server>__<tool>`` with unsafe characters of the tool's name replaced by ``_``."""
    return f"{server}__{_UNSAFE.sub('_', tool)}"


async def connect_servers(servers: Sequence[McpServer], *, timeout_s: float, max_result_chars: int) -> McpServers:
    """List every server's tools (at once, each within ``timeout_s``) and wrap them (module docstring).

    Never raises for a server that fails: its status says why, one line, without secrets. The
    caller owns the result's sessions: ``await McpServers.aclose()`` at shutdown.
    """
    out = McpServers()
    pools = [ServerSessions(s, timeout_s=timeout_s) for s in servers]
    results = await asyncio.gather(*(asyncio.wait_for(p.list_tools(), timeout_s) for p in pools),
                                   return_exceptions=True)
    for server, pool, result in zip(servers, pools, results, strict=True):
        status = ServerStatus(server.name, server.describe(), sessions=pool)
        out.statuses[server.name] = status
        if isinstance(result, BaseException):
            status.error = describe_failure(result, server, timeout_s=timeout_s)
            log.warning("MCP server %s not connected: %s", server.name, status.error)
            continue
        status.connected = True
        guard = CallGuard(server, out, timeout_s=timeout_s, max_result_chars=max_result_chars)
        names: list[str] = []
        skipped: list[str] = []
        for mcp_tool in result:
            name = qualified_name(server.name, mcp_tool.name)
            if len(name) > MAX_TOOL_NAME or name in names:
                skipped.append(f"{mcp_tool.name} ({'name too long' if len(name) > MAX_TOOL_NAME else 'name clash'})")
                continue
            tool = _wrap(mcp_tool, pool, server, guard)
            tool.name = name
            names.append(name)
            out.tools.append(tool)
            out.infos.append(_info(tool, server.name, mcp_tool.name))
        status.tools, status.skipped = tuple(names), tuple(skipped)
    return out


class _PooledSession:
    """What the adapter's tool calls (``session.call_tool``): the server's live sessions, with the
    running call's question asker (``elicit.current_asker``)."""

    def __init__(self, pool: ServerSessions) -> None:
        self.pool = pool

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *_: Any, **__: Any) -> CallToolResult:
        return await self.pool.call_tool(name, dict(arguments or {}), current_asker())


def _wrap(mcp_tool: Tool, pool: ServerSessions, server: McpServer, guard: CallGuard) -> BaseTool:
    return convert_mcp_tool_to_langchain_tool(
        _PooledSession(pool), mcp_tool, server_name=server.name,  # type: ignore[arg-type]
        tool_interceptors=[ElicitationBridge(server.name), guard],
    )


async def _retry(down: list[ServerStatus], timeout_s: float) -> None:
    waiting = {s.name: 0 for s in down}
    statuses = {s.name: s for s in down}
    while waiting:
        now = time.time()
        for name, tries in waiting.items():
            statuses[name].retry_at = now + RETRY_S[min(tries, len(RETRY_S) - 1)]
        next_name = min(waiting, key=lambda n: statuses[n].retry_at)
        status = statuses[next_name]
        await asyncio.sleep(max(0.0, status.retry_at - time.time()))
        assert status.sessions is not None
        try:
            await asyncio.wait_for(status.sessions.list_tools(), timeout_s)
        except Exception as exc:  # noqa: BLE001 - any failure: try again later
            status.error = describe_failure(exc, status.sessions.server, timeout_s=timeout_s)
            waiting[next_name] += 1
            continue
        status.back, status.error, status.retry_at = True, "", 0.0
        del waiting[next_name]
        log.info("MCP server %s answers again; its tools join the agent at the next start", next_name)


def _info(tool: BaseTool, server: str, own: str) -> McpToolInfo:
    meta = dict(tool.metadata or {})
    annotations = {k: meta.get(k) for k in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")}
    schema = tool.args_schema if isinstance(tool.args_schema, dict) else {}
    props = schema.get("properties")
    names = frozenset(props) if isinstance(props, dict) else frozenset()
    return McpToolInfo(tool.name, server, own, str(meta.get("title") or own), annotations, names)


class CallGuard:
    """An adapter interceptor (``tool_interceptors``) bounding one server's calls (module docstring)."""

    def __init__(self, server: McpServer, registry: McpServers, *, timeout_s: float, max_result_chars: int) -> None:
        self.server, self.registry = server, registry
        self.timeout_s, self.max_result_chars = timeout_s, max_result_chars

    async def __call__(
        self, request: MCPToolCallRequest, handler: Callable[[MCPToolCallRequest], Awaitable[MCPToolCallResult]]
    ) -> MCPToolCallResult:
        """Call ``handler`` within the time limit; a failure becomes an error result."""
        name = self.server.name
        try:
            result = await asyncio.wait_for(handler(request), self.timeout_s)
        except TimeoutError:
            return self._failed(f"MCP server {name} did not answer within {self.timeout_s:g} s, so the call was "
                                "stopped; it may or may not have done its work. The server is started afresh "
                                "for the next call.")
        except SessionFailed as exc:
            what = describe_failure(exc, self.server, timeout_s=self.timeout_s)
            if exc.during_call:
                return self._failed(f"MCP server {name} failed during the call: {what}. The call may or may not "
                                    "have done its work; the server is started afresh for the next call.")
            return self._failed(f"MCP server {name} {what}.")
        except Exception as exc:  # noqa: BLE001 - any other failure is the server's
            return self._failed(f"MCP server {name} failed during the call: "
                                f"{describe_failure(exc, self.server, timeout_s=self.timeout_s)}")
        if isinstance(result, CallToolResult):
            self._set_error("")
            return cut_result(result, self.max_result_chars)
        return result

    def _failed(self, text: str) -> CallToolResult:
        self._set_error(text)
        log.warning("%s", text)
        return CallToolResult(content=[TextContent(type="text", text=text)], isError=True)

    def _set_error(self, text: str) -> None:
        status = self.registry.statuses.get(self.server.name)
        if status is not None:
            status.error = text


def cut_result(result: CallToolResult, max_chars: int) -> CallToolResult:
    """``result`` as text only, control characters shown (``shown_controls``), cut to ``max_chars``
    with a note saying how much there was.

    Text and embedded text resources are kept; images, audio and other blocks are named
    (``[image/png content left out]``). ``structuredContent`` longer than ``max_chars`` as JSON is
    dropped (the text says so).
    """
    parts: list[str] = []
    for block in result.content:
        text = getattr(block, "text", None) or getattr(getattr(block, "resource", None), "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"[{getattr(block, 'mimeType', None) or block.type} content left out]")
    text = shown_controls("\n".join(parts))
    if len(text) > max_chars:
        text = f"{text[:max_chars]}\n[cut: the result was {len(text):,} characters; the first {max_chars:,} are shown]"
    structured = result.structuredContent
    if structured is not None and len(json.dumps(structured, default=str)) > max_chars:
        structured, text = None, text + "\n[structured content left out: too large]"
    return replace_result(result, text, structured)




def replace_result(result: CallToolResult, text: str, structured: dict[str, Any] | None) -> CallToolResult:
    """A copy of ``result`` with one text block and ``structuredContent``."""
    return result.model_copy(update={"content": [TextContent(type="text", text=text)], "structuredContent": structured})
