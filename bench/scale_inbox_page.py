"""The scale section's inbox rows in Chromium: the /reviews page with many pending reviews, on
several workers with Redis and PostgreSQL, under the team policy (examples/policies/team.toml).

The app starts (``bench.scale_infra.start_app``), then ``n_reviews`` pending (and as many decided)
reviews over ``n_threads`` threads are written into its database (``bench.scale_inbox.seed``:
``transfer_funds`` of 500 asked by 20 members, so every one waits for a reviewer).

* **Interactive**: a reviewer account (real sign-in) opens ``/reviews`` in a fresh browser context,
  ``repeats`` times. The time is navigation start (``performance.timeOrigin``) to the first DOM
  mutation after which the page shows the first page of items (``PAGE_SIZE`` of them, or all when
  fewer), the total count (``inbox-total`` starting with the seeded count) and "Load more".
* **Floor**: the same page for the member (nothing waits for a member: the seeded payments ask
  reviewers), navigation start to "Nothing waits for you.": what the page costs with no cards.
* **Arrival**: a member account opens ``/thread/<new>`` (its worker pid is on the page), then goes
  to ``/reviews`` through the sidebar link (the same socket, so the same worker). For each of
  ``arrivals`` reviews, a websocket client of the same member (``bench.ws.ReflexClient``, reconnected
  until it lands on ANOTHER worker than the page's) asks ``email ...`` on a new thread; the demo model's
  tool call raises the review. Time = the item with that thread id first in the page's DOM (a
  MutationObserver stamp) - the model's last chunk (the tool call) in the server's trace
  (``time.time()`` in the worker: same machine, same clock). The seeded payments do not wait for a
  member, so the new mails are the member's whole inbox (all on its first page) while the
  query still runs over the 10,000 pending rows.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import pct, read_traces
from bench.scale_infra import load_avg

ROOT = Path(__file__).resolve().parents[1]
TEAM = ROOT / "examples" / "policies" / "team.toml"
WPS = 100.0
"""Demo model words/s for this row (the review's short reply comes quickly)."""

INIT_JS = r"""
(() => {
  const now = () => performance.now();
  const B = (window.__inbox = { readyAt: null, emptyAt: null, arrived: {}, want: -1, total: "" });
  const scan = () => {
    const t = now();
    if (B.emptyAt === null && document.querySelector("[data-testid=inbox-empty]")) B.emptyAt = t;
    const items = document.querySelectorAll("[data-testid=inbox-item]");
    for (const el of items) {
      const tid = el.getAttribute("data-thread-id");
      if (tid && !(tid in B.arrived)) B.arrived[tid] = performance.timeOrigin + t;
    }
    if (B.readyAt === null && B.want >= 0) {
      const total = document.querySelector(B.totalSel);
      const more = B.needMore ? document.querySelector("[data-testid=inbox-more]") : true;
      if (items.length >= B.want && total && total.textContent.startsWith(B.total) && more) B.readyAt = t;
    }
  };
  B.expect = (want, totalSel, total, needMore) => {
    B.want = want; B.totalSel = totalSel; B.total = total; B.needMore = needMore; scan();
  };
  new MutationObserver(scan).observe(document, { subtree: true, childList: true, characterData: true });
})();
"""


def _q(values: list[float]) -> dict[str, Any]:
    return {"p50": pct(values, 0.5), "p95": pct(values, 0.95), "max": max(values, default=None), "n": len(values)}


def _context(browser: Any, server: Any, token: str) -> Any:
    from tests.helpers import accounts

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([accounts.browser_cookie(server.url, token)])
    context.add_init_script(INIT_JS)
    return context


LEGACY_PAGE = 100
"""Cards the /reviews page showed before it had pages (``--legacy``: its count badge stopped there too)."""


def interactive(browser: Any, server: Any, token: str, n_reviews: int, repeats: int, legacy: bool = False) -> dict[str, Any]:
    """Open /reviews ``repeats`` times as the reviewer; ms from navigation start to the first page
    and the count on screen. Returns ``{"ms": {...}, "items": int, "total_text": str}``. ``legacy``:
    the page before paging (no ``inbox-total``; ready when its 100 cards and the sidebar count show)."""
    if legacy:
        want = min(LEGACY_PAGE, n_reviews)
        expect = f"({want}, '[data-testid=inbox-count]', '{want}', false)"
    else:
        from hitl_app.store.inbox import PAGE_SIZE

        more = str(n_reviews > PAGE_SIZE).lower()
        expect = f"({min(PAGE_SIZE, n_reviews)}, '[data-testid=inbox-total]', '{n_reviews}', {more})"
    times: list[float] = []
    items, total_text = 0, ""
    for _ in range(repeats):
        context = _context(browser, server, token)
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.add_init_script(f"window.__inbox && window.__inbox.expect{expect}")
        page.goto(f"{server.url}/reviews")
        page.evaluate(f"window.__inbox.expect{expect}")
        page.wait_for_function("() => window.__inbox.readyAt !== null")
        times.append(float(page.evaluate("window.__inbox.readyAt")))
        items = int(page.locator("[data-testid=inbox-item]").count())
        total_text = str(page.get_by_test_id("inbox-count" if legacy else "inbox-total").first.inner_text())
        context.close()
    return {"ms": _q(times), "times": times, "items": items, "total_text": total_text}


async def _raise_one(server: Any, token: str, page_pid: str, i: int, tag: str) -> tuple[str, str, float]:
    """A review raised by a websocket tab on another worker than ``page_pid``: (thread id, its worker pid, send time)."""
    from bench.ws import CHAT, REVIEW, ReflexClient

    for _ in range(12):
        client = ReflexClient(server.url, session_token=token)
        await client.connect(str(uuid.uuid4()))
        pid = str(client.get(CHAT, "worker_pid") or "?").split(":")[0]
        if pid != page_pid:
            break
        await client.close()
    t0 = await client.send(f"email r{i}@example.com about inbox-{tag}-{i}: ok")
    tid = client.thread_id
    try:
        await client.wait_for(lambda: bool(client.get(REVIEW, "cards")), timeout=60)
    except (TimeoutError, RuntimeError):  # the tab never showed its card: counted by the caller
        tid = ""
    finally:
        await client.close()
    return tid, pid, t0


def arrivals(browser: Any, server: Any, token: str, n: int, trace_dir: Path) -> dict[str, Any]:
    """``n`` reviews raised one after the other on other workers; ms from the interrupt to the item
    in the member's open /reviews page. Returns ``{"ms": {...}, "page_worker", "raised_on", "missing"}``."""
    context = _context(browser, server, token)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{server.url}/thread/{uuid.uuid4()}")
    page.wait_for_function("() => (document.querySelector('[data-testid=worker-pid]')?.dataset.pid || '') !== ''")
    page_pid = str(page.get_by_test_id("worker-pid").get_attribute("data-pid") or "?").split(":")[0]
    page.get_by_test_id("inbox-link").first.click()
    page.wait_for_url("**/reviews")
    page.wait_for_function("() => document.querySelector('[data-testid=inbox-empty], [data-testid=inbox-list]')")
    tag, missing = uuid.uuid4().hex[:6], 0
    lags: list[float] = []
    on: list[str] = []
    not_raised: list[int] = []
    loop = asyncio.new_event_loop()  # Playwright's sync API holds this thread's loop: the tabs run on their own
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    try:
        for i in range(n):
            missing += _one_arrival(page, loop, server, token, page_pid, i, tag, trace_dir, lags, on, not_raised)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=10)
    context.close()
    return {"ms": _q(lags), "page_worker": page_pid, "raised_on": {p: on.count(p) for p in sorted(set(on))},
            "same_worker": on.count(page_pid), "missing": missing, "not_raised": len(not_raised)}


