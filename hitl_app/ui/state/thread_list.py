"""The sidebar's thread list, and ``/`` opening a fresh thread."""

from __future__ import annotations

import uuid

import reflex as rx

from hitl_app.runtime import get_service
from hitl_app.ui.rows import ThreadRow, relative_time
from hitl_app.ui.state.session import SessionState


class ThreadListState(SessionState):
    """The sidebar's list of this browser's threads."""

    threads: list[ThreadRow] = []

    @rx.event
    async def refresh(self) -> None:
        """Reload the thread list from the thread index."""
        self._ensure_identity()
        try:
            summaries = await get_service().list_threads(owner=self.browser_id)
        except RuntimeError:
            return
        self.threads = [ThreadRow(s.thread_id, s.title, relative_time(s.updated_at), s.pending_review) for s in summaries]

    @rx.event
    def new_thread(self):
        """Open a fresh thread URL (the thread is recorded when its first message is sent)."""
        return rx.redirect(f"/thread/{uuid.uuid4()}")


class IndexState(rx.State):
    """``/`` has no content of its own: it opens a fresh thread."""

    @rx.event
    def open_new_thread(self):
        """Redirect to a new thread URL."""
        return rx.redirect(f"/thread/{uuid.uuid4()}", replace=True)
