"""A small MCP server written with the official ``mcp`` SDK (FastMCP): a notes store.

Tools (with the MCP tool annotations a client such as hitl_app reads as hints):

* ``search_notes(query)``: read-only (``readOnlyHint``): lists the notes containing ``query``.
* ``add_note(title, text, tags)``: a write (not read-only, not destructive: it only adds).
* ``delete_note(title)``: destructive (``destructiveHint``).
* ``clear_notes()``: asks the user first (MCP elicitation): "Delete all N notes?" with a form
  ``{confirm: bool, reason: str}``; deletes only on an accepted ``confirm = true``.
* ``fetch_page(url)``: reaches outside (``openWorldHint``); offline it only says what it would fetch.

The notes live in one JSON file, ``NOTES_FILE`` (default ``data/mcp-notes.json``), so a new
process per call (stdio) sees the notes of the last. Run it::

    python examples/mcp/notes_server.py                       # stdio (what mcp.json starts)
    python examples/mcp/notes_server.py --http 127.0.0.1:8765 # Streamable HTTP at /mcp
"""

# Tested by: tests/integration/agent/test_mcp_tools.py

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

server = FastMCP("notes", log_level="WARNING")


def _notes_file() -> Path:
    return Path(os.environ.get("NOTES_FILE") or "data/mcp-notes.json")


def _load() -> list[dict]:
    path = _notes_file()
    try:
        return list(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []


def _save(notes: list[dict]) -> None:
    path = _notes_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(notes, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(path)


@server.tool(annotations=ToolAnnotations(title="Search notes", readOnlyHint=True, openWorldHint=False))
async def search_notes(query: str = "") -> str:
    """Find notes whose title, text or tags contain `query` (all notes for an empty query)."""
    q = query.lower()
    found = [n for n in _load() if q in (n["title"] + " " + n["text"] + " " + " ".join(n.get("tags", []))).lower()]
    if not found:
        return f"No note matches {query!r}." if query else "There are no notes yet."
    return "\n".join(f"- {n['title']}: {n['text']}" for n in found)


@server.tool(annotations=ToolAnnotations(title="Add a note", readOnlyHint=False, destructiveHint=False,
                                         openWorldHint=False))
def add_note(title: str = Field(min_length=1, max_length=80), text: str = "",
             tags: list[str] = Field(default_factory=list)) -> str:
    """Add a note (a note with the same title is refused)."""
    notes = _load()
    if any(n["title"] == title for n in notes):
        raise ValueError(f"a note titled {title!r} exists already")
    notes.append({"title": title, "text": text, "tags": tags})
    _save(notes)
    return f"Added the note {title!r}."


@server.tool(annotations=ToolAnnotations(title="Delete a note", readOnlyHint=False, destructiveHint=True,
                                         idempotentHint=True, openWorldHint=False))
def delete_note(title: str) -> str:
    """Delete the note with this title."""
    notes = _load()
    kept = [n for n in notes if n["title"] != title]
    if len(kept) == len(notes):
        raise ValueError(f"no note titled {title!r}")
    _save(kept)
    return f"Deleted the note {title!r}."


class ClearAnswer(BaseModel):
    """What ``clear_notes`` asks the user."""

    confirm: bool = Field(description="Delete every note?")
    reason: str = Field(default="", description="Why (kept in the server's answer)")


@server.tool(annotations=ToolAnnotations(title="Clear all notes", readOnlyHint=False, destructiveHint=True,
                                         openWorldHint=False))
async def clear_notes(ctx: Context) -> str:
    """Delete every note, after asking the user to confirm."""
    count = len(_load())
    answer = await ctx.elicit(f"Delete all {count} notes?", schema=ClearAnswer)
    if answer.action != "accept":
        return f"Nothing deleted: the user chose {answer.action}."
    if not answer.data.confirm:
        return "Nothing deleted: the user did not confirm."
    _save([])
    return f"Deleted {count} notes." + (f" Reason: {answer.data.reason}" if answer.data.reason else "")


@server.tool(annotations=ToolAnnotations(title="Fetch a web page", readOnlyHint=True, openWorldHint=True))
def fetch_page(url: str) -> str:
    """Say which page would be fetched (this offline example never goes out)."""
    return f"(offline example) would fetch {url}"


def main() -> None:
    """Serve over stdio, or Streamable HTTP with ``--http HOST:PORT``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    opts = parser.parse_args()
    if opts.http:
        host, _, port = opts.http.rpartition(":")
        server.settings.host, server.settings.port = host or "127.0.0.1", int(port)
        server.run(transport="streamable-http")
    else:
        server.run(transport="stdio")


if __name__ == "__main__":
    main()