def floor(browser: Any, server: Any, token: str, repeats: int) -> dict[str, Any]:
    """The same page with nothing waiting (the member, before any arrival): ms from navigation start
    to "Nothing waits for you." (the page's own cost: scripts, socket, hydration, on_load)."""
    times: list[float] = []
    for _ in range(repeats):
        context = _context(browser, server, token)
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(f"{server.url}/reviews")
        page.wait_for_function("() => window.__inbox.emptyAt !== null")
        times.append(float(page.evaluate("window.__inbox.emptyAt")))
        context.close()
    return {"ms": _q(times)}


def _one_arrival(
    page: Any, loop: asyncio.AbstractEventLoop, server: Any, token: str, page_pid: str, i: int, tag: str, trace_dir: Path,
    lags: list[float], on: list[str], not_raised: list[int],
) -> int:
    """Raise review ``i`` and time it into the page (appends to ``lags`` and ``on``); 1 when it never
    showed (in the raising tab or in the page)."""
    tid, pid, _ = asyncio.run_coroutine_threadsafe(_raise_one(server, token, page_pid, i, tag), loop).result(timeout=120)
    on.append(pid)
    if not tid:
        not_raised.append(i)
        return 1
    try:
        page.wait_for_function(f"() => '{tid}' in window.__inbox.arrived", timeout=30_000)
    except Exception:  # noqa: BLE001 - counted, the row goes on
        return 1
    seen_ms = float(page.evaluate(f"window.__inbox.arrived['{tid}']"))
    traces = read_traces(trace_dir, tid)
    if traces:
        lags.append(seen_ms - max(t["t_end"] for t in traces) * 1000)
    time.sleep(0.2)
    return 0


def page_rows(
    tmp: Path, n_reviews: int, n_threads: int, repeats: int, n_arrivals: int, workers: int, legacy: bool = False
) -> dict[str, Any]:
    """Both rows on one app (``workers`` workers, private Redis, fresh PostgreSQL); ``legacy``: the
    app is a version before the paged inbox (see ``interactive``). Returns the figures."""
    from playwright.sync_api import sync_playwright

    from bench.scale_inbox import seed
    from bench.scale_infra import fresh_postgres, private_redis, start_app
    from hitl_app.store.db import make_engines
    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

    load_before = load_avg()
    with private_redis() as redis, fresh_postgres() as pg:
        server = start_app(tmp / "inbox-page", workers=workers, wps=WPS, database_url=pg, redis_url=redis.url,
                           extra_env={"HITL_POLICY": str(TEAM)})
        try:
            reviewer = server.sign_in("inbox-reviewer", role="reviewer", name="Rita Reviewer").token
            member = server.sign_in("inbox-member", role="member", name="Max Member").token
            engines = make_engines(pg)
            t0 = time.monotonic()
            try:
                asyncio.run(seed(engines.async_, n_reviews, n_threads))
            finally:
                asyncio.run(engines.async_.dispose())
                engines.sync.dispose()
            seed_s = time.monotonic() - t0
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    empty = floor(browser, server, member, repeats)
                    opened = interactive(browser, server, reviewer, n_reviews, repeats, legacy)
                    arrived = arrivals(browser, server, member, n_arrivals, server.data_dir / "trace")
                finally:
                    browser.close()
        finally:
            server.stop()
    return {"pending_reviews": n_reviews, "threads": n_threads, "workers": workers, "seed_s": round(seed_s, 1),
            "legacy": legacy, "empty_page": empty, "interactive": opened, "arrival": arrived,
            "load_before": load_before, "load_after": load_avg()}
