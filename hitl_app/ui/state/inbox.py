"""The review inbox of the signed-in person: the /reviews page, the sidebar count, the tab title
and the browser notification, kept live.

Every page with the sidebar loads it (``InboxState.refresh``) and starts the tab's one inbox
watcher (``InboxState.watch``, a background task). The watcher waits on the review signal
(``bus.reviews``: any worker announces a new, drafted or decided review) and re-reads this
person's inbox from the database, re-checking the sign-in session each time (at the same time
as the read, ``checked_read``: nothing is shown unless the session still holds); it also re-reads
every ``HITL_INBOX_REFRESH_S`` seconds (30) so the waiting times move. A new review that cannot concern the
person (its announcement's audience, ``hitl_app.review.audience``, as of their last read) is
skipped without a read. Each read is handed to the page's
``hitlInbox`` (``assets/js/inbox.js``), which sets the title and, when the tab is hidden and the
person allowed it, shows a notification for a card it has not shown before.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import reflex as rx
from reflex.event import EventSpec

from hitl_app.auth.accounts import is_disabled
from hitl_app.auth.cookie import session_key
from hitl_app.auth.types import Principal
from hitl_app.review.audience import Audience, policy_key
from hitl_app.review.shown import shown_controls
from hitl_app.runtime import get_inbox, get_runtime
from hitl_app.store.inbox import PAGE_SIZE, InboxItem
from hitl_app.ui.rows import thread_id_of
from hitl_app.ui.state.live import TabWatchers, tab_connected
from hitl_app.ui.state.session import SIGN_IN_PAGE, SessionState, session_principal, sign_in_redirect
from hitl_app.ui.state.thread_list import ThreadListState

log = logging.getLogger("hitl_app.ui")

INBOX_JS_SRC = "/js/inbox.js"
"""Defines ``window.hitlInbox`` and the notification helpers (loaded in the page head)."""
ARGS_CHARS = 140
"""Longest arguments summary on an inbox row, in characters."""


@dataclass
class InboxRow:
    """One card waiting for the person, as the page shows it (all text, by the server's clock)."""

    key: str
    thread_id: str
    thread_title: str
    interrupt_id: str
    tool: str
    args_text: str
    asked_by: str
    waited: str
    needs: str
    raised_ms: int = 0  # when the review was raised and when this row was read, epoch ms, server clock:
    server_ms: int = 0  # the page counts "waiting 53 s" on from them, as the card does (QA C6)


def waited_text(seconds: float) -> str:
    """A wait in the card's own words (``assets/waited.js`` ``waitedLabel``, without "waiting"):
    ``"53 s"``, ``"4 min"``, ``"2 h 5 min"``, ``"3 days"``, so the inbox and the card agree (QA C6:
    the inbox said "just now" where the card said "waiting 53 s")."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h {minutes % 60} min"
    return f"{hours // 24} days"


def args_text(args: Any) -> str:
    """``amount: 500 · to: Bob``: the arguments on one line, cut at ``ARGS_CHARS``."""
    parts = [f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in dict(args).items()]
    line = shown_controls(" ".join(" · ".join(parts).split()))
    return line if len(line) <= ARGS_CHARS else line[: ARGS_CHARS - 1] + "…"


def needs_text(item: InboxItem) -> str:
    """``"needs 1 approval"``, ``"needs 1 more approval (2 in all)"``, or for a final-only card
    (e.g. ``respond``) ``"needs your answer"``."""
    left, needed = item.approvals_left, item.approvals_needed
    if "approve" not in item.pending.card.allowed_decisions and "edit" not in item.pending.card.allowed_decisions:
        return "needs your answer"
    unit = "approval" if left == 1 else "approvals"
    return f"needs {left} {unit}" if left == needed else f"needs {left} more {unit} ({needed} in all)"


def row_of(item: InboxItem) -> InboxRow:
    """The page row of one inbox item."""
    p = item.pending
    return InboxRow(
        key=f"{p.interrupt_id}:{p.action_index}", thread_id=p.thread_id, thread_title=p.thread_title,
        interrupt_id=p.interrupt_id, tool=p.card.tool, args_text=args_text(p.card.args), asked_by=p.asked_by,
        waited=waited_text(item.waited_seconds), needs=needs_text(item),
        raised_ms=(now := int(time.time() * 1000)) - int(item.waited_seconds * 1000), server_ms=now,
    )


@dataclass
class InboxRead:
    """One read of a person's inbox for the page.

    Attributes:
        rows: the shown pages, oldest first (``pages`` x ``PAGE_SIZE`` cards, about).
        total: cards waiting in all (see ``store.inbox.InboxPage.total``).
        next_after: the cursor of "Load more" (``""``: everything is shown).
        newest: the newest waiting cards when not all are shown (for notifications of new ones).
    """

    rows: list[InboxRow]
    total: int
    next_after: str
    newest: list[InboxRow]


NEWEST = 5
"""Newest cards handed to the page for notifications when the shown pages do not reach them."""


def inbox_script(read: InboxRead) -> EventSpec:
    """The page call with this read: count (title) and the cards (notifications for new ones)."""
    shown = {r.key for r in read.rows}
    cards = [{"key": r.key, "thread_id": r.thread_id, "tool": r.tool, "asked_by": r.asked_by, "args": r.args_text}
             for r in [*read.rows, *(n for n in read.newest if n.key not in shown)]]
    return rx.call_script(f"hitlInbox({json.dumps({'count': read.total, 'cards': cards}, ensure_ascii=False)})")


async def read_inbox(who: Any, open_thread: str, pages: int = 1) -> tuple[InboxRead, str]:
    """The inbox of ``who`` (a Principal), read now in one database session: the first ``pages``
    pages, the total and, when there is more, the newest cards; with the interrupt id of a card
    of ``open_thread`` (the thread on screen, "" for none) that waits for them, else ``""``."""
    view = await get_inbox().first_pages(who, limit=max(1, pages) * PAGE_SIZE, newest=NEWEST, thread_id=open_thread)
    page = view.page
    read = InboxRead([row_of(i) for i in page.items], page.total, page.next_after, [row_of(i) for i in view.newest])
    return read, (view.here[0].pending.interrupt_id if view.here else "")


async def rows_for(who: Any, open_thread: str, pages: int = 1) -> InboxRead:
    """``read_inbox``, and a card of ``open_thread`` is noted as opened, so no reminder mail goes
    out for it."""
    read, opened = await read_inbox(who, open_thread, pages)
    if opened:
        await get_inbox().note_opened(opened, who)
    return read


async def checked_read(
    session: str, who: Principal | None, open_thread: str, pages: int
) -> tuple[Principal | None, InboxRead | None]:
    """The watcher's read: the sign-in session ``session`` re-read now, and the inbox of the
    person it gives. ``who``: the person of the last read (None: unknown); their inbox is read
    AT THE SAME TIME as the session (two connections), so the session check adds no wait. The
    read is used only when the session still gives exactly ``who``; another person (a changed
    role or name) is read again, and a card is noted as opened only then.

    Returns ``(None, None)`` when signed out (expired, signed out, disabled), else the person
    and their read."""
    if who is None:
        who = await session_principal(session)
        return who, (None if who is None else await rows_for(who, open_thread, pages))
    now, (read, opened) = await asyncio.gather(session_principal(session), read_inbox(who, open_thread, pages))
    if now is None:
        return None, None
    if now != who:
        return now, await rows_for(now, open_thread, pages)
    if opened:
        await get_inbox().note_opened(opened, now)
    return now, read


def concerned(who: Any, policy: str) -> Callable[[Audience], bool]:
    """The watcher's test of an announcement's audience: ``who`` (the person of its last read,
    None: unknown, so every announcement concerns them) may be waited for; ``policy``: the
    ``policy_key`` of this worker's review rights."""
    return lambda audience: who is None or audience.concerns(who, policy)


async def tabs_signed_out(account_id: int) -> None:
    """After a sign-out (``hitl_app.auth.http`` ``signed_out``): every open tab of ``account_id``, on
    any worker, re-reads its session now and, signed out, goes to the sign-in page (the review
    signal addressed to that account only: no other person's inbox re-reads)."""
    inbox = get_inbox()
    try:
        await inbox.signal.announce(Audience(owner_id=str(account_id), policy=policy_key(inbox.rights)))
    except Exception:  # noqa: BLE001 - the session is ended anyway; the tabs find out at their next event
        log.exception("open tabs not told of a sign-out")


async def signed_out_redirect(last: Principal | None) -> EventSpec:
    """The sign-in page for a tab whose session ended; it says so when ``last`` (the tab's person as
    last read) was disabled, not simply signed out."""
    if last is not None and await is_disabled(engine=get_runtime().engines.async_, account_id=last.account_id):
        return rx.redirect(f"{SIGN_IN_PAGE}?error=was_disabled")
    return sign_in_redirect()


_ON_THREAD_PAGE: list[Any] = []


def add_announcement_handler(handler: Any) -> None:
    """Add an event handler the inbox watcher sends when the review signal announces a change
    on a thread page (``ReviewState.reread``: the open thread's cards may have changed; its
    module adds it when imported). Handlers are sent in the order added, before the sidebar's."""
    if handler not in _ON_THREAD_PAGE:
        _ON_THREAD_PAGE.append(handler)


INBOX_WATCHERS = TabWatchers()
"""This process's inbox watcher per tab (a new one retires the previous one at once)."""


class InboxState(SessionState):
    """The cards waiting for the signed-in person (``rows``), their count, and whether the
    browser may show notifications (``notify``: ``default``, ``granted``, ``denied`` or
    ``unsupported``, as the page reported it)."""

    rows: list[InboxRow] = []
    total: int = 0
    next_after: str = ""
    pages: int = 1
    loading_more: bool = False
    loaded: bool = False
    notify: str = ""
    _watch_id: str = ""
    _read_version: int = -1  # the review signal's version before the last ``refresh`` read (-1: none)

    @rx.var
    def count(self) -> int:
        """How many cards wait in all (the sidebar badge, the tab title, the page's count)."""
        return self.total

    async def _read(self) -> list[Any] | None:
        """Re-read the inbox for the signed-in person; None when signed out (the rows empty).
        Private: call inside the state lock (the watcher uses ``rows_for`` outside it, then ``_show``)."""
        who = await self._require_principal()
        return self._show(None if who is None else await rows_for(who, thread_id_of(self.router.url.path), self.pages))

    def _show(self, read: InboxRead | None) -> list[Any] | None:
        """Put a read on the page (None: signed out, the rows empty); returns the page call."""
        if read is None:
            self.rows, self.total, self.next_after, self.pages, self.loaded = [], 0, "", 1, False
            return None
        if read.rows != self.rows:
            self.rows = read.rows
        self.total, self.next_after, self.loaded = read.total, read.next_after, True
        return [inbox_script(read)]

    @rx.event
    async def load_more(self):
        """"Load more": the next page after the shown ones, appended (the watcher then re-reads
        this many pages)."""
        if not self.next_after or self.loading_more:
            return None
        who = await self._require_principal()
        if who is None:
            return sign_in_redirect()
        self.loading_more = True
        try:
            page = await get_inbox().page_for(who, after=self.next_after)
        except ValueError:  # a cursor from another version: start again
            self.pages = 1
            return await self._read()
        finally:
            self.loading_more = False
        shown = {r.key for r in self.rows}
        self.rows = [*self.rows, *(r for i in page.items if (r := row_of(i)).key not in shown)]
        self.next_after, self.pages = page.next_after, self.pages + 1
        self.total = max(page.total, len(self.rows))
        return None

    @rx.event
    async def refresh(self):
        """on_load of every page with the sidebar: read the inbox and start the tab's watcher."""
        try:
            # the signal's version before the read: the watcher starts from it, so an announcement
            # between this read and the watcher's start is not missed
            self._read_version = await get_inbox().signal.version()
            events = await self._read()
        except RuntimeError:  # the server is not started (compile time)
            return None
        if events is None:
            return sign_in_redirect()
        return [*events, rx.call_script("hitlInboxPermission()", callback=InboxState.set_notify), InboxState.watch]

    async def _read_and_show(
        self, session: str, who: Principal | None, open_thread: str, pages: int, watch_id: str | None = None
    ) -> tuple[Principal | None, list[Any] | None, int] | None:
        """For a background handler: the inbox read outside the tab's lock (``checked_read``), shown
        under it, and read again when "Load more" added a page meanwhile. The person's name and role
        follow the read (e.g. the Metrics link after a role change).

        Returns ``(who, events, pages)`` (``events`` None: signed out; ``pages``: as read), or None when
        ``watch_id`` is given and a newer watcher took over the tab (nothing shown)."""
        while True:
            who, read = await checked_read(session, who, open_thread, pages)
            async with self:
                if watch_id is not None and self._watch_id != watch_id:
                    return None
                if read is not None and self.pages != pages:
                    pages = self.pages
                    continue
                events = self._show(read)
                if who is not None:
                    self._show_identity(who)
                else:
                    self._forget_identity()
                return who, events, pages

    @rx.event(background=True)
    async def reread(self):
        """Re-read the inbox now: after this tab's own decision or Undo the count and the title
        follow at once, not only when the review signal reaches the watcher.

        A background handler, as the watcher: the session and the inbox are read outside the tab's
        lock (``checked_read``), which is taken only to show the read. A submission returns this
        event beside the run it resumed, whose first text needs that lock: it no longer waits
        behind this read (issue 23, submit -> first resumed token)."""
        session, open_thread = session_key(self.router.headers.cookie), thread_id_of(self.router.url.path)
        async with self:
            pages = self.pages
        shown = await self._read_and_show(session, None, open_thread, pages)
        events = shown[1] if shown is not None else None
        if events is None:
            yield sign_in_redirect()
            return
        for event in events:
            yield event
        yield ThreadListState.refresh

    @rx.event
    def set_notify(self, permission: Any) -> None:
        """What the page says about notifications (``Notification.permission``)."""
        if permission in ("default", "granted", "denied", "unsupported"):
            self.notify = permission

    @rx.event(background=True)
    async def watch(self):
        """Re-read the inbox whenever the review signal says something changed (any worker), or
        every ``HITL_INBOX_REFRESH_S`` seconds (``Settings.inbox_refresh_seconds``); on a thread page an
        announcement also re-reads the shown cards
        (``add_announcement_handler``). Ends when the tab is gone, signed out, or a newer watcher took over."""
        # fixed for this watcher's life: the socket's cookie and the page (a navigation runs
        # refresh, which starts a new watcher); the pages shown are re-read at each show
        token, path = self.router.session.client_token, str(self.router.url.path)
        session = session_key(self.router.headers.cookie)
        path_is_thread = path.startswith("/thread/")
        me = INBOX_WATCHERS.enter(token)
        try:
            async with self:
                self._watch_id, pages, read_version = me.watch_id, self.pages, self._read_version
            signal, policy = get_inbox().signal, policy_key(get_inbox().rights)
            refresh_s = get_runtime().settings.inbox_refresh_seconds
            version, who = await signal.version(), await session_principal(session)
            if 0 <= read_version < version:  # announced since the page's read: look at those first
                version = read_version
            while True:
                announced, version = await signal.wait_for(version, refresh_s, concerned(who, policy))
                if not INBOX_WATCHERS.is_current(me):
                    return
                # the version before the read (a later change wakes us again), with the tab check
                connected, version = await asyncio.gather(tab_connected(token), signal.version())
                if not connected:
                    return
                # the database is read outside the tab's lock, and without taking it first (one
                # lock per announcement): a watcher another worker's newer one retired finds out
                # below, before it shows anything
                last, shown = who, await self._read_and_show(session, who, thread_id_of(path), pages, me.watch_id)
                if shown is None:
                    return
                who, events, pages = shown
                if events is None:
                    yield await signed_out_redirect(last)
                    return
                for event in events:
                    yield event
                if announced and path_is_thread:  # the open thread's cards (and its sidebar row) may have changed too
                    for handler in _ON_THREAD_PAGE:
                        yield handler
                    yield ThreadListState.refresh
        finally:
            INBOX_WATCHERS.leave(me)
