"""Reflex state, split by concern (habit 7 of ../shared/style.md).

``SessionState``: who this browser is (a random id kept in localStorage, used as the thread
owner) and the reviewer's display name. ``ChatState``: the open thread, its committed messages and
the live streamed text. ``ReviewState``: the approval cards of the pending review.
``ThreadListState``: the sidebar. Handlers call ``hitl_app.threads``; no graph or SQL logic here.
Every handler argument comes from the browser and is checked before use.
"""

from __future__ import annotations

import json
import os
import logging
import time
import uuid
from typing import Any

import reflex as rx

from hitl_app.review import MAX_MESSAGE_CHARS, ReviewError, parse_args_json, validate_edit_args
from hitl_app.review.types import PendingReview
from hitl_app.runtime import get_service
from hitl_app.threads.service import ThreadError
from hitl_app.threads.views import ThreadView
from hitl_app.ui.workspace_state import WorkspaceState
from hitl_app.ui.rows import MESSAGE_PAGE, CardRow, MessageRow, ThreadRow, audit_line, card_rows, message_rows, relative_time

log = logging.getLogger("hitl_app.ui")

COMPOSER_ID = "composer-text"
"""DOM id of the composer's text area: cleared only once a message is accepted (a refused one stays)."""
LIVE_CHECK_S = 0.5
"""How often (seconds) a watcher re-checks, between live deltas, that its tab still wants it."""

_ACTIVE_WATCH: dict[str, str] = {}
"""Client token -> id of the tab's current watcher (process-local, like the run bus), so a watcher
can tell it was replaced without taking the state lock on every delta."""


def _row_keys(rows: Any) -> list[tuple[str, ...]]:
    return [(r.key, r.role, r.text, r.tool_name, r.outcome, r.args_json, r.result, r.audit) for r in rows]


def live_script(key: str, seq: int, text: str, reset: bool) -> rx.event.EventSpec:
    """The client call that appends ``text`` to the live bubble ``key`` (see ``LIVE_JS``).

    Append-only: each call carries only new text; ``reset`` replaces the text (a late joiner's
    snapshot, or the first delta of a bubble). ``seq`` numbers the calls of one key from 0, so a
    repeated or out-of-order call is ignored instead of duplicating text.
    """
    args = [key, seq, text, 1] if reset else [key, seq, text]
    return rx.call_script(f"hitlLive({json.dumps(args, ensure_ascii=False, separators=(',', ':'))})")


LIVE_JS = r"""
window.hitlLive = function (a) {
  var key = a[0], seq = a[1], text = a[2], reset = !!a[3];
  var B = window.__hitlLive || (window.__hitlLive = {order: []});
  var b = B[key];
  if (reset) {
    b = B[key] = {text: text, seq: seq};
    B.order.push(key);
    while (B.order.length > 8) delete B[B.order.shift()];
  } else if (b && seq === b.seq + 1) {
    b.text += text; b.seq = seq;
  } else {
    return;
  }
  var tries = 0;
  var paint = function () {
    var el = document.querySelector('[data-live="' + key + '"]');
    if (!el) {
      if (++tries < 200) setTimeout(paint, 15);
      return;
    }
    if (!reset && el.__hitlLen === b.text.length - text.length) {
      el.appendChild(document.createTextNode(text));
    } else {
      el.textContent = b.text;
    }
    el.__hitlLen = b.text.length;
  };
  paint();
};
"""
"""Defines ``window.hitlLive`` (in the page head): keeps each live bubble's text in a JS buffer
keyed by ``ChatState.live_key`` and appends each delta as a text node to the element with
``data-live=<key>``; if that element is not rendered yet it retries every 15 ms (up to 3 s) and
then paints the whole buffer. React never re-renders the streamed text."""
WATCH_IDLE_S = 900
"""A tab's watcher waits this long (seconds) for a new run before it exits (restarted on any action)."""


