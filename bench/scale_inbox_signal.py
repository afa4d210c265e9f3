"""Round 6, the inbox signal (issue 12): before and after side by side, arrivals alternating.

``python -m bench.scale_inbox_signal --before-root /work/main`` starts TWO apps at once, each as
``bench.scale_inbox_page`` starts one (``workers`` workers, a private Redis, a fresh PostgreSQL,
the team policy, 10,000 pending reviews over 2,000 threads seeded): "before" runs the source tree
``--before-root`` (e.g. a main worktree), "after" this tree. Both get the same load at the same
time; each measure alternates between them (A B, then B A, ...), so the machine's load, shared
with other work, falls on both alike. Compare the two columns of one run, not runs.

* **Bystanders**: ``idle`` websocket tabs of another member per app (``bench.ws.ReflexClient`` on
  a thread page of their own: each runs an inbox watcher), spread over the workers. The seeded
  payments and the new mails cannot wait for them. Counted: the inbox reads they were sent
  (each read sets ``InboxState.total``) per new review.
* **Opened**: the reviewer opens ``/reviews`` (as ``scale_inbox_page.interactive``), ``repeats``
  times per app, alternating.
* **Arrival**: as ``scale_inbox_page.arrivals``: the member's /reviews page open on worker Y, a
  review raised on worker X (send_email: the owner or a reviewer decides), ms from the model's
  tool call to the item in the page; ``arrivals`` per app, alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.scale_inbox_page import TEAM, WPS, _context, _one_arrival, _q, interactive
from bench.scale_infra import ROOT, load_avg
from bench.ws import ReflexClient

INBOX = "inbox_state"


class CountingTab(ReflexClient):
    """A bench tab that counts the inbox reads it is sent (deltas that set ``InboxState.total``)."""

    reads = 0

    def _apply(self, delta: dict[str, Any], now: float) -> None:
        for state, vars_ in delta.items():
            if state.endswith(INBOX) and "total_rx_state_" in vars_:
                self.reads += 1
        super()._apply(delta, now)


@dataclass
class App:
    """One of the two apps under test and what was measured on it."""

    label: str
    server: Any
    reviewer: str
    member: str
    bystander: str
    database_url: str
    tabs: list[CountingTab] = field(default_factory=list)
    opened: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)
    on: list[str] = field(default_factory=list)
    not_raised: list[int] = field(default_factory=list)
    missing: int = 0
    idle_reads: int = 0
    page: Any = None
    page_pid: str = ""
    context: Any = None


async def _bystanders(app: App, n: int) -> None:
    """``n`` tabs of the bystander member, each on a new thread page (an inbox watcher each)."""
    for _ in range(n):
        tab = CountingTab(app.server.url, session_token=app.bystander)
        await tab.connect(str(uuid.uuid4()))
        app.tabs.append(tab)
    await asyncio.sleep(2)  # their on_load reads are done before counting starts


def _start(stack: contextlib.ExitStack, tmp: Path, label: str, root: Path, workers: int) -> App:
    from bench.scale_infra import fresh_postgres, private_redis, start_app

    redis, pg = stack.enter_context(private_redis()), stack.enter_context(fresh_postgres())
    server = start_app(tmp / label, workers=workers, wps=WPS, database_url=pg, redis_url=redis.url,
                       extra_env={"HITL_POLICY": str(TEAM)}, source_root=root)
    stack.callback(server.stop)
    app = App(label, server, server.sign_in("sig-reviewer", role="reviewer", name="Rita Reviewer").token,
              server.sign_in("sig-member", role="member", name="Max Member").token,
              server.sign_in("sig-bystander", role="member", name="Bea Bystander").token, pg)
    return app


def _seed(app: App, n_reviews: int, n_threads: int) -> None:
    from bench.scale_inbox import seed
    from hitl_app.store.db import make_engines

    engines = make_engines(app.database_url)
    try:
        asyncio.run(seed(engines.async_, n_reviews, n_threads))
    finally:
        asyncio.run(engines.async_.dispose())
        engines.sync.dispose()


def _open_inbox(browser: Any, app: App) -> None:
    """The member's /reviews page, reached from a thread page so its worker is known."""
    app.context = _context(browser, app.server, app.member)
    page = app.context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{app.server.url}/thread/{uuid.uuid4()}")
    page.wait_for_function("() => (document.querySelector('[data-testid=worker-pid]')?.dataset.pid || '') !== ''")
    app.page_pid = str(page.get_by_test_id("worker-pid").get_attribute("data-pid") or "?").split(":")[0]
    page.get_by_test_id("inbox-link").first.click()
    page.wait_for_url("**/reviews")
    page.wait_for_function("() => document.querySelector('[data-testid=inbox-empty], [data-testid=inbox-list]')")
    app.page = page


