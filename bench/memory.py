"""Section 8 (issue 23): what a worker holds with no tab open, and per idle tab and per open review.

Two back-end-only servers (1 gunicorn worker, SQLite, demo model), each on its own copy of one data
folder seeded with ``max(counts) + 1`` threads (one for the warm-up tab) that each end in a real pending
review (``seed_reviews``: a
real turn through ``ThreadService.start_turn``, so the review is the HITL middleware's own):

- **no tab**: RSS and PSS (MB) of each process of the app (the Reflex CLI, the gunicorn master that
  imported the app, the worker) right after start, and again after one tab came and went (the first
  tab loads the agent, its tools and the thread code lazily).
- **idle tabs**: on the first server, tabs are opened on new, empty threads (the page's ``on_load``
  runs and the tab's watcher starts), cumulatively up to each count in ``counts`` (1, 100, 1,000),
  and the worker's PSS is read at each count with every tab still open. Per tab = (PSS with the tabs
  - PSS before the first) / tabs.
- **open reviews**: the same on the second server, with each tab on its own seeded thread and waiting
  until its card is in the tab's state (the review's rows read, the card built and sent).

Counts are cumulative, with no tab closed in between, so freed memory is never counted as reused
(Python keeps its arenas after a close). "Flat" is per-tab KB at the largest count <= 1.2x the
per-tab KB at the middle count; the 1-tab figure is one allocation step and is reported only.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from bench.scale_infra import process_memory, start_app
from bench.scale_rows import connect_tabs
from bench.ws import REVIEW, ReflexClient

SETTLE_S = 3.0
"""Seconds to let a count's tabs finish their loads (watchers started, deltas sent) before reading memory
(the smoke run waits less: its figures only show the section works)."""


async def _seed(data_dir: Path, n: int) -> list[str]:
    from hitl_app.runtime import open_runtime
    from hitl_app.settings import Settings

    settings = Settings(HITL_DATA_DIR=data_dir, HITL_DEMO_WPS=0, HITL_MAX_RUNS=1000, HITL_RUNS_PER_OWNER=1000,
                        HITL_MESSAGES_PER_MINUTE=100_000)
    tids: list[str] = []
    async with open_runtime(settings) as rt:
        for i in range(n):
            tid = str(uuid.uuid4())
            await rt.service.start_turn(tid, f"email alice@example.com about report {i}: it is ready", owner=None)
            await rt.service.wait(tid, timeout=120)
            if (await rt.service.load(tid)).pending is None:
                raise RuntimeError(f"seeding thread {i} left no pending review")
            tids.append(tid)
    return tids


def seed_reviews(data_dir: Path, n: int) -> list[str]:
    """``n`` threads in ``data_dir``, each with one real pending review (send_email); returns their ids
    (UUID strings, in the order seeded).

    Raises RuntimeError if a turn left no pending review."""
    return asyncio.run(_seed(data_dir, n))


def _worker(mem: dict[str, Any], pid: int | None = None) -> dict[str, Any]:
    """The one worker's ``{"role", "pid", "rss_mb", "pss_mb"}`` in ``process_memory``'s figures.

    Raises RuntimeError when there is none, or (``pid``) it is another process: the worker restarted,
    so the memory before and after are not of one process."""
    workers = [p for p in mem["processes"] if p["role"] == "worker"]
    if len(workers) != 1 or (pid is not None and workers[0]["pid"] != pid):
        raise RuntimeError(f"expected the one worker {pid or ''} of the app, found {workers}")
    return workers[0]


async def _open(url: str, token: str, threads: list[str], want_card: bool, errors: list[str]) -> list[ReflexClient]:
    """``connect_tabs`` on ``threads``; with ``want_card``, then waits (120 s at most) until each connected
    tab holds its review's cards, appending ``"card: ..."`` to ``errors`` for a tab that does not."""
    opened = await connect_tabs(url, token, threads, errors)
    if want_card:
        waits = await asyncio.gather(
            *(c.wait_for(lambda c=c: bool(c.get(REVIEW, "cards")), timeout=120) for c in opened), return_exceptions=True)
        errors += [f"card: {type(w).__name__}: {w}" for w in waits if isinstance(w, BaseException)]
    return opened


