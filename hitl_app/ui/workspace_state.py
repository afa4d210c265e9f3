"""The workspace panel: what the tools really did (outbox, files, records)."""

from __future__ import annotations

import asyncio

import reflex as rx

from hitl_app.runtime import get_runtime
from hitl_app.store import inspect


class WorkspaceState(rx.State):
    """Outbox mails, sandbox files and demo records, refreshed on demand and after each run."""

    open: bool = False
    mails: list[inspect.MailRow] = []
    file_rows: list[inspect.FileRow] = []
    record_columns: list[str] = []
    record_rows: list[list[str]] = []

    @rx.event
    async def refresh(self) -> None:
        """Read the outbox, files and records again."""
        runtime = get_runtime()
        s = runtime.settings
        self.mails = await asyncio.to_thread(inspect.outbox, engine=runtime.engines.sync)
        self.file_rows = await asyncio.to_thread(inspect.files, root=s.files_dir)
        self.record_columns, self.record_rows = await asyncio.to_thread(inspect.records, db_path=s.demo_db_path)

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
