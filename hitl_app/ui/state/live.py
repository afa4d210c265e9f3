"""The live side of a tab: the append-only text calls, and one watcher per browser tab.

A tab's watcher (``ChatState.watch``, a background event handler) follows the open thread's runs
and sends the streamed text to the page as ``hitlLive`` calls (``assets/js/live.js``). A tab has
at most one watcher in a server process: a new one retires the previous one at once (its task is
cancelled), so repeated ``watch`` events, forged or from navigating, never pile up tasks.
"""

# Tested by: tests/e2e/test_streaming.py

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from reflex.event import Event

from hitl_app.errors import ThreadError

log = logging.getLogger("hitl_app.ui")

LIVE_JS_SRC = "/js/live.js"
"""Defines ``window.hitlLive`` (loaded in the page head, before the app's own code)."""
STICK_TO_BOTTOM_JS_SRC = "/js/stick_to_bottom.js"
"""Defines ``window.hitlStickToBottom`` (loaded in the page head; called when the thread mounts)."""
LIVE_CHECK_S = 0.5
"""How often (seconds) a watcher re-checks, between live deltas, that its tab still wants it."""
SESSION_CHECK_S = 5.0
"""How often (seconds) a streaming watcher re-reads its tab's sign-in session (signed out,
expired or disabled: the watcher stops and the tab is emptied)."""
WATCH_IDLE_S = 900
"""A tab's watcher waits this long (seconds) for a new run before it exits (restarted on any action)."""


def live_script(key: str, seq: int, text: str, reset: bool) -> Event:
    """The client call that appends ``text`` to the live bubble ``key`` (``window.hitlLive``).

    Append-only: each call carries only new text; ``reset`` replaces the text (a late joiner's
    snapshot, or the first delta of a bubble). ``seq`` numbers the calls of one key from 0, so a
    repeated or out-of-order call is ignored instead of duplicating text.

    Built as the ``Event`` that ``rx.call_script(code)`` becomes (``_call_script`` with
    ``javascript_code`` and no callback): one is sent per streamed token, and the ``EventSpec``
    route (Vars built, then decoded back) cost about ten times as much server CPU per token.
    """
    args = [key, seq, text, 1] if reset else [key, seq, text]
    code = f"hitlLive({json.dumps(args, ensure_ascii=False, separators=(',', ':'))})"
    return Event(name="_call_script", payload={"javascript_code": code, "callback": None})


@contextlib.asynccontextmanager
async def closing(iterator: AsyncIterator[Any]) -> AsyncIterator[AsyncIterator[Any]]:
    """``iterator``, closed on exit (``aclose``) even when its reader stops early or is cancelled,
    so a retired watcher's bus subscription ends at once rather than when it is garbage-collected."""
    try:
        yield iterator
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


class Retired(Exception):
    """Raised inside a watcher when its tab no longer wants it (a newer watcher, another thread)."""


class SignedOut(Retired):
    """Raised inside a watcher when its tab's sign-in session is gone (the tab goes to sign-in)."""


@dataclass
class Follow:
    """One watcher's position: its id, the tab and thread it follows, and the live bubble.

    ``key``/``seq``: the live bubble being appended to and the number of its last call (``""``
    and -1 before the first text of a run); ``saw_end``: the run being followed ended.
    """

    watch_id: str
    token: str
    tid: str = ""
    owner: str = ""
    viewer: Any = None
    session: str = ""
    key: str = ""
    seq: int = -1
    saw_end: bool = False
    last_check: float = field(default_factory=time.monotonic)
    last_session_check: float = field(default_factory=time.monotonic)

    def next_run(self) -> None:
        """Forget the bubble of the previous run (a new subscription starts from a snapshot)."""
        self.key, self.seq, self.saw_end, self.last_check = "", -1, False, time.monotonic()

    def check_due(self) -> bool:
        """True at most once per ``LIVE_CHECK_S``: time to re-check the tab under the state lock."""
        if time.monotonic() - self.last_check <= LIVE_CHECK_S:
            return False
        self.last_check = time.monotonic()
        return True


    def session_due(self) -> bool:
        """True at most once per ``SESSION_CHECK_S``: time to re-read the tab's sign-in session."""
        if time.monotonic() - self.last_session_check <= SESSION_CHECK_S:
            return False
        self.last_session_check = time.monotonic()
        return True


