"""The workspace panel: what the signed-in account's tools really did (outbox, files, records), and
which MCP servers the agent is connected to."""

# Tested by: tests/e2e/test_screens.py

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import reflex as rx

from hitl_app.runtime import get_runtime
from hitl_app.store import inspect
from hitl_app.store.owners import owner_space
from hitl_app.ui.state.session import SessionState, owner_of, sign_in_redirect, signed_in


@dataclass
class McpServerRow:
    """One MCP server as the panel shows it: ``name``, ``where`` (command or address, no secrets),
    ``connected`` (its tools were listed at start-up), ``tools`` (the agent's names), ``error``
    (why it is not connected, or the last call's failure, one line), ``live``: its state now in
    words (``ServerStatus.live``: running, restarted, next try in N s)."""

    name: str
    where: str
    connected: bool
    tools: list[str] = field(default_factory=list)
    error: str = ""
    live: str = ""


def mcp_rows() -> list[McpServerRow]:
    """The MCP servers of this process (``Runtime.mcp``), in ``HITL_MCP`` order; [] without it."""
    mcp = get_runtime().mcp
    if mcp is None:
        return []
    return [McpServerRow(s.name, s.where, s.connected, list(s.tools), s.error, s.live()) for s in mcp.statuses.values()]


class WorkspaceState(rx.State):
    """The account's outbox mails, sandbox files and demo records, refreshed on demand and after each run."""

    open: bool = False
    mails: list[inspect.MailRow] = []
    file_rows: list[inspect.FileRow] = []
    record_columns: list[str] = []
    record_rows: list[list[str]] = []
    servers: list[McpServerRow] = []

    async def _owner(self) -> str | None:
        """The signed-in account's owner string, or None when signed out (then nothing is shown)."""
        who = await signed_in(await self.get_state(SessionState))
        return None if who is None else owner_of(who)

    @rx.event
    async def refresh(self):
        """Read the account's outbox, files and records again (signed out: emptied, to sign-in)."""
        owner = await self._owner()
        if owner is None:
            self.mails, self.file_rows, self.record_columns, self.record_rows = [], [], [], []
            return sign_in_redirect()
        runtime = get_runtime()
        space = owner_space(files_root=runtime.settings.files_dir, demo_db_path=runtime.settings.demo_db_path, owner=owner)
        self.mails = await asyncio.to_thread(inspect.outbox, engine=runtime.engines.sync, owner=owner)
        self.file_rows = await asyncio.to_thread(inspect.files, root=space.files_dir)
        self.record_columns, self.record_rows = await asyncio.to_thread(inspect.records, db_path=space.demo_db)
        self.servers = mcp_rows()
        return None

    @rx.event
    async def toggle(self):
        """Show or hide the panel (refreshing when shown)."""
        self.open = not self.open
        if self.open:
            return WorkspaceState.refresh

    @rx.event
    async def refresh_if_open(self):
        """Refresh after a run, only when the panel is shown."""
        if self.open:
            return WorkspaceState.refresh