async def _grow(server: Any, token: str, counts: list[int], threads: list[str] | None, settle_s: float) -> dict[str, Any]:
    """Tabs opened cumulatively to each of ``counts``; ``threads`` = the seeded review threads, the last one
    for the warm-up tab (None = new threads); ``settle_s`` seconds before each reading.

    Returns ``{"after_first_tab": process_memory(...), "steps": [{"tabs", "open", "open_s", "worker",
    "kb_per_tab"}], "errors", "error_samples"}`` (``open``: tabs connected so far; ``kb_per_tab``: the
    worker's PSS growth since ``after_first_tab`` in KB, per open tab). Raises RuntimeError when the
    warm-up tab fails (its lazy loads would be counted as the tabs' memory) or the worker changed."""
    pid = server.proc.pid
    warm_errors: list[str] = []
    warm = await _open(server.url, token, [threads[-1] if threads else str(uuid.uuid4())], bool(threads), warm_errors)
    if warm_errors or not warm:
        raise RuntimeError(f"the warm-up tab failed: {warm_errors}")
    await asyncio.gather(*(c.close() for c in warm))
    await asyncio.sleep(settle_s)
    base = process_memory(pid)
    worker_pid = _worker(base)["pid"]
    tabs: list[ReflexClient] = []
    errors: list[str] = []
    steps = []
    tried = 0  # threads handed out so far (a failed one is not tried again)
    for count in counts:
        t0 = time.monotonic()
        new = threads[tried:count] if threads else [str(uuid.uuid4()) for _ in range(count - tried)]
        tried = count
        tabs += await _open(server.url, token, new, bool(threads), errors)
        open_s = time.monotonic() - t0
        await asyncio.sleep(settle_s)
        mem = process_memory(pid)
        grew = _worker(mem, worker_pid)["pss_mb"] - _worker(base)["pss_mb"]
        steps.append({"tabs": count, "open": len(tabs), "open_s": round(open_s, 1), "worker": _worker(mem, worker_pid),
                      "kb_per_tab": round(grew * 1024 / max(1, len(tabs)), 1)})
    for c in tabs:
        errors += c.errors
    await asyncio.gather(*(c.close() for c in tabs), return_exceptions=True)
    return {"after_first_tab": base, "steps": steps, "errors": len(errors), "error_samples": errors[:5]}


def run_memory(tmp: Path, counts: list[int], settle_s: float = SETTLE_S, source_root: Path | None = None) -> dict[str, Any]:
    """Section 8's figures (see the module docstring); ``counts`` ascending, e.g. ``[1, 100, 1000]``;
    ``settle_s``: seconds before each memory reading; ``source_root``: the source tree whose app is
    measured (default this one: a before/after run).

    Returns ``{"counts", "seed_s", "no_tab": process_memory(...) right after start, "idle_tabs":
    _grow(...), "open_reviews": _grow(...)}`` (memory in MB, per-tab figures in KB, times in seconds).
    Raises RuntimeError when seeding or a server start fails, or ``_grow`` does."""
    seeded = tmp / "seeded"
    t0 = time.monotonic()
    threads = seed_reviews(seeded, max(counts) + 1)
    out: dict[str, Any] = {"counts": counts, "seed_s": round(time.monotonic() - t0, 1)}
    for key, review_threads in (("idle_tabs", None), ("open_reviews", threads)):
        data = tmp / key
        shutil.copytree(seeded, data)
        server = start_app(data, workers=1, wps=0, frontend=False, source_root=source_root)
        try:
            if key == "idle_tabs":
                out["no_tab"] = process_memory(server.proc.pid)
            token = server.sign_in("bench-memory").token
            out[key] = asyncio.run(_grow(server, token, counts, review_threads, settle_s))
        finally:
            server.stop()
    return out
