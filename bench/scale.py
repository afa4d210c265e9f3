"""``python -m bench scale [--smoke] [--rows sessions,idle,submits,inbox] [--sessions 50,200,500] [--idle 1000]
[--submits 100] [--inbox 10000] [--out PATH]``: the scale figures of issue 12 beside their targets.

The app runs in prod mode with ``--workers 3`` (gunicorn + uvicorn), a private Redis (Reflex state
and the run bus) and a fresh PostgreSQL database; the SQLite submit row runs one worker on SQLite
(the default deployment). Rows run in this order, smaller first: sessions up to 200 (ascending), idle
tabs, submits on PostgreSQL, sessions above 200, submits on SQLite, inbox (the store call), inbox_page (the
/reviews page in Chromium on 3 workers, bench/scale_inbox_page.py). Every row records ``uptime``'s load average before
and after it. The JSON goes to ``bench/results/scale-<time>.json``. See docs/scale.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 3
ROWS = ("sessions", "idle", "submits", "inbox", "inbox_page")
BIG_SESSIONS = 200
"""Session counts above this run after the idle and submit rows."""


def _config(args: argparse.Namespace) -> dict[str, Any]:
    def ints(text: str) -> list[int]:
        return [int(x) for x in text.split(",") if x.strip()]

    if args.smoke:
        cfg = {"sessions": [2], "words": 20, "wps": 20, "idle": 4, "idle_window_s": 2, "submits": 2, "inbox": 200,
               "inbox_threads": 40, "inbox_reads": 5, "inbox_repeats": 2, "inbox_arrivals": 3}
    else:
        cfg = {"sessions": [50, 200, 500], "words": 200, "wps": 20, "idle": 1000, "idle_window_s": 60, "submits": 100,
               "inbox": 10_000, "inbox_threads": 2_000, "inbox_reads": 50, "inbox_repeats": 5, "inbox_arrivals": 20}
    for key in ("sessions",):
        if getattr(args, key) is not None:
            cfg[key] = ints(getattr(args, key))
    for key in ("idle", "submits", "inbox", "inbox_repeats", "inbox_arrivals"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    cfg["workers"] = args.workers
    if args.idle_window is not None:
        cfg["idle_window_s"] = args.idle_window
    return cfg


def _guard(results: dict[str, Any], key: str, fn) -> None:
    t0 = time.monotonic()
    try:
        results[key] = fn()
    except Exception as exc:  # noqa: BLE001 - a failed row is reported, the others still run
        traceback.print_exc()
        results[key] = {"error": f"{type(exc).__name__}: {exc}"}
    results[key]["row_s"] = round(time.monotonic() - t0, 1)
    print(f"[bench scale] {key} done in {results[key]['row_s']} s, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)


def _multi_worker_rows(cfg: dict[str, Any], rows: set[str], tmp: Path, results: dict[str, Any]) -> None:
    from bench import scale_rows
    from bench.scale_inbox import outbox_counter
    from bench.scale_infra import fresh_postgres, private_redis, start_app

    with private_redis() as redis, fresh_postgres() as pg:
        server = start_app(tmp / "multi", workers=cfg["workers"], wps=cfg["wps"], database_url=pg, redis_url=redis.url)
        try:
            token = server.sign_in("bench-scale").token
            def sessions(ks: list[int]) -> None:
                for k in ks:
                    _guard(results, f"sessions_{k}", lambda k=k: asyncio.run(
                        scale_rows.sessions_row(server, token, k, cfg["words"], cfg["wps"], redis)))
                    time.sleep(2)

            wanted = sorted(cfg["sessions"]) if "sessions" in rows else []
            sessions([k for k in wanted if k <= BIG_SESSIONS])
            if "idle" in rows:
                _guard(results, "idle", lambda: asyncio.run(
                    scale_rows.idle_row(server, token, cfg["idle"], cfg["idle_window_s"], redis)))
            if "submits" in rows:
                _guard(results, "submits_postgres", lambda: asyncio.run(
                    scale_rows.submits_row(server, token, cfg["submits"], outbox_counter(pg))))
            sessions([k for k in wanted if k > BIG_SESSIONS])  # the heaviest last: it may leave the server loaded
        finally:
            server.stop()


def _sqlite_rows(cfg: dict[str, Any], tmp: Path, results: dict[str, Any]) -> None:
    from bench import scale_rows
    from bench.scale_inbox import outbox_counter
    from bench.scale_infra import start_app

    data = tmp / "sqlite"
    server = start_app(data, workers=1, wps=cfg["wps"])
    try:
        token = server.sign_in("bench-scale").token
        url = f"sqlite:///{data / 'hitl.sqlite'}"
        _guard(results, "submits_sqlite", lambda: asyncio.run(
            scale_rows.submits_row(server, token, cfg["submits"], outbox_counter(url))))
    finally:
        server.stop()


def _inbox_rows(cfg: dict[str, Any], tmp: Path, results: dict[str, Any]) -> None:
    from bench.scale_inbox import inbox_row
    from bench.scale_infra import fresh_postgres

    args = (cfg["inbox"], cfg["inbox_threads"], cfg["inbox_reads"])
    with fresh_postgres() as pg:
        _guard(results, "inbox_postgres", lambda: inbox_row(pg, *args))
    _guard(results, "inbox_sqlite", lambda: inbox_row(f"sqlite:///{tmp / 'inbox' / 'hitl.sqlite'}", *args))


def main(argv: list[str] | None = None) -> int:
    """Run the scale rows; print the table; returns 0 when every row produced figures, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="python -m bench scale", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny N (CI: checks every row produces figures)")
    parser.add_argument("--rows", default=",".join(ROWS), help="which rows: sessions,idle,submits,inbox,inbox_page")
    parser.add_argument("--sessions", default=None, help="concurrent streaming tabs per run, e.g. 50,200,500")
    parser.add_argument("--idle", type=int, default=None, help="idle tabs (default 1000)")
    parser.add_argument("--idle-window", type=float, default=None, help="idle CPU window in seconds (default 60)")
    parser.add_argument("--submits", type=int, default=None, help="concurrent review submissions (default 100)")
    parser.add_argument("--inbox", type=int, default=None, help="pending reviews in the inbox (default 10000)")
    parser.add_argument("--inbox-repeats", type=int, default=None, help="page opens timed in Chromium (default 5)")
    parser.add_argument("--inbox-arrivals", type=int, default=None, help="reviews raised into an open inbox (default 20)")
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/scale-<time>.json)")
    parser.add_argument("--workers", type=int, default=WORKERS, help="gunicorn workers for the Redis+PostgreSQL rows (default 3)")
    parser.add_argument("--label", default="")
    args = parser.parse_args(argv)
    cfg = _config(args)
    rows = {r.strip() for r in args.rows.split(",") if r.strip()}
    sys.path.insert(0, str(ROOT))
    results: dict[str, Any] = {
        "label": args.label, "smoke": args.smoke, "config": cfg, "workers": cfg["workers"],
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_at_start": list(os.getloadavg())},
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hitl-scale-") as tmp_name:
        tmp = Path(tmp_name)
        if rows & {"sessions", "idle", "submits"}:
            _guard(results, "_multi", lambda: (_multi_worker_rows(cfg, rows, tmp, results), {})[1])
        if "submits" in rows:
            _guard(results, "_sqlite", lambda: (_sqlite_rows(cfg, tmp, results), {})[1])
        if "inbox" in rows:
            _inbox_rows(cfg, tmp, results)
        if "inbox_page" in rows:
            from bench.scale_inbox_page import page_rows

            _guard(results, "inbox_page", lambda: page_rows(
                tmp, cfg["inbox"], cfg["inbox_threads"], cfg["inbox_repeats"], cfg["inbox_arrivals"], cfg["workers"]))
    results["total_s"] = round(time.monotonic() - started, 1)
    out = args.out or ROOT / "bench" / "results" / f"scale-{datetime.now():%Y%m%d-%H%M%S}{'-smoke' if args.smoke else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    from bench.scale_report import render

    print(render(results))
    print(f"\nJSON: {out}")
    return 1 if any(isinstance(v, dict) and "error" in v for v in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
