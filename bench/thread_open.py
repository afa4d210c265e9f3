"""Issue 23: opening a long thread with a pending review, and scrolling it to its first message.

``python -m bench.thread_open [--before-root <worktree>] [--sizes 50,10000] [--repeats 3]`` seeds one
thread per size (``bench/seed.py``: ``n`` messages, the last two a real turn that left a pending review)
into each app's data folder, starts the app (1 worker, SQLite, demo model) from each source tree (this
one = "after"; ``--before-root`` = "before", alternating which goes first), and in Chromium (1280x900,
``BrowserBench.open_long_thread``) measures per open:

- **interactive ms**: navigation start -> the card's decision buttons and at least one message are in the
  DOM (the page's own MutationObserver stamps, ``bench/browser.py`` INIT_JS), then a click on the card's
  Reject is handled (``first click round trip ms``);
- **DOM**: element count and message rows in the DOM once open;
- **scroll to the top** (``--scroll-s`` seconds at most): the thread's scroll box is moved to its top
  (``scrollTop = 0``, as a fast wheel would) once per 150 ms; earlier messages may load as it goes. Reports
  the messages reached (the first message's text is ``Question 0``), the longest main-thread task and the
  number of tasks over 50 ms (``PerformanceObserver('longtask')``) while scrolling, and the element count
  after.

Prints one JSON line per open and a summary table (median per side and size, and after/before ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import median
from bench.scale_infra import ROOT, start_app


def main(argv: list[str] | None = None) -> int:
    """Run the opens and print JSON lines and a table; returns 0."""
    from bench import seed
    from bench.browser import BrowserBench

    parser = argparse.ArgumentParser(prog="python -m bench.thread_open", description=__doc__)
    parser.add_argument("--before-root", type=Path, default=None, help="source tree of the commit before")
    parser.add_argument("--sizes", default="50,10000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scroll-s", type=float, default=20.0, help="seconds allowed to scroll to the first message")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    sides = [("after", ROOT)] + ([("before", args.before_root.resolve())] if args.before_root else [])
    base = Path(tempfile.mkdtemp(prefix="hitl-open-"))
    rows: list[dict[str, Any]] = []
    try:
        seeded = base / "seeded"
        tids = {n: seed.seed_long_thread(seeded / str(n), n) for n in sizes}
        for r in range(args.repeats):
            for side, root in sides if r % 2 == 0 else sides[::-1]:
                for n in sizes:
                    data = base / f"{side}-{n}-{r}"
                    shutil.copytree(seeded / str(n), data)
                    server = start_app(data, workers=1, wps=100, source_root=root)
                    bb = BrowserBench(server.url, data / "trace")
                    try:
                        fig = bb.open_long_thread(tids[n], n, scroll_s=args.scroll_s if n > 50 else 0)
                    finally:
                        bb.close()
                        server.stop()
                    row = {"side": side, "messages": n, "round": r, "load_1m": round(os.getloadavg()[0], 1), **fig}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    _table(rows, sizes)
    return 0


def _table(rows: list[dict[str, Any]], sizes: list[int]) -> None:
    keys = ["interactive_ms", "reopened_interactive_ms", "first_click_round_trip_ms", "longest_task_ms", "elements",
            "messages_in_dom",
            "scroll_reached_first", "scroll_ms", "scroll_longest_task_ms", "scroll_long_tasks", "scroll_elements_after"]
    print("\n| messages | figure (median) | after | before | after/before |\n|---|---|---|---|---|")
    for n in sizes:
        for k in keys:
            vals = {s: [r[k] for r in rows if r["side"] == s and r["messages"] == n and k in r] for s in ("after", "before")}
            if not vals["after"]:
                continue
            med = {s: (median([float(x) for x in v]) if v else None) for s, v in vals.items()}
            ratio = f"{med['after'] / med['before']:.2f}" if med["before"] else ""
            print(f"| {n:,} | {k} | {med['after']} | {med['before'] if med['before'] is not None else ''} | {ratio} |")
    print(f"\nrun at {time.strftime('%H:%M UTC', time.gmtime())}")


if __name__ == "__main__":
    raise SystemExit(main())