def _alternate(apps: list[App], i: int) -> list[App]:
    return apps if i % 2 == 0 else apps[::-1]


def _measure(browser: Any, apps: list[App], loop: asyncio.AbstractEventLoop, cfg: dict[str, Any]) -> None:
    for i in range(cfg["repeats"]):
        for app in _alternate(apps, i):
            app.opened += interactive(browser, app.server, app.reviewer, cfg["reviews"], 1)["times"]
    for app in apps:
        asyncio.run_coroutine_threadsafe(_bystanders(app, cfg["idle"]), loop).result(timeout=300)
        _open_inbox(browser, app)
    tag = uuid.uuid4().hex[:6]
    before = {a.label: sum(t.reads for t in a.tabs) for a in apps}
    for i in range(cfg["arrivals"]):
        for app in _alternate(apps, i):
            trace = app.server.data_dir / "trace"
            app.missing += _one_arrival(app.page, loop, app.server, app.member, app.page_pid, i, tag, trace,
                                        app.lags, app.on, app.not_raised)
    time.sleep(1)
    for app in apps:
        app.idle_reads = sum(t.reads for t in app.tabs) - before[app.label]
        app.context.close()


def signal_rows(tmp: Path, before_root: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """Both apps, the three measures (see the module docstring). Returns the figures per app."""
    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

    load_start = load_avg()
    loop = asyncio.new_event_loop()  # Playwright's sync API holds this thread's loop: the tabs run on their own
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    with contextlib.ExitStack() as stack:
        apps = [_start(stack, tmp, "before", before_root, cfg["workers"]), _start(stack, tmp, "after", ROOT, cfg["workers"])]
        for app in apps:
            _seed(app, cfg["reviews"], cfg["threads"])
        load_measure = load_avg()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                _measure(browser, apps, loop, cfg)
            finally:
                browser.close()
                for app in apps:
                    for tab in app.tabs:
                        asyncio.run_coroutine_threadsafe(tab.close(), loop).result(timeout=30)
    loop.call_soon_threadsafe(loop.stop)
    runner.join(timeout=10)
    return {"config": cfg, "load_start": load_start, "load_measure": load_measure, "load_end": load_avg(),
            "apps": {a.label: _figures(a, cfg) for a in apps}}


def _figures(app: App, cfg: dict[str, Any]) -> dict[str, Any]:
    raised = max(1, cfg["arrivals"] - len(app.not_raised))
    return {"root": str(app.server.source_root), "opened_ms": _q(app.opened), "arrival_ms": _q(app.lags),
            "missing": app.missing, "not_raised": len(app.not_raised), "page_worker": app.page_pid,
            "raised_on": {p: app.on.count(p) for p in sorted(set(app.on))}, "same_worker": app.on.count(app.page_pid),
            "bystander_tabs": len(app.tabs), "bystander_reads_per_review": round(app.idle_reads / raised, 2)}


def render(r: dict[str, Any]) -> str:
    """The result as a markdown table (one line per app)."""
    def ms(q: dict[str, Any]) -> str:
        return f"{q['p50']:.0f} / {q['p95']:.0f} (n={q['n']}, max {q['max']:.0f})" if q["n"] else "-"

    lines = [f"load 1m: {r['load_start'][0]} at start, {r['load_measure'][0]} before measuring, {r['load_end'][0]} at end",
             "", "| code | /reviews opened ms p50 / p95 | arrival ms p50 / p95 | never shown | bystander reads per review |",
             "|---|---|---|---|---|"]
    for label, a in r["apps"].items():
        lines.append(f"| {label} ({a['root']}) | {ms(a['opened_ms'])} | {ms(a['arrival_ms'])} | {a['missing']} "
                     f"| {a['bystander_reads_per_review']} ({a['bystander_tabs']} tabs) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run both apps side by side and print the table; returns 0."""
    import tempfile

    p = argparse.ArgumentParser(prog="python -m bench.scale_inbox_signal", description=__doc__)
    p.add_argument("--before-root", type=Path, required=True, help="source tree of 'before' (e.g. /work/main)")
    p.add_argument("--reviews", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=2_000)
    p.add_argument("--arrivals", type=int, default=20, help="new reviews per app")
    p.add_argument("--repeats", type=int, default=5, help="/reviews opens per app")
    p.add_argument("--idle", type=int, default=20, help="bystander inbox tabs per app")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    cfg = {k: getattr(args, k) for k in ("reviews", "threads", "arrivals", "repeats", "idle", "workers")}
    with tempfile.TemporaryDirectory(prefix="hitl-signal-") as tmp:
        result = signal_rows(Path(tmp), args.before_root.resolve(), cfg)
    result["when"] = datetime.now().isoformat(timespec="seconds")
    out = args.out or ROOT / "bench" / "results" / f"inbox-signal-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(render(result))
    print(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
