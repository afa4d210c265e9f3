"""The ``HITL_MCP`` file: MCP servers in the format Claude Desktop, Cursor and VS Code keep.

::

    {"mcpServers": {
        "notes":  {"command": ".venv/bin/python", "args": ["examples/mcp/notes_server.py"],
                   "env": {"NOTES_FILE": "${HITL_DATA_DIR:-data}/mcp-notes.json"}},
        "github": {"url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
    }}

A server with ``command`` is started over stdio (``args``, ``env``, ``cwd`` optional); one with
``url`` is reached over Streamable HTTP (``headers`` optional). VS Code's top-level ``"servers"``
and ``"type": "stdio" | "http"`` are read too; ``"disabled": true`` leaves a server out. ``${VAR}``,
``${VAR:-default}`` and ``${env:VAR}`` in any string are taken from the environment when the file is
read, so secrets stay out of the file; ``McpServer.describe`` never shows env or header values.

A server's name becomes its tools' prefix (``notes__search_notes``): 1-32 letters, digits, ``-``
or ``_``, without ``__``, so two servers' tools never clash and none shadows a built-in tool.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from hitl_app.errors import StartupError

SERVER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$")
"""A server name: the prefix of its tools' names (no ``__``, which separates server and tool)."""

_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STDIO_KEYS = {"command", "args", "env", "cwd", "type", "disabled"}
_HTTP_KEYS = {"url", "headers", "type", "disabled"}


class McpConfigError(StartupError):
    """A ``HITL_MCP`` file that cannot be used; the message names the file and the line or key."""


@dataclass(frozen=True)
class McpServer:
    """One MCP server of the file, its ``${VAR}`` already filled from the environment.

    Attributes:
        name: the server's name (its tools' prefix).
        transport: ``"stdio"`` (``command`` started as a child process) or ``"streamable_http"``.
        command, args, env, cwd: the stdio process (``env`` is added to a minimal environment).
        url, headers: the Streamable HTTP endpoint.
        secrets: every value taken from the environment by a ``${VAR}`` (masked wherever the
            server is described or its failure logged).
    """

    name: str
    transport: Literal["stdio", "streamable_http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()

    def masked(self, text: str) -> str:
        """``text`` with every secret of this server (``${VAR}`` values, env and header values) as ``***``."""
        for secret in sorted({*self.secrets, *self.env.values(), *self.headers.values()}, key=len, reverse=True):
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return text

    def connection(self) -> dict[str, Any]:
        """The ``langchain_mcp_adapters.sessions.Connection`` dict for this server."""
        if self.transport == "stdio":
            conn: dict[str, Any] = {"transport": "stdio", "command": self.command, "args": list(self.args),
                                    "env": dict(self.env) or None}
            if self.cwd:
                conn["cwd"] = self.cwd
            return conn
        return {"transport": "streamable_http", "url": self.url, "headers": dict(self.headers) or None}

    def describe(self) -> str:
        """Where the server is, without secrets: ``"stdio: python notes_server.py"`` or
        ``"http: https://host/path"`` (no query, no user info, no env or header values)."""
        if self.transport == "stdio":
            shown = " ".join([Path(self.command).name, *(Path(a).name if "/" in a else a for a in self.args[:3])])
            return self.masked(f"stdio: {shown[:120]}")
        parts = urlsplit(self.url)
        return self.masked(f"http: {parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}")


def load_mcp_config(path: Path | str, environ: Mapping[str, str] | None = None) -> list[McpServer]:
    """Read the servers of a ``HITL_MCP`` file (format in the module docstring), in file order.

    Raises:
        McpConfigError: unreadable file, invalid JSON (with its line and column), no
            ``mcpServers`` object, a bad server name, unknown keys, wrong types, neither or both of
            ``command`` and ``url``, a URL that is not http(s), an unset ``${VAR}``. The message
            names the file and the key (``mcpServers.github.headers.Authorization``).
    """
    path = Path(path)
    env = os.environ if environ is None else environ
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"HITL_MCP={path}: cannot read the file ({exc.strerror or exc})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    top = "mcpServers" if isinstance(data, dict) and "mcpServers" in data else "servers"
    servers = data.get(top) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{path}: expected {{"mcpServers": {{"<name>": {{...}}}}}} at the top')
    out: list[McpServer] = []
    for name, table in servers.items():
        where = f"{path}: {top}.{name}"
        if not isinstance(name, str) or not SERVER_NAME.match(name):
            raise McpConfigError(
                f"{where}: a server name is 1-32 letters, digits, '-' or '_' (no '__'), starting with a letter or digit"
            )
        if not isinstance(table, dict):
            raise McpConfigError(f"{where}: must be an object")
        if table.get("disabled") is True:
            continue
        secrets: list[str] = []
        server = _server(name, table, where, _Recording(env, secrets))
        out.append(replace(server, secrets=tuple(secrets)))
    return out


class _Recording(dict[str, str]):
    """The environment, remembering each value read (the secrets a server's config took from it)."""

    def __init__(self, env: Mapping[str, str], seen: list[str]) -> None:
        super().__init__(env)
        self.seen = seen

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key, default)
        if isinstance(value, str) and value:
            self.seen.append(value)
        return value


