"""The workspace panel: what this browser's tools really did (outbox, files, records)."""

# Tested by: tests/e2e/test_screens.py

from __future__ import annotations

import asyncio
import uuid

import reflex as rx

from hitl_app.runtime import get_runtime
from hitl_app.store import inspect
from hitl_app.store.owners import owner_space


class WorkspaceState(rx.State):
    """This browser's outbox mails, sandbox files and demo records, refreshed on demand and after each run."""

    open: bool = False
    mails: list[inspect.MailRow] = []
    file_rows: list[inspect.FileRow] = []
    record_columns: list[str] = []
    record_rows: list[list[str]] = []

    async def _owner(self) -> str | None:
        """This browser's id, or None when it has none yet (then nothing is shown)."""
        from hitl_app.ui.state import SessionState  # state.py imports this module

        owner = (await self.get_state(SessionState)).browser_id
        try:
            uuid.UUID(owner)
        except (ValueError, TypeError, AttributeError):
            return None
        return owner

    @rx.event
    async def refresh(self) -> None:
        """Read this browser's outbox, files and records again."""
        owner = await self._owner()
        if owner is None:
            self.mails, self.file_rows, self.record_columns, self.record_rows = [], [], [], []
            return
        runtime = get_runtime()
        space = owner_space(files_root=runtime.settings.files_dir, demo_db_path=runtime.settings.demo_db_path, owner=owner)
        self.mails = await asyncio.to_thread(inspect.outbox, engine=runtime.engines.sync, owner=owner)
        self.file_rows = await asyncio.to_thread(inspect.files, root=space.files_dir)
        self.record_columns, self.record_rows = await asyncio.to_thread(inspect.records, db_path=space.demo_db)

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
