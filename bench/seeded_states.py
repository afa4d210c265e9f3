"""Round 9 (issue 12): a server that has been up a while, on the embedded default, before and after.

``python -m bench.seeded_states --before-root <worktree of the commit before>`` starts the app on
its embedded defaults (1 worker, SQLite, Reflex's disk state) from each source tree in turn
(alternating which goes first each round), puts ``--files`` unexpired state files into its states
folder (what an hour of ~1,000 tabs leaves: ~10 substate files a tab, kept for the token
expiration, an hour by default), then measures:

- **quiet**: backend CPU seconds per minute with one connected tab and nothing streaming
  (``--window`` seconds);
- **sessions**: ``--sessions`` tabs each streaming ``stream <words> words`` at 20 words/s at the same
  moment: backend CPU seconds per 1,000 tokens, and per-token lag (word arrival in the bench's
  websocket client minus the model's emission time from the server's trace), p50 / p95 in ms.

One JSON line per run. Before the fix, Reflex's disk state manager listed and stat'ed every state
file after each pass of its write queue (``hitl_app/ui/state/disk.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.common import read_traces, tree_cpu_seconds
from bench.scale_infra import ROOT, start_app
from bench.ws import ReflexClient


async def _quiet_cpu_per_min(server: Any, window_s: float) -> float:
    """Backend CPU seconds per minute with one connected, idle tab."""
    tab = ReflexClient(server.url)
    await tab.connect(str(uuid.uuid4()))
    await asyncio.sleep(3)
    cpu0 = tree_cpu_seconds(server.proc.pid)
    await asyncio.sleep(window_s)
    cpu = tree_cpu_seconds(server.proc.pid) - cpu0
    await tab.close()
    return round(cpu * 60 / window_s, 2)


async def _sessions(server: Any, k: int, words: int) -> dict[str, float]:
    """K tabs streaming ``words`` words each at once: CPU s per 1,000 tokens and lag p50 / p95 (ms)."""
    clients = [ReflexClient(server.url) for _ in range(k)]
    await asyncio.gather(*(c.connect(str(uuid.uuid4())) for c in clients))
    await asyncio.sleep(1)
    cpu0 = tree_cpu_seconds(server.proc.pid)
    await asyncio.gather(*(c.send(f"stream {words} words") for c in clients))

    async def finish(c: ReflexClient) -> None:
        await c.wait_for(lambda: not c.streaming() and len(c.messages()) >= 2 and len(c.word_times) >= words,
                         timeout=words / 20 * 4 + 60)

    await asyncio.gather(*(finish(c) for c in clients))
    cpu = tree_cpu_seconds(server.proc.pid) - cpu0
    lags: list[float] = []
    for c in clients:
        traces = read_traces(server.data_dir / "trace", c.thread_id)
        lags += [(w - e) * 1000 for w, e in zip(c.word_times, traces[-1]["t"], strict=False)]
    await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    lags.sort()
    return {"cpu_s_per_1k": round(cpu / (k * words) * 1000, 3),
            "lag_p50_ms": round(lags[len(lags) // 2], 1), "lag_p95_ms": round(lags[int(len(lags) * 0.95)], 1)}


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print one JSON line per run; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m bench.seeded_states", description=__doc__)
    parser.add_argument("--before-root", type=Path, required=True, help="source tree of the commit before")
    parser.add_argument("--files", type=int, default=10_000, help="unexpired state files put in the states folder")
    parser.add_argument("--window", type=float, default=40.0, help="seconds of the quiet CPU window")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    sides = [("before", args.before_root.resolve()), ("after", ROOT)]
    for r in range(args.rounds):
        for side, root in sides if r % 2 == 0 else sides[::-1]:
            tmp = Path(tempfile.mkdtemp())
            server = start_app(tmp / "d", workers=1, wps=20, source_root=root)
            try:
                states = Path(server.app_root) / ".states"
                for _ in range(args.files):
                    (states / f"{uuid.uuid4().hex}.pkl").write_bytes(b"x" * 64)
                quiet = asyncio.run(_quiet_cpu_per_min(server, args.window))
                streamed = asyncio.run(_sessions(server, args.sessions, args.words))
                print(json.dumps({"side": side, "round": r, "files": args.files, "load_1m": round(os.getloadavg()[0], 1),
                                  "quiet_cpu_s_per_min": quiet, **streamed}), flush=True)
            finally:
                server.stop()
                shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
