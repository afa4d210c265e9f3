"""``PreviewCache`` (security review F9): previews of write statements run under a cap of their own,
once per key, whatever the number of tabs asking."""

from __future__ import annotations

import asyncio
import threading

from hitl_app.desk.previews import PreviewCache


async def test_no_more_previews_run_at_once_than_the_cap_and_each_key_runs_once():
    cache = PreviewCache(at_once=2)
    release = threading.Event()
    lock = threading.Lock()
    running = 0
    most = 0
    started: asyncio.Queue[None] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def compute():
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        loop.call_soon_threadsafe(started.put_nowait, None)
        assert release.wait(60), "never released"
        with lock:
            running -= 1
        return None

    keys = [("interrupt-1", "owner-a", i, f"hash-{i}") for i in range(5)]
    # ten tabs: each key asked twice
    asks = [asyncio.create_task(cache.get(key, compute)) for key in keys + keys]
    for _ in range(2):  # the cap's two start ...
        await asyncio.wait_for(started.get(), 60)
    for _ in range(20):  # ... and no third is let in while they run (none can finish before release)
        await asyncio.sleep(0)
    assert started.empty() and most == 2
    release.set()
    await asyncio.wait_for(asyncio.gather(*asks), 60)
    assert most == 2, "more previews ran at once than the cap"
    assert cache.computed == 5, "a key was computed more than once for its tabs"
