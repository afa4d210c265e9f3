"""Following the open thread's runs for one tab: the live text as it streams, then the checkpoint.

A Reflex state mixin of ``ChatState`` (which provides ``tid``, ``streaming``, ``live_key``,
``read_only``, ``_watch_id`` and the view helpers ``_apply_view``, ``_begin_stream``,
``_new_live_key``, ``_run_ended`` and ``_empty``). ``watch`` is the tab's one watcher
(``live.WATCHERS``); it re-reads the session as it goes and empties the tab when it is gone.
"""

# Tested by: tests/e2e/test_streaming.py, tests/integration/ui/test_tab_state.py

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.auth.cookie import session_key
from hitl_app.runtime import get_choices, get_service
from hitl_app.threads.views import ThreadView
from hitl_app.ui.state import live
from hitl_app.ui.state.live import WATCH_IDLE_S, WATCHERS, Follow, Retired, SignedOut, closing, live_script, may_follow
from hitl_app.ui.state.session import owner_of, session_principal, sign_in_redirect
from hitl_app.ui.state.thread_list import ThreadListState
from hitl_app.ui.state.workspace import WorkspaceState


class RunFollowMixin(rx.State, mixin=True):
    """The tab's watcher of the open thread's runs (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ChatState
        tid: str
        streaming: bool
        live_key: str
        read_only: bool
        _watch_id: str

        async def _apply_view(self, view: ThreadView, viewer: Principal | None = None, previews: bool = True) -> None: ...
        async def _fill_previews(self, viewer: Principal | None = None) -> None: ...
        def _begin_stream(self) -> None: ...
        def _new_live_key(self) -> str: ...
        async def _run_ended(self, outcome: str | None, error: str | None) -> None: ...
        async def _empty(self) -> None: ...

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
                follow.session = session_key(self.router.headers.cookie)
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
        read while the session is re-read (``settled_view``) and this person's kept choices on a
        pending review are read (``CardChoices.read_ahead``). A review's cards (their buttons, rights,
        grants, deadline) go to the page first; the person's kept choices on them and their effect
        previews right after, in a second delta (``_fill_previews``; issue 23: a review the run just
        raised has no kept choice yet but in a rare race, and the card is not held for that read)."""
        pending = event.view.pending if event.view is not None else None
        if pending is not None and follow.viewer is not None:
            get_choices().read_ahead(pending.interrupt_id, follow.viewer)
        view = await live.settled_view(get_service(), follow, event, lambda: self._check_session(follow))
        async with self._if_mine(follow):
            if view is not None:  # the run's own view is every tab's: this tab keeps its viewer's read_only
                await self._apply_view(view.model_copy(update={"read_only": self.read_only}) if view is event.view else view,
                                       follow.viewer, previews=False)  # the session was re-read beside the view
            follow.key, follow.seq = self._new_live_key(), 0
            if event.kind == "ended":
                await self._run_ended(event.outcome, event.error)
        if view is not None and view.pending is not None:
            async with self._if_mine(follow):
                await self._fill_previews(follow.viewer)
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
