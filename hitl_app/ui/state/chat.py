"""The open thread: committed messages, the live streamed text, the run status and errors.

The pending review's cards live in the sibling ``ReviewState``, reached through ``_review_state``
only to hand it the thread's review (``ReviewState._show``); every handler first checks sign-in."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import reflex as rx

from hitl_app.auth.http import session_token_from_cookie_header
from hitl_app.review import MAX_MESSAGE_CHARS
from hitl_app.runtime import get_service
from hitl_app.threads.service import ThreadError
from hitl_app.threads.views import ThreadView
from hitl_app.ui.desk_state import DeskState
from hitl_app.ui.rows import MESSAGE_PAGE, MessageRow, audit_line, first_line, lock_reason, message_rows, row_keys, thread_id_of
from hitl_app.ui.state import live
from hitl_app.ui.state.composer import clear_composer
from hitl_app.ui.state.live import WATCH_IDLE_S, WATCHERS, Follow, Retired, SignedOut, closing, live_script, may_follow
from hitl_app.ui.state.session import SessionState, ask_identity, owner_of, session_principal, sign_in_redirect
from hitl_app.ui.state.thread_list import ThreadListState
from hitl_app.ui.workspace_state import WorkspaceState

if TYPE_CHECKING:
    from hitl_app.auth import Principal
    from hitl_app.ui.state.review import ReviewState

STOPPED_NOTICE = "Stopped. The partial reply was not kept; send a new message or press Continue."


class ChatState(SessionState):
    """The open thread: committed messages, the live streamed text, run status and errors."""

    tid: str = ""
    messages: list[MessageRow] = []
    hidden_count: int = 0
    _start: int = -1
    _audit_ids: list[str] = []
    _audit_lines: dict[str, str] = {}
    live_key: str = ""
    streaming: bool = False
    status: str = "idle"
    notice: str = ""
    run_error: str = ""
    composer_error: str = ""
    load_error: str = ""
    read_only: bool = False  # someone else's thread, opened to decide its review: no composer
    worker_pid: str = ""
    _watch_id: str = ""

    @rx.var
    def composer_locked(self) -> bool:
        """The composer is locked while a run streams or a review is pending."""
        return self.streaming or self.status == "review" or bool(self.load_error)

    @rx.var
    def lock_reason(self) -> str:
        """Why the composer is locked, in plain words ("" when it is not)."""
        return lock_reason(self.load_error, self.streaming, self.status)

    @rx.var
    def can_continue(self) -> bool:
        """A Retry/Continue button is offered for a failed or incomplete run."""
        return not self.streaming and self.status in ("failed", "incomplete")

    # ---------------------------------------------------------------- the review beside the chat
    async def _review_state(self) -> ReviewState:
        """The tab's ``ReviewState`` (the one way this state reaches the review)."""
        from hitl_app.ui.state.review import ReviewState  # the review state imports this module

        return await self.get_state(ReviewState)

    async def _empty(self) -> None:
        """Forget the open thread and its cards: signed out, nothing of it stays in the tab."""
        self.tid, self.messages, self.live_key, self.hidden_count, self.streaming, self.status = "", [], "", 0, False, "idle"
        self.notice = self.run_error = self.composer_error = self.load_error = self._watch_id = ""
        self._start, self._audit_ids, self._audit_lines, self.read_only = -1, [], {}, False
        (await self._review_state())._show(None, error="")

    async def _signed_out(self):
        """``require_principal`` gave None: empty the tab, stop its watcher, go to sign-in."""
        await self._empty()
        WATCHERS.retire(self.router.session.client_token)
        return sign_in_redirect()

    # ---------------------------------------------------------------- loading
    async def _apply_view(self, view: ThreadView, viewer: Principal | None = None) -> None:
        """Show ``view``: the window of message rows, the status and its notice, the review.

        A run that failed while its review is still pending keeps the status "review" and its
        error goes to the review panel (a Retry could not work: the review needs deciding).
        ``viewer``: the signed-in person as just read by the caller (None: read again for the cards).
        """
        self._show_rows(message_rows(view.messages, await self._audit_for(view)))
        status: str = view.status
        if status == "incomplete" and await get_service().is_running(view.thread_id):
            status = "running"  # a run is live (e.g. a reload mid-stream): not a stopped one
        self.status = status
        if status == "failed":
            self.run_error = first_line(view.error)
        elif status == "incomplete" and not self.run_error:
            self.notice = "The last run stopped before it finished."
        if status != "failed":
            self.run_error = ""
        if status != "incomplete":
            self.notice = ""
        review_error = first_line(view.error) if status == "review" and view.error else None
        self.read_only = view.read_only
        waiting = (desk := view.desk) is not None and desk.undo_until is not None  # an undo window: cards stay decided
        review_state = await self._review_state()
        review_state._show(view.pending, statuses=None if waiting else view.cards, error=review_error, undo_open=waiting,
                           raised_at=desk.requested_at if desk else None, undo_by=desk.overtaken_by if desk else "")
        if view.pending is not None:
            await review_state._fill_cards(view.owner, viewer)
        (await self.get_state(DeskState))._show(view.desk, view.pending.interrupt_id if view.pending else "")

    def _show_rows(self, rows: list[MessageRow]) -> None:
        """Keep the window: rows from ``_start`` on (new rows append below; earlier ones on request)."""
        if self._start < 0:
            self._start = max(0, len(rows) - MESSAGE_PAGE)
        self._start = min(self._start, max(0, len(rows) - MESSAGE_PAGE))
        rows = rows[self._start :]
        if self.hidden_count != self._start:
            self.hidden_count = self._start
        if row_keys(rows) != row_keys(self.messages):
            self.messages = rows  # unchanged rows are not resent (the whole list goes on each change)

    async def _audit_for(self, view: ThreadView) -> dict[str, Any]:
        """The audit entries of the view's tool rows, queried only when a tool row is new to this tab.

        Sound because a decision's audit row is written (the claim) before the graph resumes, so
        before the tool message it explains exists: a tool row already seen has its entry already.
        """
        ids = [v.tool_call_id or "" for v in view.messages if v.role == "tool"]
        if not set(ids) <= set(self._audit_ids):
            audit = await get_service().audit_for_thread(view.thread_id)
            self._audit_ids, self._audit_lines = ids, {i: audit_line(e) for i, e in audit.items()}
        return dict(self._audit_lines)

    @rx.event
    async def show_earlier(self):
        """Show the previous ``MESSAGE_PAGE`` rows of the thread (the "Show earlier messages" button)."""
        if (who := await self.require_principal()) is None:
            return await self._signed_out()
        if not self.tid or self._start <= 0:
            return None
        try:
            view = await get_service().load(self.tid, viewer=who)
        except ThreadError as exc:
            self.load_error = exc.message
            return None
        self._start = max(0, self._start - MESSAGE_PAGE)
        await self._apply_view(view)

    @rx.event
    def adopt_identity(self, stored: dict[str, Any]):
        """The browser's stored identity (see ``load_thread``), then the thread is loaded."""
        self._adopt_identity(stored)
        return ChatState.load_thread

    @rx.event
    async def load_thread(self):
        """on_load of /thread/[thread_id]: read the thread from the checkpoint (never runs the graph).

        Without a browser id (a first visit, or a server state rebuilt after it expired, which
        Reflex loads without the page's storage) the browser is asked for its stored one first.
        """
        if not self.browser_id:
            return ask_identity(ChatState.adopt_identity)
        if (who := await self.require_principal()) is None:
            return await self._signed_out()
        return await self._open(who)

    async def _open(self, who: Any) -> Any:
        """Read the page's thread for ``who`` into this tab (``load_thread``); returns its follow-up events."""
        self.tid = tid = thread_id_of(self.router.url.path)
        self.worker_pid = f"{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.messages, self.live_key, self._start, self._audit_ids, self._audit_lines = [], "", -1, [], {}
        self.load_error = self.run_error = self.composer_error = self.notice = ""
        try:
            view = await get_service().load(tid, viewer=who)
        except ThreadError as exc:
            self.load_error = exc.message
            self.status, self.tid = "idle", ""  # never follow or act on a thread this browser may not open
            WATCHERS.retire(self.router.session.client_token)
            (await self._review_state())._show(None)
            return ThreadListState.refresh
        self.streaming = await get_service().is_running(tid)
        await self._apply_view(view, who)
        return [ThreadListState.refresh, ChatState.watch]

    # ---------------------------------------------------------------- actions
    @rx.event
    async def send(self, form_data: dict[str, Any]):
        """Send the composer text as a new user message and start the run."""
        if (who := await self.require_principal()) is None:
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
        (await self._review_state())._show(None, error="")
        self.messages = [*self.messages, MessageRow(key=f"pending-{uuid.uuid4().hex[:8]}", role="user", text=text)]
        self._begin_stream()
        return [*clear_composer(), *self._watch_if_needed(), ThreadListState.refresh]

    @rx.event
    async def stop(self):
        """Stop the live run of this thread."""
        if (who := await self.require_principal()) is None:
            return await self._signed_out()
        try:
            stopped = await get_service().stop(self.tid, owner=owner_of(who))
        except ThreadError as exc:
            self.run_error = exc.message
            return None
        if stopped:
            self.notice = STOPPED_NOTICE

    @rx.event
    async def continue_run(self):
        """Retry a failed run / continue an incomplete one from the last checkpoint."""
        if (who := await self.require_principal()) is None:
            return await self._signed_out()
        try:
            await get_service().continue_run(self.tid, owner=owner_of(who))
        except ThreadError as exc:
            self.run_error = exc.message
            return None
        self.run_error = self.notice = ""
        self._begin_stream()
        return self._watch_if_needed()

    def _watch_if_needed(self) -> list[Any]:
        """``[ChatState.watch]`` after this tab started a run; ``[]`` when its watcher here follows the thread
        (the run wakes it; a new one costs a browser round trip and start-up reads before the first token)."""
        return [] if WATCHERS.following(self.router.session.client_token, self.tid) else [ChatState.watch]

    def _begin_stream(self) -> None:
        """A run of this thread started (from this tab or another): show the live bubble."""
        self.streaming = True
        self._new_live_key()
        self.status = "running"

    def _new_live_key(self) -> str:
        """A fresh key for the live bubble: React mounts a new, empty text element for it."""
        self.live_key = uuid.uuid4().hex[:8]
        return self.live_key

    async def _run_ended(self, outcome: str | None, error: str | None) -> None:
        """After the view of an ended run was applied: the stream stops; a failure is shown. A failed
        resume whose review is still pending keeps the status "review" and shows the error on the
        review panel; any other failure sets "failed" with Retry."""
        self.streaming = False
        if outcome == "failed":
            if self.status == "review":
                (await self._review_state())._show_error(first_line(error))
            else:
                self.status, self.run_error = "failed", first_line(error)
        elif outcome == "stopped" and self.status == "incomplete":
            self.notice = STOPPED_NOTICE

    # ---------------------------------------------------------------- following the thread's runs
    @contextlib.asynccontextmanager
    async def _if_mine(self, follow: Follow) -> AsyncIterator[None]:
        """``async with self`` for a watcher, raising ``Retired`` if its tab moved on (newer watcher, other thread)."""
        async with self:
            if self._watch_id != follow.watch_id or self.tid != follow.tid:
                raise Retired
            yield

    @rx.event(background=True)
    async def watch(self):
        """Follow the thread's runs for this tab (one per tab, ``WATCHERS``): live text, then the checkpoint."""
        follow = WATCHERS.enter(self.router.session.client_token)
        try:
            async with self:
                self._watch_id, follow.tid = follow.watch_id, self.tid
                follow.session = session_token_from_cookie_header(self.router.headers.cookie)
            await self._check_session(follow)
            service = get_service()
            if not await may_follow(service, follow):  # forged, or no longer readable: never left "Thinking..."
                async with self._if_mine(follow):
                    self.streaming = False
                return
            checked = True  # just now, above
            while True:
                if not checked:
                    await self._check_session(follow)
                checked = False
                generation = await service.bus.generation(follow.tid)
                follow.next_run()
                async with closing(self._follow_run(follow)) as updates:
                    async for update in updates:
                        yield update
                if not follow.saw_end:
                    async with closing(self._catch_up(follow)) as updates:
                        async for update in updates:
                            yield update
                running = await service.is_running(follow.tid)
                async with self._if_mine(follow):
                    self.streaming = running
                if not await service.bus.wait_for_run(follow.tid, after=generation, timeout=WATCH_IDLE_S):
                    async with self:
                        if self._watch_id == follow.watch_id:
                            self._watch_id = ""
                    return
        except SignedOut:
            yield sign_in_redirect()
        except Retired:
            return
        finally:
            WATCHERS.leave(follow)

    async def _follow_run(self, follow: Follow):
        """The live updates of the thread's current run (none if no run is live)."""
        async with closing(get_service().subscribe(follow.tid)) as events:
            async for event in events:
                follow.saw_end = follow.saw_end or event.kind == "ended"
                if event.kind == "text" and follow.key and not event.reset:
                    if not WATCHERS.is_current(follow):
                        raise Retired
                    if follow.check_due():
                        async with self._if_mine(follow):
                            pass
                    if follow.session_due():
                        await self._check_session(follow)
                    if event.delta:
                        follow.seq += 1
                        yield live_script(follow.key, follow.seq, event.delta, False)
                elif event.kind in ("text", "started"):
                    async with self._if_mine(follow):
                        if event.kind == "started":
                            self._begin_stream()
                        elif not self.streaming:
                            self.streaming = True
                        follow.key, follow.seq = self.live_key or self._new_live_key(), 0
                    yield live_script(follow.key, follow.seq, event.delta if event.kind == "text" else "", True)
                else:
                    for update in await self._settle(follow, event):
                        yield update

    async def _check_session(self, follow: Follow) -> None:
        """Re-read the tab's session (``follow.owner``/``viewer``); gone: empty the tab, ``SignedOut``."""
        if (who := await session_principal(follow.session)) is not None:
            follow.owner, follow.viewer = owner_of(who), who
            return
        async with self:
            if self._watch_id == follow.watch_id:
                await self._empty()
        raise SignedOut

    async def _settle(self, follow: Follow, event: Any) -> list[Any]:
        """A message boundary or the run's end: the committed messages come from the checkpoint,
        read while the session is re-read (``settled_view``)."""
        view = await live.settled_view(get_service(), follow, event, lambda: self._check_session(follow))
        async with self._if_mine(follow):
            if view is not None:  # the run's own view is every tab's: this tab keeps its viewer's read_only
                await self._apply_view(view.model_copy(update={"read_only": self.read_only}) if view is event.view else view,
                                       follow.viewer)  # the session was re-read beside the view
            follow.key, follow.seq = self._new_live_key(), 0
            if event.kind == "ended":
                await self._run_ended(event.outcome, event.error)
        if event.kind == "boundary":
            return [live_script(follow.key, follow.seq, "", True)]
        if event.kind == "ended":
            return [ThreadListState.refresh, WorkspaceState.refresh_if_open]
        return []

    async def _catch_up(self, follow: Follow):
        """No live run was seen ending. If this tab expects one (it just sent or submitted), the
        run may have ended before the watcher subscribed: read its result."""
        async with self._if_mine(follow):
            expecting = self.streaming
        service = get_service()
        if expecting and not await service.is_running(follow.tid):
            view = await service.load(follow.tid, viewer=follow.viewer)
            async with self._if_mine(follow):
                await self._apply_view(view, follow.viewer)
            yield ThreadListState.refresh
