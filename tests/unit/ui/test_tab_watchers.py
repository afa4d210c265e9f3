"""``TabWatchers``: one watcher per tab; ``following`` tells whether a tab's live watcher follows a thread."""

from __future__ import annotations

import asyncio

from hitl_app.ui.state.live import TabWatchers


async def _watcher(watchers: TabWatchers, tid: str, ready: asyncio.Event, stop: asyncio.Event) -> None:
    follow = watchers.enter("tab")
    follow.tid = tid
    ready.set()
    try:
        await stop.wait()
    finally:
        watchers.leave(follow)


def test_following_only_while_the_watcher_runs_on_that_thread() -> None:
    async def scenario() -> list[bool]:
        watchers = TabWatchers()
        seen = [watchers.following("tab", "t1")]
        ready, stop = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(_watcher(watchers, "t1", ready, stop))
        await ready.wait()
        seen += [watchers.following("tab", "t1"), watchers.following("tab", "t2"), watchers.following("other", "t1")]
        stop.set()
        await task
        seen.append(watchers.following("tab", "t1"))
        return seen

    assert asyncio.run(scenario()) == [False, True, False, False, False]


def test_a_newer_watcher_replaces_the_old_one_and_retire_ends_it() -> None:
    async def scenario() -> list[bool]:
        watchers = TabWatchers()
        r1, r2, stop = asyncio.Event(), asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(_watcher(watchers, "t1", r1, stop))
        await r1.wait()
        second = asyncio.create_task(_watcher(watchers, "t2", r2, stop))
        await r2.wait()
        await asyncio.gather(first, return_exceptions=True)  # cancelled by the newer one
        seen = [first.cancelled(), watchers.following("tab", "t1"), watchers.following("tab", "t2")]
        watchers.retire("tab")
        await asyncio.gather(second, return_exceptions=True)
        return [*seen, watchers.following("tab", "t2")]

    assert asyncio.run(scenario()) == [True, False, True, False]
