"""The workspace panel: what the signed-in account's tools really did (outbox, files, records)."""

# Tested by: tests/e2e/test_screens.py

from __future__ import annotations

import asyncio

import reflex as rx

from hitl_app.runtime import get_runtime
from hitl_app.store import inspect
from hitl_app.store.owners import owner_space


class WorkspaceState(rx.State):
    """The account's outbox mails, sandbox files and demo records, refreshed on demand and after each run."""

    open: bool = False
    mails: list[inspect.MailRow] = []
    file_rows: list[inspect.FileRow] = []
    record_columns: list[str] = []
    record_rows: list[list[str]] = []

    async def _owner(self) -> str | None:
        """The signed-in account's owner string, or None when signed out (then nothing is shown)."""
        from hitl_app.ui.state.session import SessionState, owner_of  # state.py imports this module

        who = await (await self.get_state(SessionState)).require_principal()
        return None if who is None else owner_of(who)

    @rx.event
    async def refresh(self):
        """Read the account's outbox, files and records again (signed out: emptied, to sign-in)."""
        from hitl_app.ui.state.session import sign_in_redirect

        owner = await self._owner()
        if owner is None:
            self.mails, self.file_rows, self.record_columns, self.record_rows = [], [], [], []
            return sign_in_redirect()
        runtime = get_runtime()
        space = owner_space(files_root=runtime.settings.files_dir, demo_db_path=runtime.settings.demo_db_path, owner=owner)
        self.mails = await asyncio.to_thread(inspect.outbox, engine=runtime.engines.sync, owner=owner)
        self.file_rows = await asyncio.to_thread(inspect.files, root=space.files_dir)
        self.record_columns, self.record_rows = await asyncio.to_thread(inspect.records, db_path=space.demo_db)
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
