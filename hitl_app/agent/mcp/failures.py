"""What went wrong with an MCP server, in one line a person can act on (QA F10).

``describe_failure`` turns the SDK's and the transport's exceptions into the sentence shown on the
Workspace MCP tab and in the thread's tool row: "could not start: command not found: npx",
"the process exited during start-up; its last stderr line: ...", "no answer within 20 s",
"HTTP 401 Unauthorized from http://host/mcp", "could not connect to http://host/mcp",
"its process exited or closed its output" (during a call). Secrets of the server (``${VAR}``
values, env and header values) are masked in every line (``McpServer.masked``).

The exit code of a stdio process is not given: the SDK's stdio transport (``mcp.client.stdio``)
keeps its process to itself; its stderr is kept (``sessions.py``) and its last line is shown.
"""

# Tested by: tests/unit/agent/test_mcp_config.py, tests/integration/agent/test_mcp_sessions.py

from __future__ import annotations

from pathlib import Path

import httpx
from mcp.shared.exceptions import McpError

from hitl_app.agent.mcp.config import McpServer
from hitl_app.agent.mcp.sessions import SessionFailed

MAX_CHARS = 300
"""The longest failure line."""


def describe_failure(exc: BaseException, server: McpServer, *, timeout_s: float | None = None) -> str:
    """One line for ``exc`` from ``server`` (module docstring), at most ``MAX_CHARS``, secrets masked.

    Args:
        exc: the failure (a ``SessionFailed``, an exception group: its first leaf, or any error).
        server: the server (its command or URL named, its secrets masked).
        timeout_s: the time limit the failure may have hit (named in a timeout's line).
    """
    stderr, during_call = "", True
    if isinstance(exc, SessionFailed):
        stderr, during_call, exc = exc.stderr, exc.during_call, exc.cause
    exc = _leaf(exc)
    text = _sentence(exc, server, during_call=during_call, timeout_s=timeout_s)
    if stderr:
        text += f"; its last stderr line: {stderr}"
    return " ".join(server.masked(text).split())[:MAX_CHARS]


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpError | RuntimeError) and isinstance(exc.__cause__, httpx.HTTPError):
        return exc.__cause__
    return exc


def _sentence(exc: BaseException, server: McpServer, *, during_call: bool, timeout_s: float | None) -> str:
    where = server.describe().removeprefix("http: ")
    start = "" if during_call else "could not start: "
    if isinstance(exc, FileNotFoundError) and server.transport == "stdio":
        return f"could not start: command not found: {Path(server.command).name}"
    if isinstance(exc, PermissionError) and server.transport == "stdio":
        return f"could not start: {Path(server.command).name} is not executable"
    if isinstance(exc, TimeoutError):
        limit = f" {timeout_s:g} s" if timeout_s else " the time limit"
        return f"{start}no answer within{limit}"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"{start}HTTP {exc.response.status_code} {exc.response.reason_phrase} from {where}".rstrip()
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return f"{start}could not connect to {where}"
    if isinstance(exc, httpx.HTTPError):
        return f"{start}{type(exc).__name__} from {where}: {exc}"
    if "Connection closed" in str(exc) or isinstance(exc, EOFError | BrokenPipeError | ConnectionError):
        if server.transport == "stdio":
            return ("its process exited or closed its output" if during_call
                    else "the process exited during start-up (it closed its output)")
        return f"{start}the server closed the connection"
    if isinstance(exc, McpError):
        return f"{start}the server answered with an error: {exc.error.message}"
    return f"{start}{type(exc).__name__}: {exc}" if str(exc) else f"{start}{type(exc).__name__}"
