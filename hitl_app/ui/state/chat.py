"""The open thread: committed messages, the live streamed text, the run status and errors.

The pending review's cards live in the sibling ``ReviewState`` (``state/review.py``), which this
module does not import: the review module attaches its ``ReviewPanel`` (``attach_review_panel``),
through which each shown view hands the panel its review. Other states reach this one through the
module-level doors below the class (``show_view``, ``begin_stream``, ``watch_events``,
``signed_out``, ``lose_thread``), never through its private methods. Every handler first checks
sign-in. Two mixins hold the rest of the tab: ``ChatActionsMixin`` (``chat_actions.py``: Send, Stop,
Retry/Continue) and ``RunFollowMixin`` (``chat_follow.py``: following the runs)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import reflex as rx
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import Principal
from hitl_app.runtime import get_runtime, get_service
from hitl_app.store.accounts import get_account
from hitl_app.threads.lost import LOST_REVIEW
from hitl_app.threads.service import ThreadError
from hitl_app.threads.views import ThreadView
from hitl_app.ui import rows as ui_rows
from hitl_app.ui.rows import MessageRow, audit_line, first_line, lock_reason, message_rows, row_keys, thread_id_of
from hitl_app.ui.state import desk
from hitl_app.ui.state.chat_actions import ChatActionsMixin
from hitl_app.ui.state.chat_follow import RunFollowMixin
from hitl_app.ui.state.desk import DeskState
from hitl_app.ui.state.live import WATCHERS
from hitl_app.ui.state.session import SessionState, ask_identity, sign_in_redirect
from hitl_app.ui.state.thread_list import ThreadListState


@dataclass(frozen=True)
class ReviewPanel:
    """How the chat hands the review panel (``ReviewState``, a sibling) its part of the thread.

    ``clear(chat, error)``: no review shown (``error``: the panel's message, None keeps it);
    ``show_view(chat, view, viewer, error, previews)``: the view's pending review and card statuses
    (``viewer``: the person as the caller just read them, None: read again; ``previews``: False
    leaves the person's kept choices and the cards' effect previews to a later
    ``fill_previews(chat, viewer)``, after the cards are sent);
    ``show_error(chat, message)``: a message on the panel (a failed resume of a pending review).
    """

    clear: Callable[[ChatState, str | None], Awaitable[None]]
    show_view: Callable[[ChatState, ThreadView, Principal | None, str | None, bool], Awaitable[None]]
    show_error: Callable[[ChatState, str], Awaitable[None]]
    fill_previews: Callable[[ChatState, Principal | None], Awaitable[None]]


_PANEL: list[ReviewPanel] = []


def attach_review_panel(panel: ReviewPanel) -> None:
    """Install the review panel (``hitl_app.ui.state.review`` does, when it is imported)."""
    _PANEL[:] = [panel]


def _panel() -> ReviewPanel:
    if not _PANEL:
        raise RuntimeError("no review panel attached: import hitl_app.ui.state.review with the chat state")
    return _PANEL[0]


async def _owner_name(owner: str) -> str:
    """A thread owner's display name (``owner``: an account id as text), "" when it names no account."""
    if not owner.isdigit():
        return ""
    async with AsyncSession(get_runtime().engines.async_, expire_on_commit=False) as session:
        account = await get_account(session=session, account_id=int(owner))
    return account.display_name if account else ""


class ChatState(ChatActionsMixin, RunFollowMixin, SessionState):
    """The open thread: committed messages, the live streamed text, run status and errors."""

    tid: str = ""
    messages: list[MessageRow] = []
    hidden_count: int = 0  # rows before the tab's window (still on the server)
    later_count: int = 0  # rows after it (the reader scrolled far up: the window left the thread's end)
    _start: int = -1  # the window (ui/rows.py shown_range): its first row, -1 not chosen yet
    _end: int = -1  # one past its last row, -1 it follows the thread's end
    _audit_ids: list[str] = []
    _audit_lines: dict[str, str] = {}
    live_key: str = ""
    streaming: bool = False
    status: str = "idle"
    running_label: str = ""  # "Running slow_task…" while a tool of the live run works, else ""
    _open_calls: str = ""  # the label of the shown thread's unanswered tool calls (a review's, before Submit)
    _retries: int = 0  # Retries pressed in this tab since the run last failed for another reason
    notice: str = ""
    run_error: str = ""
    composer_error: str = ""
    load_error: str = ""
    load_retry: bool = False  # load_error is the deployment not answering: Retry (and Send) read the thread again
    read_only: bool = False  # someone else's thread, opened to decide its review: no composer
    owner_name: str = ""  # on someone else's thread, its owner's name for the header ("" on one's own)
    worker_pid: str = ""
    _watch_id: str = ""

    @rx.var
    def composer_locked(self) -> bool:
        """The composer is locked while a run streams or a review is pending."""
        return self.streaming or self.status == "review" or (bool(self.load_error) and not self.load_retry)

    @rx.var
    def lock_reason(self) -> str:
        """Why the composer is locked, in plain words ("" when it is not)."""
        return lock_reason("" if self.load_retry else self.load_error, self.streaming, self.status)

    @rx.var
    def can_continue(self) -> bool:
        """A Retry/Continue button is offered for a failed or incomplete run."""
        return not self.streaming and self.status in ("failed", "incomplete")

    # ---------------------------------------------------------------- the review beside the chat
    async def _empty(self) -> None:
        """Forget the open thread and its cards: signed out, nothing of it stays in the tab."""
        self.tid, self.messages, self.live_key, self.hidden_count, self.streaming, self.status = "", [], "", 0, False, "idle"
        self.notice = self.run_error = self.composer_error = self.load_error = self._watch_id = self.running_label = ""
        self.load_retry = False
        self._start, self._end, self.later_count, self._audit_ids, self._audit_lines, self.read_only = -1, -1, 0, [], {}, False
        await _panel().clear(self, "")

    async def _signed_out(self):
        """``_require_principal`` gave None: empty the tab, stop its watcher, go to sign-in."""
        await self._empty()
        WATCHERS.retire(self.router.session.client_token)
        return sign_in_redirect()

    # ---------------------------------------------------------------- loading
    async def _apply_view(self, view: ThreadView, viewer: Principal | None = None, previews: bool = True) -> None:
        """Show ``view``: the window of message rows, the status and its notice, the review
        (``previews`` False: the person's kept choices on its cards and their effect previews come
        with ``_fill_previews``, later).

        A run that failed while its review is still pending keeps the status "review" and its
        error goes to the review panel (a Retry could not work: the review needs deciding).
        ``viewer``: the signed-in person as just read by the caller (None: read again for the cards).
        """
        self._show_rows(message_rows(view.messages, await self._audit_for(view)))
        status: str = view.status
        if status == "incomplete" and await get_service().is_running(view.thread_id):
            status = "running"  # a run is live (e.g. a reload mid-stream): not a stopped one
        self.status = status
        self._open_calls = ui_rows.running_label(view.messages)  # what a resumed run starts by running
        self.running_label = self._open_calls if status == "running" else ""
        if status == "failed":
            self.run_error = first_line(view.error)
        elif status == "incomplete" and not self.run_error:
            self.notice = "The last run stopped before it finished."
        if status != "failed":
            self.run_error = ""
        if status != "incomplete":  # a reply cut off by Stop says so, also after a reload or in another tab
            self.notice = ui_rows.stopped_notice(status) if view.messages and view.messages[-1].cut == "stopped" else ""
        if view.review_lost:
            self.notice = LOST_REVIEW
        review_error = first_line(view.error) if status == "review" and view.error else None
        self.read_only = view.read_only
        self.owner_name = await _owner_name(view.owner) if view.read_only else ""
        await _panel().show_view(self, view, viewer, review_error, previews)
        desk.show_desk(await self.get_state(DeskState), view.desk, view.pending.interrupt_id if view.pending else "")

    async def _fill_previews(self, viewer: Principal | None = None) -> None:
        """The person's kept choices on the shown cards and their effect previews, when ``_apply_view``
        left them for later (``viewer``: the signed-in person as the caller just read them, None: read again)."""
        await _panel().fill_previews(self, viewer)

    def _show_rows(self, rows: list[MessageRow]) -> None:
        """Keep the window (``ui_rows.shown_range``): the rows from ``_start`` to ``_end`` (new rows append
        below while it follows the end; earlier and later ones join it as the reader scrolls to them)."""
        self._start, stop = ui_rows.shown_range(self._start, self._end, len(rows))
        if stop >= len(rows):
            self._end = -1
        later = len(rows) - stop
        rows = rows[self._start : stop]
        if self.hidden_count != self._start:
            self.hidden_count = self._start
        if self.later_count != later:
            self.later_count = later
        if row_keys(rows) != row_keys(self.messages):
            self.messages = rows  # unchanged rows are not resent (the whole list goes on each change)

    async def _follow_the_end(self, who: Principal) -> None:
        """Bring the window back to the thread's end (a message was sent while the reader was scrolled far
        up and later rows were not in the tab): the rows read again, the last ``MESSAGE_PAGE`` shown."""
        if self.later_count <= 0:
            return
        self._start, self._end = -1, -1
        try:
            view = await get_service().load(self.tid, viewer=who)
        except ThreadError:
            return  # the sent turn shows as its run goes; the next read places the window
        self._show_rows(message_rows(view.messages, await self._audit_for(view)))

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
        """Show earlier rows of the thread (``ui_rows.step_up``: as many again as the tab shows, 50 to 500;
        the window keeps at most ``WINDOW_ROWS``): the reader scrolled up to the first row the tab has
        (``MessageList.on_start_reached``), or pressed "Show earlier messages"."""
        if (who := await self._require_principal()) is None:
            return await self._signed_out()
        if self._start > 0:
            await self._step(who, ui_rows.step_up)

    @rx.event
    async def show_later(self):
        """Show later rows of the thread (``ui_rows.step_down``): the window left the thread's end as the
        reader scrolled up, and they scrolled down to its last row (``MessageList.on_end_reached``), or
        pressed "Show later messages"."""
        if (who := await self._require_principal()) is None:
            return await self._signed_out()
        if self.later_count > 0:
            await self._step(who, ui_rows.step_down)

    async def _step(self, who: Principal, step: Callable[[int, int, int], tuple[int, int]]) -> None:
        """Read the thread again for ``who`` and move the window by ``step`` (``ui_rows.step_up`` or
        ``step_down``); a refused read shows its message instead."""
        if not self.tid:
            return
        try:
            view = await get_service().load(self.tid, viewer=who)
        except ThreadError as exc:
            self.load_error = exc.message
            return
        total = self._start + len(self.messages) + self.later_count
        self._start, self._end = step(self._start, self._end, total)
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
        if (who := await self._require_principal()) is None:
            return await self._signed_out()
        return await self._open(who)

    async def _open(self, who: Any) -> Any:
        """Read the page's thread for ``who`` into this tab (``load_thread``); returns its follow-up events."""
        self.tid = tid = thread_id_of(self.router.url.path)
        self.worker_pid = f"{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.messages, self.live_key, self._start, self._end, self._audit_ids, self._audit_lines = [], "", -1, -1, [], {}
        self.later_count = 0
        self.load_error = self.run_error = self.composer_error = self.notice = ""
        self.load_retry = False
        try:
            view = await get_service().load(tid, viewer=who)
        except ThreadError as exc:
            # one message; a deployment that does not answer may answer later: Retry, or Send, reads again
            self.load_error, self.load_retry = exc.message, exc.code == "agent_unavailable"
            self.status, self.tid = "idle", ""  # never follow or act on a thread this browser may not open
            WATCHERS.retire(self.router.session.client_token)
            await _panel().clear(self, None)
            return ThreadListState.refresh
        self.streaming = await get_service().is_running(tid)
        await self._apply_view(view, who)
        return [ThreadListState.refresh, ChatState.watch]

    @rx.event
    async def retry_load(self):
        """Retry beside a deployment's "does not answer": read the thread again (as on opening the page)."""
        if (who := await self._require_principal()) is None:
            return await self._signed_out()
        return await self._open(who)

    # ---------------------------------------------------------------- the run's display (Send, Stop, Retry: chat_actions)
    async def _clear_panel(self) -> None:
        """No review on the panel, its message cleared (a new message was accepted)."""
        await _panel().clear(self, "")

    def _watch_if_needed(self) -> list[Any]:
        """``[ChatState.watch]`` after this tab started a run; ``[]`` when its watcher here follows the thread
        (the run wakes it; a new one costs a browser round trip and start-up reads before the first token)."""
        return [] if WATCHERS.following(self.router.session.client_token, self.tid) else [ChatState.watch]

    def _begin_stream(self) -> None:
        """A run of this thread started (from this tab or another): show the live bubble, named after the
        tool calls it starts by running (a resumed review's; none for a new message)."""
        self.streaming = True
        self._new_live_key()
        self.status, self.running_label = "running", self._open_calls

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
                await _panel().show_error(self, first_line(error))
            else:
                self.status, self.run_error = "failed", ui_rows.retried(first_line(error), self._retries)
        elif outcome == "stopped":
            self.notice = ui_rows.stopped_notice(self.status)
        if outcome != "failed":
            self._retries = 0


# ---------------------------------------------------------------- doors for the sibling states
async def show_view(state: ChatState, view: ThreadView, viewer: Principal | None = None) -> None:
    """Show ``view`` in the tab: messages, status, the review panel and the desk (``viewer``: the
    signed-in person as the caller just read them; None: read again for the cards)."""
    await state._apply_view(view, viewer)


def begin_stream(state: ChatState) -> None:
    """A run of the open thread started (e.g. a submission resumed it): show the live bubble."""
    state._begin_stream()


def watch_events(state: ChatState) -> list[Any]:
    """The events that make this tab follow the run it just started (``[]``: it already does)."""
    return state._watch_if_needed()


async def signed_out(state: ChatState) -> Any:
    """The session is gone: empty the tab (state, cards, desk), stop its watcher; returns the
    sign-in redirect for the calling handler to return."""
    return await state._signed_out()


def lose_thread(state: ChatState, message: str) -> None:
    """The open thread can no longer be read by this person: no run badge, ``message`` shown."""
    state.streaming, state.status, state.load_error = False, "idle", message
