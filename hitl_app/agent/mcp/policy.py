"""The review policy of MCP tools: the server's annotations set the default, the policy file decides.

Default for a tool (from its MCP annotations, ``hitl_app.review.tool_origin.hint_words``):

* ``readOnlyHint: true`` on a server the policy marks ``trusted = true``: runs without a card;
* anything else (also a read-only hint from a server not marked trusted, as the MCP spec asks
  clients to treat annotations from untrusted servers): a card with approve, edit, reject;
* destructive (``destructiveHint: true``, or unset on a tool that is not read-only): a high-risk
  badge (never approved in bulk).

The policy file (``HITL_POLICY``) may set, per server and per tool, the keys of a built-in tool's
rule (rights, ``when`` rules, deadlines, grants, undo, risk) plus ``review``::

    [servers.notes]
    trusted = true            # its read-only hints may skip cards (default false)
    reviewers = ["reviewer"]  # any rule key: for every card of this server's tools
    deadline = "30m"

    [tools.notes__delete_note]
    allowed_decisions = ["approve", "reject"]
    approvals = 2
    review = true             # true: always a card; false: never (the admin's word, not the server's)

A tool's table wins over its server's, which wins over the hints. Errors name the file, the server
and the tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hitl_app.agent.policy import PolicyError, PolicyRule, rule_from_table
from hitl_app.review.tool_origin import ToolOrigin, hint_words
from hitl_app.review.types import QUESTION_SUFFIX

SERVER_ONLY_KEYS = frozenset({"trusted"})
"""Keys of ``[servers.<name>]`` that are not rule keys."""

DEFAULT_DECISIONS = ["approve", "edit", "reject"]
"""What a reviewer may decide on an MCP tool's card unless the policy says otherwise."""


@dataclass(frozen=True)
class McpToolInfo:
    """One MCP tool as the agent sees it.

    Attributes:
        name: the agent's name for it, ``<server>__<tool>``.
        server: the server's name.
        tool: the server's own name for the tool.
        title: the annotation's ``title`` or the tool's name.
        annotations: the MCP tool annotations (``readOnlyHint`` ...), unset ones left out or None.
        arg_names: the names of its arguments (``inputSchema.properties``).
    """

    name: str
    server: str
    tool: str
    title: str
    annotations: Mapping[str, Any]
    arg_names: frozenset[str] = frozenset()


def mcp_rules(
    tools: Sequence[McpToolInfo],
    *,
    server_tables: Mapping[str, Mapping[str, Any]],
    tool_tables: Mapping[str, Mapping[str, Any]],
    source: str = "policy",
) -> tuple[list[PolicyRule], dict[str, ToolOrigin]]:
    """The rules of the MCP tools that ask, and every MCP tool's origin (for its card).

    ``server_tables``: ``[servers.<name>]`` tables; ``tool_tables``: ``[tools.<server>__<tool>]``
    tables (both as read from the policy file; empty without one).

    Raises:
        PolicyError: a bad key or value, naming the file, the server and the tool.
    """
    rules: list[PolicyRule] = []
    origins: dict[str, ToolOrigin] = {}
    for info in tools:
        server_table = dict(server_tables.get(info.server, {}))
        trusted = _trusted(server_table, source, info.server)
        tool_table = dict(tool_tables.get(info.name, {}))
        origins[info.name] = ToolOrigin(info.server, info.tool, hint_words(info.annotations), trusted)
        origins[info.name + QUESTION_SUFFIX] = ToolOrigin(info.server, info.tool, ("asks you",), trusted)
        review = _review(tool_table, server_table, source, info)
        read_only = info.annotations.get("readOnlyHint") is True
        if not (review if review is not None else not (read_only and trusted)):
            continue
        table: dict[str, Any] = {"allowed_decisions": list(DEFAULT_DECISIONS),
                                 "description": _braces_escaped(f"{info.title} (MCP server {info.server})")}
        if "destructive" in origins[info.name].hints:
            table.update(risk="high", risk_note=f"{info.server} marks this tool destructive")
        for own in (server_table, tool_table):
            if "risk" in own:
                table.pop("risk_note", None)
            table.update({k: v for k, v in own.items() if k not in SERVER_ONLY_KEYS and k != "review"})
        where = f"[tools.{info.name}] (server {info.server}, tool {info.tool})"
        rules.append(rule_from_table(info.name, table, source=source, where=where))
    return rules, origins


def check_mcp_tables(
    *,
    server_tables: Mapping[str, Mapping[str, Any]],
    tool_tables: Mapping[str, Mapping[str, Any]],
    configured: Sequence[str],
    loaded: Mapping[str, Sequence[str]],
    source: str = "policy",
) -> None:
    """Check that the policy file's MCP tables name servers and tools that exist.

    ``configured``: the server names of ``HITL_MCP``; ``loaded``: server -> its tools' own names,
    for the servers that answered at start-up (a server that did not is not checked: its tables
    apply when it answers).

    Raises:
        PolicyError: ``[servers.x]`` or ``[tools.x__t]`` for a server not in ``HITL_MCP``, or a tool
            that server does not have; a server table with a bad key (checked even when the
            server has no tool that asks).
    """
    for server, table in server_tables.items():
        if server not in configured:
            raise PolicyError(f"{source}: [servers.{server}]: no MCP server named {server!r} in HITL_MCP "
                              f"(servers: {', '.join(configured) or 'none'})")
        _trusted(dict(table), source, server)
        probe = {"allowed_decisions": list(DEFAULT_DECISIONS), **{k: v for k, v in table.items()
                                                                     if k not in SERVER_ONLY_KEYS and k != "review"}}
        _review(dict(table), {}, source, McpToolInfo(f"{server}__*", server, "*", "", {}))
        rule_from_table(f"{server}__*", probe, source=source, where=f"[servers.{server}]")
    for name in tool_tables:
        server, _, tool = name.partition("__")
        if server not in configured:
            raise PolicyError(f"{source}: [tools.{name}]: no MCP server named {server!r} in HITL_MCP "
                              f"(servers: {', '.join(configured) or 'none'})")
        if server in loaded and tool not in loaded[server]:
            raise PolicyError(f"{source}: [tools.{name}]: MCP server {server!r} has no tool {tool!r} "
                              f"(its tools: {', '.join(loaded[server]) or 'none'})")


def _trusted(table: Mapping[str, Any], source: str, server: str) -> bool:
    trusted = table.get("trusted", False)
    if not isinstance(trusted, bool):
        raise PolicyError(f"{source}: [servers.{server}] trusted: must be true or false")
    return trusted


def _review(tool_table: Mapping[str, Any], server_table: Mapping[str, Any], source: str, info: McpToolInfo) -> bool | None:
    for where, table in ((f"[tools.{info.name}]", tool_table), (f"[servers.{info.server}]", server_table)):
        if "review" in table:
            if not isinstance(table["review"], bool):
                raise PolicyError(f"{source}: {where} review: must be true or false")
            return bool(table["review"])
    return None


def _braces_escaped(text: str) -> str:
    """``text`` as a description template that fills to itself (``{`` and ``}`` doubled)."""
    return text.replace("{", "{{").replace("}", "}}")