class SessionState(rx.State):
    """The browser's identity (a bearer id in localStorage) and the reviewer's name."""

    browser_id: str = rx.LocalStorage("", name="hitl_browser_id", sync=True)
    reviewer: str = rx.LocalStorage("", name="hitl_reviewer", sync=True)
    reviewer_draft: str = ""

    def ensure_identity(self) -> None:
        """Give this browser a random id on first visit."""
        try:
            uuid.UUID(self.browser_id)
        except (ValueError, TypeError, AttributeError):
            self.browser_id = str(uuid.uuid4())

    @rx.event
    def save_reviewer(self, form_data: dict[str, Any]) -> None:
        """Set the reviewer name recorded with each decision (1-40 characters)."""
        name = form_data.get("reviewer") if isinstance(form_data, dict) else None
        if isinstance(name, str) and 0 < len(name.strip()) <= 40:
            self.reviewer = name.strip()

    @rx.var
    def reviewer_label(self) -> str:
        """The name shown in the header."""
        return self.reviewer or "anonymous"


class ThreadListState(SessionState):
    """The sidebar's list of this browser's threads."""

    threads: list[ThreadRow] = []

    @rx.event
    async def refresh(self) -> None:
        """Reload the thread list from the thread index."""
        self.ensure_identity()
        try:
            summaries = await get_service().list_threads(owner=self.browser_id)
        except RuntimeError:
            return
        self.threads = [ThreadRow(s.thread_id, s.title, relative_time(s.updated_at), s.pending_review) for s in summaries]

    @rx.event
    def new_thread(self):
        """Open a fresh thread URL (the thread is recorded when its first message is sent)."""
        return rx.redirect(f"/thread/{uuid.uuid4()}")


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
    worker_pid: str = ""
    _watch_id: str = ""

    @rx.var
    def composer_locked(self) -> bool:
        """The composer is locked while a run streams or a review is pending."""
        return self.streaming or self.status == "review" or bool(self.load_error)

    @rx.var
    def lock_reason(self) -> str:
        """Why the composer is locked, in plain words ("" when it is not)."""
        if self.load_error:
            return self.load_error
        if self.streaming:
            return "The agent is answering. Press Stop to end the run."
        if self.status == "review":
            return "The agent is waiting for your review above: decide every card, then submit."
        return ""

    @rx.var
    def can_continue(self) -> bool:
        """A Retry/Continue button is offered for a failed or incomplete run."""
        return not self.streaming and self.status in ("failed", "incomplete")

    # ---------------------------------------------------------------- loading
    async def _apply_view(self, view: ThreadView) -> None:
        rows = message_rows(view.messages, await self._audit_for(view))
        # the window: rows from ``_start`` on (new rows append below; earlier ones come on request)
        if self._start < 0:
            self._start = max(0, len(rows) - MESSAGE_PAGE)
        self._start = min(self._start, max(0, len(rows) - MESSAGE_PAGE))
        rows = rows[self._start :]
        if self.hidden_count != self._start:
            self.hidden_count = self._start
        if _row_keys(rows) != _row_keys(self.messages):
            self.messages = rows  # unchanged rows are not resent (the whole list goes on each change)
        status = view.status
        if status == "incomplete" and await get_service().is_running(view.thread_id):
            status = "running"  # a run is live (e.g. a reload mid-stream): not a stopped one
        self.status = status
        if status == "failed":
            self.run_error = (view.error or "The run failed.").splitlines()[0][:500]
        elif status == "incomplete" and not self.run_error:
            self.notice = "The last run stopped before it finished."
        if status != "failed":
            self.run_error = ""
        if status != "incomplete":
            self.notice = ""
        review = await self.get_state(ReviewState)
        review._show(view.pending)

    async def _audit_for(self, view: ThreadView) -> dict[str, Any]:
        """The audit entries of the view's tool rows, queried only when a tool row is new to this tab.

        Sound because a decision's audit row is written (the claim) before the graph resumes, so
        before the tool message it explains exists: a tool row already seen has its entry already.
        """
        ids = [v.tool_call_id or "" for v in view.messages if v.role == "tool"]
        known = set(self._audit_ids)
        if all(i in known for i in ids):
            return {i: line for i, line in self._audit_lines.items()}
        audit = await get_service().audit_for_thread(view.thread_id)
        self._audit_ids = ids
        self._audit_lines = {i: audit_line(e) for i, e in audit.items()}
        return dict(self._audit_lines)

    @rx.event
    async def show_earlier(self):
        """Show the previous ``MESSAGE_PAGE`` rows of the thread (the "Show earlier messages" button)."""
        if not self.tid or self._start <= 0:
            return
        try:
            view = await get_service().load(self.tid, owner=self.browser_id)
        except ThreadError as exc:
            self.load_error = exc.message
            return
        self._start = max(0, self._start - MESSAGE_PAGE)
        await self._apply_view(view)

    @rx.event
    async def load_thread(self):
        """on_load of /thread/[thread_id]: read the thread from the checkpoint (never runs the graph)."""
        self.ensure_identity()
        path = str(self.router.url.path).rstrip("/")
        tid = path.rsplit("/", 1)[-1] if path.startswith("/thread/") else ""
        self.tid = tid
        self.worker_pid = f"{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.messages, self.live_key = [], ""
        self._start, self._audit_ids, self._audit_lines = -1, [], {}
        self.load_error = self.run_error = self.composer_error = self.notice = ""
        service = get_service()
        try:
            view = await service.load(tid, owner=self.browser_id)
        except ThreadError as exc:
            self.load_error = exc.message
            self.status = "idle"
            self.tid = ""  # never follow or act on a thread this browser may not open
            (await self.get_state(ReviewState))._show(None)
            return ThreadListState.refresh
        self.streaming = await service.is_running(tid)
        await self._apply_view(view)
        return [ThreadListState.refresh, ChatState.watch]

    # ---------------------------------------------------------------- actions
    @rx.event
    async def send(self, form_data: dict[str, Any]):
        """Send the composer text as a new user message and start the run."""
        text = form_data.get("text") if isinstance(form_data, dict) else None
        self.composer_error = ""
        if not isinstance(text, str) or not text.strip():
            self.composer_error = "Type a message first."
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self.composer_error = f"That message is too long ({len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,})."
            return
        try:
            await get_service().start_turn(self.tid, text, owner=self.browser_id)
        except ThreadError as exc:
            self.composer_error = exc.message
            return
        (await self.get_state(ReviewState)).review_error = ""
        self.messages = [*self.messages, MessageRow(key=f"pending-{uuid.uuid4().hex[:8]}", role="user", text=text)]
        self._begin_stream()
        return [rx.set_value(COMPOSER_ID, ""), ChatState.watch, ThreadListState.refresh]

    @rx.event
    async def stop(self):
        """Stop the live run of this thread."""
        try:
            stopped = await get_service().stop(self.tid, owner=self.browser_id)
        except ThreadError as exc:
            self.run_error = exc.message
            return
        if stopped:
            self.notice = "Stopped. The partial reply was not kept; send a new message or press Continue."

    @rx.event
    async def continue_run(self):
        """Retry a failed run / continue an incomplete one from the last checkpoint."""
        try:
            await get_service().continue_run(self.tid, owner=self.browser_id)
        except ThreadError as exc:
            self.run_error = exc.message
            return
        self.run_error = self.notice = ""
        self._begin_stream()
        return ChatState.watch

    def _begin_stream(self) -> None:
        self.streaming = True
        self._new_live_key()
        self.status = "running"

    # ---------------------------------------------------------------- streaming
    def _new_live_key(self) -> str:
        """A fresh key for the live bubble: React mounts a new, empty text element for it."""
        self.live_key = uuid.uuid4().hex[:8]
        return self.live_key

    @rx.event(background=True)
    async def watch(self):
        """Follow the thread's runs for this tab: live text, then the checkpointed result.

        One watcher per tab: a newer watcher (or a different thread) makes this one exit. Live
        text goes to the browser append-only (``live_script``), outside the state lock; the
        state changes only when a bubble starts and at message boundaries.
        """
        my_id = uuid.uuid4().hex
        async with self:
            self._watch_id = my_id
            tid = self.tid
            owner = self.browser_id
            token = self.router.session.client_token
        _ACTIVE_WATCH[token] = my_id
        service = get_service()
        try:  # a forged call must not stream another browser's thread to this tab
            await service.check_access(tid, owner)
        except ThreadError:
            return
        try:
            while True:
                generation = await service.bus.generation(tid)
                key, seq, last_check = "", -1, time.monotonic()
                saw_end = False
                async for event in service.subscribe(tid):
                    saw_end = saw_end or event.kind == "ended"
                    if event.kind == "text" and key and not event.reset:
                        if _ACTIVE_WATCH.get(token) != my_id:
                            return
                        if time.monotonic() - last_check > LIVE_CHECK_S:
                            last_check = time.monotonic()
                            async with self:
                                if self._watch_id != my_id or self.tid != tid:
                                    return
                        if event.delta:
                            seq += 1
                            yield live_script(key, seq, event.delta, False)
                        continue
                    if event.kind in ("text", "started"):
                        async with self:
                            if self._watch_id != my_id or self.tid != tid:
                                return
                            if event.kind == "started":
                                self._begin_stream()
                            elif not self.streaming:
                                self.streaming = True
                            key, seq = self.live_key or self._new_live_key(), 0
                        yield live_script(key, seq, event.delta if event.kind == "text" else "", True)
                        continue
                    # boundary / ended: the committed messages come from the checkpoint
                    try:
                        view = event.view if event.view is not None else await service.load(tid, owner=owner)
                    except Exception:  # noqa: BLE001 - shown below as a run error
                        log.exception("reload failed thread=%s", tid)
                        view = None
                    async with self:
                        if self._watch_id != my_id or self.tid != tid:
                            return
                        if view is not None:
                            await self._apply_view(view)
                        key, seq = self._new_live_key(), 0
                        if event.kind == "ended":
                            self.streaming = False
                            if event.outcome == "failed":
                                self.status = "failed"
                                self.run_error = (event.error or "The run failed.").splitlines()[0][:500]
                            elif event.outcome == "stopped" and self.status == "incomplete":
                                self.notice = "Stopped. The partial reply was not kept; send a new message or press Continue."
                    if event.kind == "boundary":
                        yield live_script(key, seq, "", True)
                    if event.kind == "ended":
                        yield ThreadListState.refresh
                        yield WorkspaceState.refresh_if_open
                if not saw_end:
                    # No live run was seen ending. If this tab expects one (it just sent or
                    # submitted), the run may have ended before we subscribed: read the result.
                    async with self:
                        if self._watch_id != my_id or self.tid != tid:
                            return
                        expecting = self.streaming
                    if expecting and not await service.is_running(tid):
                        view = await service.load(tid, owner=owner)
                        async with self:
                            if self._watch_id != my_id or self.tid != tid:
                                return
                            await self._apply_view(view)
                        yield ThreadListState.refresh
                running = await service.is_running(tid)
                async with self:
                    if self._watch_id != my_id or self.tid != tid:
                        return
                    self.streaming = running
                if not await service.bus.wait_for_run(tid, after=generation, timeout=WATCH_IDLE_S):
                    async with self:
                        if self._watch_id == my_id:
                            self._watch_id = ""
                    return
        finally:
            if _ACTIVE_WATCH.get(token) == my_id:
                del _ACTIVE_WATCH[token]