class TabWatchers:
    """Client token -> the tab's current watcher (its id and asyncio task), in this process.

    The state also records the watcher id (``ChatState._watch_id``) for a watcher left in another
    process; this registry is what retires a watcher in this one without waiting for it to wake.
    """

    def __init__(self) -> None:
        self._current: dict[str, tuple[Follow, asyncio.Task | None]] = {}

    def enter(self, token: str) -> Follow:
        """Make the running task the tab's watcher; the previous one is cancelled at once."""
        task = asyncio.current_task()
        follow = Follow(watch_id=uuid.uuid4().hex, token=token)
        previous = self._current.get(token)
        self._current[token] = (follow, task)
        if previous is not None and previous[1] is not None and previous[1] is not task:
            previous[1].cancel()
        return follow

    def is_current(self, follow: Follow) -> bool:
        """True while ``follow`` is its tab's watcher."""
        current = self._current.get(follow.token)
        return current is not None and current[0].watch_id == follow.watch_id

    def following(self, token: str, tid: str) -> bool:
        """True while the tab's watcher runs in this process and follows thread ``tid``: a new run
        of that thread wakes it (``RunBus.wait_for_run``), so the tab needs no new watcher."""
        current = self._current.get(token)
        return bool(tid) and current is not None and current[0].tid == tid and current[1] is not None and not current[1].done()

    def retire(self, token: str) -> None:
        """Cancel the tab's watcher, if any (the tab opened a thread it may not follow)."""
        current = self._current.pop(token, None)
        if current is not None and current[1] is not None and current[1] is not asyncio.current_task():
            current[1].cancel()

    def leave(self, follow: Follow) -> None:
        """Forget ``follow`` when its task ends (unless a newer watcher already took its place)."""
        if self.is_current(follow):
            del self._current[follow.token]

    def __len__(self) -> int:
        return len(self._current)


async def may_follow(service: Any, follow: Follow) -> bool:
    """True when ``follow``'s person may watch its thread: the owner (``follow.owner``), or someone
    who may see it read-only (``ThreadService.load`` with ``follow.viewer``: a card to decide)."""
    try:
        await service.check_access(follow.tid, follow.owner)
    except ThreadError:
        try:
            await service.load(follow.tid, viewer=follow.viewer)
        except ThreadError:
            return False
    return True


async def view_after(service: Any, follow: Follow, event: Any) -> Any:
    """The thread's ``ThreadView`` after run ``event`` (a boundary, or the end): the one the run
    published when it has no review, else ``ThreadService.load`` for ``follow.viewer`` (a review's
    cards differ per person), given the published view so that the checkpoint is not read twice."""
    if event.view is not None and event.view.pending is None:
        return event.view
    return await service.load(follow.tid, viewer=follow.viewer, ended=event.view)


async def settled_view(service: Any, follow: Follow, event: Any, check_session: Callable[[], Awaitable[None]]) -> Any:
    """``view_after`` read while ``check_session()`` re-reads the tab's session (it raises
    ``SignedOut`` when the session is gone: the view is then dropped, never shown). Read again
    when the person's account changed meanwhile (``follow.viewer``, e.g. a new role: the cards'
    buttons differ). Returns None (logged) when the view could not be read.
    """
    used = follow.viewer
    reading = asyncio.ensure_future(view_after(service, follow, event))
    try:
        await check_session()
    except BaseException:
        reading.cancel()
        raise
    if follow.viewer != used:
        reading.cancel()
        reading = asyncio.ensure_future(view_after(service, follow, event))
    try:
        return await reading
    except Exception:  # noqa: BLE001 - the caller shows it as a run error
        log.exception("reload failed thread=%s", follow.tid)
        return None


WATCHERS = TabWatchers()
"""This process's registry of tab watchers."""


TabCheck = Callable[[str], Awaitable[bool]]
"""Whether a client token's websocket is still connected to any worker (the app's own answer)."""

_TAB_CHECK: list[TabCheck] = []


def use_tab_check(check: TabCheck) -> None:
    """Install the app's answer to "is this tab still connected?" (``hitl_app.hitl_app`` calls it
    once, with a function that asks its event namespace's token manager)."""
    _TAB_CHECK[:] = [check]


async def tab_connected(token: str) -> bool:
    """False once the tab's websocket is gone from every worker (its watcher then ends); True
    when that cannot be told (no check installed, e.g. in unit tests, or the check failed)."""
    if not _TAB_CHECK:
        return True
    try:
        return await _TAB_CHECK[0](token)
    except Exception:  # noqa: BLE001 - unknown: keep the watcher (it ends with the process)
        return True
