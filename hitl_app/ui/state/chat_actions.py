"""The chat's actions on runs: Send (the composer's message starts a turn), Stop, and Retry/Continue.

A Reflex state mixin of ``ChatState`` (which provides the open thread, its status and messages, the
chat's messages and the helpers named under ``TYPE_CHECKING``). Each action checks sign-in first, calls
the thread service (``ThreadService.start_turn``, ``stop``, ``continue_run``, which check everything
again) and shows a refusal as one sentence: ``composer_error`` under the composer, ``run_error``
beside the run. A started run shows its live bubble and is followed by the tab's watcher.
"""

# Tested by: tests/integration/ui/test_run_feedback_ws.py, tests/e2e/test_chat_flow.py

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.review import MAX_MESSAGE_CHARS
from hitl_app.runtime import get_service
from hitl_app.threads.service import ThreadError
from hitl_app.ui import rows as ui_rows
from hitl_app.ui.rows import MessageRow, thread_id_of
from hitl_app.ui.state.composer import clear_composer
from hitl_app.ui.state.session import owner_of
from hitl_app.ui.state.thread_list import ThreadListState


class ChatActionsMixin(rx.State, mixin=True):
    """Send, Stop and Retry/Continue of the open thread (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ChatState
        tid: str
        messages: list[MessageRow]
        status: str
        notice: str
        run_error: str
        composer_error: str
        load_error: str
        _retries: int

        async def _require_principal(self) -> Principal | None: ...
        async def _signed_out(self) -> Any: ...
        async def _open(self, who: Any) -> Any: ...
        def _begin_stream(self) -> None: ...
        def _watch_if_needed(self) -> list[Any]: ...
        async def _clear_panel(self) -> None: ...
        async def _follow_the_end(self, who: Principal) -> None: ...

    @rx.event
    async def send(self, form_data: dict[str, Any]):
        """Send the composer text as a new user message and start the run."""
        if (who := await self._require_principal()) is None:
            return await self._signed_out()
        text = form_data.get("text") if isinstance(form_data, dict) else None
        self.composer_error = ""
        if not isinstance(text, str) or not text.strip():
            self.composer_error = "Type a message first."
            return None
        if len(text) > MAX_MESSAGE_CHARS:
            self.composer_error = f"That message is too long ({len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,})."
            return None
        if self.tid != thread_id_of(self.router.url.path):  # Send beat the page's on_load (a new tab, or another thread opened)
            await self._open(who)
        if self.load_error:  # this thread cannot be opened (the composer is locked; the text stays)
            return None
        try:
            await get_service().start_turn(self.tid, text, owner=owner_of(who))
        except ThreadError as exc:
            self.composer_error = exc.message
            return None
        await self._clear_panel()
        await self._follow_the_end(who)
        self.messages = [*self.messages, MessageRow(key=f"pending-{uuid.uuid4().hex[:8]}", role="user", text=text)]
        self._begin_stream()
        return [*clear_composer(), *self._watch_if_needed(), ThreadListState.refresh]

    @rx.event
    async def stop(self):
        """Stop the live run of this thread."""
        if (who := await self._require_principal()) is None:
            return await self._signed_out()
        try:
            stopped = await get_service().stop(self.tid, owner=owner_of(who))
        except ThreadError as exc:
            self.run_error = exc.message
            return None
        if stopped:
            self.notice = ui_rows.stopped_notice(self.status)

    @rx.event
    async def continue_run(self):
        """Retry a failed run / continue an incomplete one from the last checkpoint."""
        if (who := await self._require_principal()) is None:
            return await self._signed_out()
        retry = self.status == "failed"
        try:
            await get_service().continue_run(self.tid, owner=owner_of(who))
        except ThreadError as exc:
            self.run_error = exc.message
            return None
        self._retries = self._retries + 1 if retry else 0
        self.run_error, self.notice = "", ("Retrying the run that failed…" if retry else "")
        self._begin_stream()
        return self._watch_if_needed()
