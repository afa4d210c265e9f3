"""Issue 23: opening /audit and /metrics with 10,000 decisions in the audit (goal <= 500 ms each).

``python -m bench.desk_pages [--rows 10000] [--repeats 5]`` writes ``--rows`` decided cards straight into
the audit table of a fresh data folder (``AuditRecord`` rows, a card and a thread each, spread over the last 24
hours, over 5 tools and 4 decision types; the pages read only that table: a page of 100 rows and a count
for /audit, SQL aggregates for /metrics), starts the app (1 worker, SQLite, pages served), signs an admin
in, and in Chromium (1280x900, a fresh context per open) measures per page and open: navigation start ->
the page's data in the DOM (/audit: a row's "waited" cell; /metrics: the "Reviews" figure showing the
seeded count) and, for /metrics, -> its charts drawn (they are drawn after the numbers have painted), then the
same page opened again in that tab (the browser keeps the build's files), as ``performance.now()`` in the page.
Prints one JSON line per open and the medians.

The rows are written directly (not by 10,000 real reviews, which would take ~15 minutes); the audit
chain (``audit_links``) is not written, and neither page reads it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from bench.scale_infra import start_app

TOOLS = ("send_email", "write_file", "delete_file", "run_sql", "transfer_money")
DECISIONS = ("approve", "edit", "reject", "respond")
MARKS = {
    "audit": "() => document.querySelectorAll('[data-testid=audit-waited]').length > 0",
    "metrics": "(n) => (document.querySelector('[data-testid=metrics-reviews]')?.textContent || '')"
               ".replace(/[^0-9]/g, '') === String(n)",
}
"""Per page: the JavaScript condition that says its data is in the DOM."""
DRAWN = {
    "metrics": "() => document.querySelectorAll('.recharts-wrapper .recharts-bar-rectangle').length > 0"
               " && document.querySelectorAll('[aria-busy=true]').length === 0",
}
"""Per page with a later part: the condition that says it is drawn too (/metrics: its charts, after the numbers)."""


def seed_audit(data_dir: Path, rows: int) -> None:
    """Write ``rows`` decided cards (``AuditRecord``, one review each, on a thread of its own: the audit lists a
    decision with its thread's row) into ``data_dir``'s SQLite file."""
    from sqlmodel import Session

    from hitl_app.settings import Settings
    from hitl_app.store.db import create_schema, make_engines
    from hitl_app.store.tables import AuditRecord, ThreadRecord, utcnow

    engines = make_engines(Settings(HITL_DATA_DIR=data_dir).resolved_database_url)
    create_schema(engines)
    rng = random.Random(23)
    now = utcnow()
    with Session(engines.sync) as session:
        for i in range(rows):
            decided = now - timedelta(seconds=rng.uniform(60, 86_000))
            waited = rng.uniform(1, 900)
            thread_id = f"00000000-0000-4000-8000-{i:012d}"
            session.add(ThreadRecord(thread_id=thread_id, title=f"Report {i}", owner="seeded-owner", updated_at=decided))
            session.add(AuditRecord(
                thread_id=thread_id, interrupt_id=f"seed-{i}", action_index=0,
                tool_call_id=f"call-{i}", tool_name=TOOLS[i % len(TOOLS)], decision_type=DECISIONS[i % len(DECISIONS)],
                args_proposed={"to": f"user{i}@example.com", "subject": f"report {i}"}, args_executed=None,
                message="not now" if i % 4 == 2 else None, reviewer="Seeded Reviewer", reviewer_role="reviewer",
                asked="|reviewer|admin|", requested_at=decided - timedelta(seconds=waited), decided_at=decided,
                waited_seconds=waited,
            ))
        session.commit()
    engines.sync.dispose()


def main(argv: list[str] | None = None) -> int:
    """Seed, start, open each page ``--repeats`` times; print JSON lines and the medians; returns 0."""
    from playwright.sync_api import sync_playwright

    from tests.helpers import accounts
    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

    parser = argparse.ArgumentParser(prog="python -m bench.desk_pages", description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="hitl-desk-pages-"))
    seed_audit(data, args.rows)
    server = start_app(data, workers=1, wps=100)
    figures: dict[str, list[float]] = {**{page: [] for page in MARKS}, **{f"{page} drawn": [] for page in DRAWN},
                                       **{f"{page} again": [] for page in MARKS}}
    try:
        admin = server.sign_in("bench-desk-admin", role="admin")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for i in range(args.repeats + 1):  # the first open of each page warms the server
                for page_name, mark in MARKS.items():
                    context = browser.new_context(viewport={"width": 1280, "height": 900})
                    context.add_cookies([accounts.browser_cookie(server.url, admin.token)])
                    page = context.new_page()
                    page.goto(f"{server.url}/{page_name}")
                    try:
                        page.wait_for_function(mark, arg=args.rows, timeout=60_000)
                    except Exception:
                        page.screenshot(path=f"/tmp/desk-{page_name}.png")
                        raise
                    ms = page.evaluate("() => performance.now()")
                    if page_name in DRAWN:
                        page.wait_for_function(DRAWN[page_name], timeout=60_000)
                        drawn_ms = page.evaluate("() => performance.now()")
                    page.goto(f"{server.url}/{page_name}")  # again in this tab: the browser has the build's files
                    page.wait_for_function(mark, arg=args.rows, timeout=60_000)
                    again_ms = page.evaluate("() => performance.now()")
                    context.close()
                    if i > 0:
                        figures[page_name].append(ms)
                        figures[f"{page_name} again"].append(again_ms)
                        line = {"page": page_name, "open": i, "ms": round(ms, 1), "again_ms": round(again_ms, 1)}
                        if page_name in DRAWN:
                            figures[f"{page_name} drawn"].append(drawn_ms)
                            line["drawn_ms"] = round(drawn_ms, 1)
                        print(json.dumps(line), flush=True)
            browser.close()
    finally:
        server.stop()
    for name, values in figures.items():
        page_name, _, part = name.partition(" ")
        what = {"drawn": "everything drawn (the charts)", "again": "data in the DOM, opened again in the same tab"}.get(
            part, "data in the DOM")
        print(f"/{page_name} with {args.rows:,} audit rows: navigation -> {what}, median "
              f"{statistics.median(values):.0f} ms (n={len(values)}; goal <= 500)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
