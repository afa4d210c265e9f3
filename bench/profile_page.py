"""``python -m bench.profile_page [--words N] [--no-observer] [--long N]``: where the page's main thread goes.

A developer tool, not part of ``make bench``: starts the app (100 words/s, like section 3), opens a
thread in headless Chromium with a Chrome trace (``devtools.timeline`` categories) running, streams
``stream N words``, and prints the renderer main thread's time per token by trace event (self time:
a child's time is taken out of its parent), plus CDP ``Performance.getMetrics`` TaskDuration per
token. ``--no-observer`` leaves out the bench's MutationObserver (section 3 counts it in its
figure); ``--long N`` seeds an N-message thread and profiles opening it (section 6) instead.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

CATEGORIES = "devtools.timeline,disabled-by-default-devtools.timeline,v8.execute,blink,cc,toplevel"


def self_times(events: list[dict[str, Any]], t0: float, t1: float) -> tuple[dict[str, float], float]:
    """Self time (ms) per event name on the renderer main thread, for complete events inside
    [t0, t1] (trace microseconds); and the sum of top-level task time (ms)."""
    main = None
    for e in events:
        if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain":
            main = main or set()
            main.add((e["pid"], e["tid"]))
    xs = sorted(
        (e for e in events if e.get("ph") == "X" and (e["pid"], e["tid"]) in (main or set()) and t0 <= e["ts"] <= t1),
        key=lambda e: (e["ts"], -e.get("dur", 0)),
    )
    out: dict[str, float] = defaultdict(float)
    stack: list[list[Any]] = []  # [end, name, child time, start]
    top = 0.0
    for e in xs:
        dur = e.get("dur", 0)
        while stack and stack[-1][0] <= e["ts"]:
            end, name, child, start = stack.pop()
            out[name] += (end - start - child) / 1000
        if stack:
            stack[-1][2] += dur
        else:
            top += dur / 1000
        stack.append([e["ts"] + dur, e["name"], 0, e["ts"]])
    while stack:
        end, name, child, start = stack.pop()
        out[name] += (end - start - child) / 1000
    return dict(out), top


def _print(title: str, times: dict[str, float], top: float, per: float, unit: str) -> None:
    print(f"\n{title}: top-level tasks {top / per:.3f} ms/{unit}")
    for name, ms in sorted(times.items(), key=lambda kv: -kv[1])[:25]:
        print(f"  {ms / per:8.3f}  {name}")


def main(argv: list[str] | None = None) -> int:
    """Run one profile; prints the table, writes the trace to ``--trace`` if given."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile_page")
    parser.add_argument("--words", type=int, default=1000)
    parser.add_argument("--no-observer", action="store_true")
    parser.add_argument("--long", type=int, default=0, help="profile opening a seeded thread of N messages")
    parser.add_argument("--trace", type=Path, default=None)
    parser.add_argument("--wps", type=float, default=100)
    args = parser.parse_args(argv)
    from bench import seed
    from bench.__main__ import _server
    from bench.browser import INIT_JS, BrowserBench

    tmp = Path(tempfile.mkdtemp(prefix="hitl-prof-"))
    long_tid = seed.seed_long_thread(tmp, args.long) if args.long else None
    server = _server(tmp, args.wps, tmp / "trace")
    bb = BrowserBench(server.url, tmp / "trace")
    try:
        context = bb.signed_in_context()
        if not args.no_observer:
            context.add_init_script(INIT_JS)
        page = context.new_page()
        page.set_default_timeout(300_000)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        if long_tid:
            bb.browser.start_tracing(page=page, path=str(args.trace or tmp / "t.json"), categories=CATEGORIES.split(","))
            page.goto(f"{server.url}/thread/{long_tid}")
            page.locator("[data-testid=approval-card] [data-testid^=decision-]").first.wait_for()
            page.wait_for_timeout(300)
            raw = bb.browser.stop_tracing()
            events = json.loads(raw)["traceEvents"]
            times, top = self_times(events, 0, float("inf"))
            _print(f"open a {args.long}-message thread", times, top, 1.0, "open")
            return 0
        page.goto(f"{server.url}/thread/{uuid.uuid4()}")
        page.locator("[data-testid=composer-input]").wait_for()
        page.wait_for_timeout(500)
        bb.browser.start_tracing(page=page, path=str(args.trace or tmp / "t.json"), categories=CATEGORIES.split(","))
        before = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        t_start = time.time()
        page.get_by_test_id("composer-input").fill(f"stream {args.words} words")
        page.get_by_test_id("send-button").click()
        page.locator("[data-testid=message][data-role=assistant]").first.wait_for(timeout=args.words * 200 + 60_000)
        page.wait_for_timeout(200)
        after = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        raw = bb.browser.stop_tracing()
        events = json.loads(raw)["traceEvents"]
        times, top = self_times(events, 0, float("inf"))
        n = args.words
        keys = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
        per = {k: (after[k] - before[k]) * 1000 / n for k in keys}
        print(f"wall {time.time() - t_start:.1f} s; getMetrics ms/token: " + ", ".join(f"{k} {v:.3f}" for k, v in per.items()))
        who = "no bench observer" if args.no_observer else "with the bench observer"
        _print(f"stream {n} words ({who})", times, top, n, "token")
        context.close()
    finally:
        bb.close()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
