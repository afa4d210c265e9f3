"""Issue 23: opening a long thread with a pending review, and scrolling it to its first message.

``python -m bench.thread_open [--before-root <worktree>] [--sizes 50,10000] [--repeats 3]`` seeds one
thread per size (``bench/seed.py``: ``n`` messages, the last two a real turn that left a pending review)
into each app's data folder, starts the app (1 worker, SQLite, demo model) from each source tree (this
one = "after"; ``--before-root`` = "before", alternating which goes first), and in Chromium (1280x900,
``BrowserBench``) measures per open:

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

SCROLL_JS = r"""async (limit) => {
  const box = document.getElementById('thread-scroll');
  const t0 = performance.now();
  const lt0 = window.__bench.longtasks.length;
  const first = () => !!Array.from(document.querySelectorAll('[data-testid=message]'))
      .find((m) => m.textContent.startsWith('Question 0:'));
  let steps = 0;
  while (!first() && performance.now() - t0 < limit * 1000) {
    box.scrollTop = 0;
    steps += 1;
    await new Promise((r) => setTimeout(r, 150));
  }
  const lts = window.__bench.longtasks.slice(lt0).filter((l) => l.start >= performance.timeOrigin + t0);
  return {reached_first: first(), scroll_ms: performance.now() - t0, steps,
          longest_task_ms: Math.max(0, ...lts.map((l) => l.dur)), long_tasks: lts.length,
          elements_after: document.getElementsByTagName('*').length,
          messages_after: document.querySelectorAll('[data-testid=message]').length};
}"""


def open_once(bb: Any, url: str, tid: str, scroll_s: float) -> dict[str, Any]:
    """One open of ``tid`` in a fresh signed-in context; the figures above (ms)."""
    from bench.browser import INIT_JS

    context = bb._context()
    context.add_init_script(INIT_JS + "\nwindow.__bench.msgTarget = 1;")
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{url}/thread/{tid}")
        page.wait_for_function("() => window.__bench.cardAt !== null && window.__bench.msgsAt !== null")
        t_click = page.evaluate("() => performance.timeOrigin + performance.now()")
        page.get_by_test_id("decision-reject").first.click()
        page.locator("[data-testid=reject-message]").first.wait_for()
        t_ack = page.evaluate("() => performance.timeOrigin + performance.now()")
        b = page.evaluate(
            "() => ({cardAt: window.__bench.cardAt, msgsAt: window.__bench.msgsAt, origin: performance.timeOrigin,"
            " longtasks: window.__bench.longtasks, elements: document.getElementsByTagName('*').length,"
            " n: document.querySelectorAll('[data-testid=message]').length})"
        )
        out = {
            "interactive_ms": round(max(b["cardAt"], b["msgsAt"]) - b["origin"], 1),
            "card_ms": round(b["cardAt"] - b["origin"], 1),
            "first_click_round_trip_ms": round(t_ack - t_click, 1),
            "open_longest_task_ms": max((lt["dur"] for lt in b["longtasks"]), default=0.0),
            "elements": b["elements"],
            "messages_in_dom": b["n"],
        }
        if scroll_s > 0:
            out.update({f"scroll_{k}": v for k, v in page.evaluate(SCROLL_JS, scroll_s).items()})
        return out
    finally:
        context.close()


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
                        fig = open_once(bb, server.url, tids[n], args.scroll_s if n > 50 else 0)
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
    keys = ["interactive_ms", "first_click_round_trip_ms", "open_longest_task_ms", "elements", "messages_in_dom",
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
