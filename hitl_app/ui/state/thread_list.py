"""The sidebar's thread list, and ``/`` opening a fresh thread."""

from __future__ import annotations

import uuid

import reflex as rx

from hitl_app.runtime import get_service
from hitl_app.ui.rows import ThreadRow, relative_time
from hitl_app.ui.state.auth import current_principal
from hitl_app.ui.state.session import SessionState, owner_of, sign_in_redirect


class ThreadListState(SessionState):
    """The sidebar's list of this browser's threads."""

    threads: list[ThreadRow] = []

    @rx.event
    async def refresh(self):
        """Reload the thread list of the signed-in account (signed out: the list empties, and the
        tab goes to the sign-in page)."""
        self._ensure_identity()
        who = await self._require_principal()
        if who is None:
            self.threads = []
            return sign_in_redirect()
        try:
            summaries = await get_service().list_threads(owner=owner_of(who))
        except RuntimeError:
            return None
        self.threads = [
            ThreadRow(s.thread_id, s.title, relative_time(s.updated_at), s.pending_review, s.undo_window, s.review_lost)
            for s in summaries
        ]
        return None

    @rx.event
    def new_thread(self):
        """Open a fresh thread URL (the thread is recorded when its first message is sent)."""
        return rx.redirect(f"/thread/{uuid.uuid4()}")


class IndexState(rx.State):
    """``/`` has no content of its own: it opens a fresh thread (or the sign-in page)."""

    @rx.event
    async def open_new_thread(self):
        """Redirect to a new thread URL; to /sign-in when signed out (on a fresh install that
        page offers "Create the admin account")."""
        who = await current_principal(self)
        if who is None or who.must_change_password:
            return sign_in_redirect()
        return rx.redirect(f"/thread/{uuid.uuid4()}", replace=True)
