"""Where a tool comes from, for its card: an MCP server's name and the hints it gave.

A built-in tool has no origin. An MCP tool's card names its server (a call leaves the app for it)
and shows the server's own hints as badges, in words: ``read-only``, ``destructive``,
``reaches outside`` (``openWorldHint``). Hints are the server's word, not a fact: a server the
policy does not mark ``trusted`` never skips a card on them (``hitl_app.agent.mcp.policy``).
Pure: nothing of the app imported.
"""

# Tested by: tests/unit/agent/test_mcp_policy.py

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolOrigin:
    """The MCP server behind one tool of the agent.

    Attributes:
        server: the server's name in ``HITL_MCP`` (the tool's name prefix).
        tool: the tool's own name on that server.
        hints: the hint badges, in words (see ``hint_words``).
        trusted: whether the policy trusts the server's hints (``[servers.<name>] trusted``).
    """

    server: str
    tool: str
    hints: tuple[str, ...] = ()
    trusted: bool = False


def hint_words(annotations: Mapping[str, object]) -> tuple[str, ...]:
    """The badges for MCP tool annotations (``readOnlyHint``, ``destructiveHint``, ``openWorldHint``).

    Unset hints take the MCP specification's defaults: a tool that is not read-only is taken as
    destructive, and every tool as reaching outside unless it says ``openWorldHint: false``.
    """
    read_only = annotations.get("readOnlyHint") is True
    words = []
    if read_only:
        words.append("read-only")
    elif annotations.get("destructiveHint") is not False:
        words.append("destructive")
    if annotations.get("openWorldHint") is not False:
        words.append("reaches outside")
    return tuple(words)