class ReviewState(ChatState):
    """The approval cards of the pending review, and the reviewer's choices on them."""

    cards: list[CardRow] = []
    interrupt_id: str = ""
    review_error: str = ""
    _review_json: str = ""
    _edited: dict[int, dict[str, Any]] = {}

    def _show(self, review: PendingReview | None) -> None:
        """Replace the cards with ``review`` (or clear them). Private: not callable from the browser."""
        new_id = review.interrupt_id if review else ""
        if new_id == self.interrupt_id and (review is None) == (not self.cards):
            return
        self.cards = card_rows(review)
        self.interrupt_id = new_id
        self._review_json = review.model_dump_json() if review else ""
        self._edited = {}
        if review is not None:
            # a refused submission's message ("already decided") stays until a new review shows
            self.review_error = ""

    def _review(self) -> PendingReview | None:
        return PendingReview.model_validate_json(self._review_json) if self._review_json else None

    def _card(self, index: Any) -> CardRow | None:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.cards):
            self.review_error = "That card does not exist (the review may have changed); reload the page."
            return None
        return self.cards[index]

    def _set(self, index: int, **changes: Any) -> None:
        cards = list(self.cards)
        card = cards[index]
        for key, value in changes.items():
            setattr(card, key, value)
        cards[index] = card
        self.cards = cards

    @rx.var
    def decided_count(self) -> int:
        """How many cards have a complete decision."""
        return sum(1 for c in self.cards if self._complete(c))

    @staticmethod
    def _complete(card: CardRow) -> bool:
        if card.choice == "edit":
            return not card.editing and not card.edit_error
        if card.choice == "respond":
            return bool(card.answer.strip())
        return card.choice in ("approve", "reject")

    @rx.var
    def all_decided(self) -> bool:
        """True when every card has a complete decision."""
        return bool(self.cards) and all(self._complete(c) for c in self.cards)

    @rx.var
    def can_approve_all(self) -> bool:
        """Offered while some card is undecided and every undecided card allows approve."""
        undecided = [c for c in self.cards if c.choice == ""]
        return bool(undecided) and all("approve" in c.allowed for c in undecided)

    @rx.var
    def approve_all_label(self) -> str:
        """"Approve all", or "Approve the rest" once some card is decided (those decisions stay)."""
        return "Approve the rest" if any(c.choice for c in self.cards) else "Approve all"

    @rx.var
    def submit_label(self) -> str:
        """E.g. "Submit 3 decisions"."""
        n = len(self.cards)
        return f"Submit {n} decision{'s' if n != 1 else ''}"

    @rx.event
    def choose(self, index: int, kind: str) -> None:
        """Pick ``approve``, ``edit``, ``reject`` or ``respond`` on a card (only if allowed)."""
        card = self._card(index)
        if card is None:
            return
        if kind not in card.allowed:
            self._set(index, error=f"{str(kind).capitalize()} is not allowed for {card.tool_name}.")
            return
        self.review_error = ""
        if kind == "edit":
            self._set(index, choice="edit", editing=True, edit_error="", error="")
        else:
            self._edited.pop(index, None)
            self._set(index, choice=kind, editing=False, edit_error="", error="")

    @rx.event
    def cancel_edit(self, index: int) -> None:
        """Close the editor without deciding."""
        if self._card(index) is None:
            return
        self._edited.pop(index, None)
        self._set(index, choice="", editing=False, edit_error="")

    @rx.event
    def save_edit(self, index: int, text: str) -> None:
        """Check the editor's JSON against the tool's schema; on success the card is decided as edit."""
        self._save_edit(index, text)

    @rx.event
    def check_edit(self, form_data: dict[str, Any]) -> None:
        """"Check edit" (the editor's form: ``index`` and ``args`` fields); same checks as save_edit."""
        raw = form_data.get("index") if isinstance(form_data, dict) else None
        try:
            index = int(raw) if isinstance(raw, str | int) and not isinstance(raw, bool) else -1
        except ValueError:
            index = -1
        self._save_edit(index, form_data.get("args") if isinstance(form_data, dict) else None)

    def _save_edit(self, index: Any, text: Any) -> None:
        card = self._card(index)
        review = self._review()
        if card is None or review is None or not isinstance(text, str):
            return
        if "edit" not in card.allowed:
            self._set(index, error=f"Edit is not allowed for {card.tool_name}.")
            return
        try:
            args = parse_args_json(text)
            validate_edit_args(review, index, args, get_service().validators)
        except ReviewError as exc:
            self._edited.pop(index, None)
            self._set(index, choice="edit", editing=True, edit_error=exc.message)
            return
        self._edited[index] = args
        self._set(index, choice="edit", editing=False, edit_error="", args_json=json.dumps(args, indent=2, ensure_ascii=False))

    @rx.event
    def set_reason(self, index: int, text: str) -> None:
        """The optional reason of a reject."""
        if self._card(index) is None or not isinstance(text, str):
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self._set(index, error=f"The reason is too long (limit {MAX_MESSAGE_CHARS:,} characters).")
            return
        self._set(index, reason=text, error="")

    @rx.event
    def set_answer(self, index: int, text: str) -> None:
        """The reviewer's answer for a respond decision (required)."""
        if self._card(index) is None or not isinstance(text, str):
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self._set(index, error=f"The answer is too long (limit {MAX_MESSAGE_CHARS:,} characters).")
            return
        self._set(index, answer=text, choice="respond", error="")

    def _decisions(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for card in self.cards:
            if card.choice == "edit" and card.index in self._edited:
                out.append({"type": "edit", "edited_action": {"name": card.tool_name, "args": self._edited[card.index]}})
            elif card.choice == "reject":
                out.append({"type": "reject", **({"message": card.reason.strip()} if card.reason.strip() else {})})
            elif card.choice == "respond":
                out.append({"type": "respond", "message": card.answer})
            elif card.choice == "approve":
                out.append({"type": "approve"})
        return out

    @rx.event
    async def submit(self):
        """Send all decisions at once; the server checks them against the checkpoint first."""
        return await self._submit()

    async def _submit(self):
        if not self.cards:
            if not self.streaming:  # a second click while the first submission runs says nothing
                self.review_error = "Nothing to submit: this review was already decided or is no longer pending."
            return
        decisions = self._decisions()
        service = get_service()
        try:
            await service.submit_review(
                self.tid, self.interrupt_id, decisions, reviewer=self.reviewer or "anonymous", owner=self.browser_id
            )
        except ReviewError as exc:
            if exc.code == "stale":
                view = await service.load(self.tid, owner=self.browser_id)
                self._show(None)
                await self._apply_view(view)
                self.review_error = exc.message
                return ChatState.watch
            if exc.card_index is not None and 0 <= exc.card_index < len(self.cards):
                self._set(exc.card_index, error=exc.message)  # shown on its card, not twice
                self.review_error = ""
            else:
                self.review_error = exc.message
            return
        except ThreadError as exc:
            self.review_error = exc.message
            return
        self._show(None)
        self._begin_stream()
        return ChatState.watch

    @rx.event
    async def approve_all(self):
        """Approve every card the reviewer has not decided yet, then submit.

        Decisions already made (a reject with its reason, a checked edit, an answer) are kept; a
        card whose edit is still open is not overwritten: the reviewer is asked to finish it.
        """
        open_edits = [c for c in self.cards if c.choice == "edit" and (c.editing or c.index not in self._edited)]
        if open_edits:
            card = open_edits[0]
            self._set(card.index, error="Finish this edit (Check edit) or cancel it before approving the rest.")
            self.review_error = ""
            return
        for card in list(self.cards):
            if card.choice == "" and "approve" in card.allowed:
                self._set(card.index, choice="approve", editing=False, edit_error="", error="")
        return await self._submit()