def _server(name: str, table: dict[str, Any], where: str, env: Mapping[str, str]) -> McpServer:
    kind = table.get("type")
    if kind not in (None, "stdio", "http", "streamable-http", "streamableHttp", "streamable_http"):
        raise McpConfigError(f"{where}.type: {kind!r} is not supported; use a command (stdio) or a url (Streamable HTTP)")
    if ("command" in table) == ("url" in table):
        raise McpConfigError(f"{where}: give either \"command\" (stdio) or \"url\" (Streamable HTTP)")
    if "command" in table:
        _known(table, _STDIO_KEYS, where)
        command = _fill(_text(table["command"], f"{where}.command"), f"{where}.command", env)
        args = table.get("args", [])
        if not isinstance(args, list):
            raise McpConfigError(f"{where}.args: must be a list of strings")
        cwd = table.get("cwd")
        return McpServer(
            name, "stdio", command=command,
            args=tuple(_fill(_text(a, f"{where}.args[{i}]"), f"{where}.args[{i}]", env) for i, a in enumerate(args)),
            env=_strings(table.get("env", {}), f"{where}.env", env),
            cwd=_fill(_text(cwd, f"{where}.cwd"), f"{where}.cwd", env) if cwd is not None else None,
        )
    _known(table, _HTTP_KEYS, where)
    url = _fill(_text(table["url"], f"{where}.url"), f"{where}.url", env)
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise McpConfigError(f"{where}.url: must be an http:// or https:// address")
    return McpServer(name, "streamable_http", url=url, headers=_strings(table.get("headers", {}), f"{where}.headers", env))


def _known(table: dict[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise McpConfigError(f"{where}: unknown key {unknown[0]!r}; known: {sorted(keys)}")


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise McpConfigError(f"{where}: must be a non-empty string")
    return value


def _strings(value: Any, where: str, env: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(value, dict):
        raise McpConfigError(f"{where}: must be an object of strings")
    out = {}
    for key, item in value.items():
        if not isinstance(item, str):
            raise McpConfigError(f"{where}.{key}: must be a string")
        out[key] = _fill(item, f"{where}.{key}", env)
    return out


def _fill(text: str, where: str, env: Mapping[str, str]) -> str:
    """``text`` with each ``${VAR}`` / ``${VAR:-default}`` / ``${env:VAR}`` replaced from ``env``."""

    def one(match: re.Match[str]) -> str:
        value = env.get(match[1])
        if value is None or (value == "" and match[2] is not None):
            if match[2] is None:
                raise McpConfigError(f"{where}: ${{{match[1]}}} is not set in the environment")
            return match[2]
        return value

    return _VAR.sub(one, text)
