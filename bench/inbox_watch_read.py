"""Round 7 (issue 12): the inbox watcher's read alone, before and after, alternating in one run.

``python -m bench.inbox_watch_read --before-root /work/wt/inbox-before`` seeds one fresh
PostgreSQL database (``bench.scale_inbox.seed``: 10,000 pending payments over 2,000 threads that
wait for the reviewer, plus ``MAILS`` mails on the member's own threads, which wait for the
member), opens a sign-in session for each, then starts two long-lived child processes, one per
source tree (``--before-root`` and this one), on that same database. Each round, each child (in
alternating order) times ``--reads`` steps of what a tab's inbox watcher does when a review is
announced: the session check and the person's inbox read (``InboxState.watch``: before
``session_principal`` then ``rows_for``; after ``checked_read`` when the tree has it), for the
member (the arrival row's open inbox: a few cards) and for the reviewer (10,000: the first page,
the total, the newest five). No server, no Redis, no browser: the store calls and the session
check as the watcher makes them, in one process per tree, against one database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import pct
from bench.scale_infra import ROOT, load_avg

MAILS = 10
"""Mail reviews on the member's own threads (the member's whole inbox)."""


async def _prepare(url: str, n_reviews: int, n_threads: int) -> dict[str, str]:
    """Schema, seed, the member's mails and a session for each person; returns their tokens."""
    from sqlalchemy import insert
    from sqlmodel.ext.asyncio.session import AsyncSession

    from bench.scale_inbox import FIRST_MEMBER, REVIEWER, seed
    from hitl_app.auth.sessions import open_session
    from hitl_app.auth.types import AuthConfig
    from hitl_app.store.db import create_schema, make_engines
    from hitl_app.store.tables import ReviewRequestRecord, ThreadRecord, table_of, utcnow

    engines = make_engines(url)
    try:
        await asyncio.to_thread(create_schema, engines)
        await seed(engines.async_, n_reviews, n_threads)
        now, owner = utcnow(), str(FIRST_MEMBER)
        mails = [{"thread_id": str(uuid.uuid4()), "title": f"Mail {i}", "created_at": now, "updated_at": now,
                  "pending_review": True, "owner": owner} for i in range(MAILS)]
        card = {"name": "send_email", "args": {"to": "bob@example.com", "subject": "s"},
                "allowed_decisions": ["approve", "edit", "reject"]}
        reviews = [{"interrupt_id": uuid.uuid4().hex, "thread_id": t["thread_id"], "requested_at": now,
                    "action_count": 1, "tool_names": "send_email", "decided": False, "cards": [card]} for t in mails]
        async with engines.async_.begin() as conn:
            await conn.execute(insert(table_of(ThreadRecord)), mails)
            await conn.execute(insert(table_of(ReviewRequestRecord)), reviews)
        tokens = {}
        async with AsyncSession(engines.async_, expire_on_commit=False) as s:
            for name, account_id in (("member", FIRST_MEMBER), ("reviewer", REVIEWER.account_id)):
                tokens[name] = await open_session(session=s, account_id=account_id, client="bench", config=AuthConfig())
            await s.commit()
        return tokens
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


CHILD = r"""
import asyncio, json, sys, time
from types import SimpleNamespace
url, tokens = sys.argv[1], json.loads(sys.argv[2])

async def main():
    import hitl_app.runtime as rt
    from hitl_app.agent.policy import load_policy_toml, rights_by_tool
    from hitl_app.store.db import make_engines
    from hitl_app.reviewers.inbox import ReviewInbox
    from hitl_app.bus.review_signal import LocalReviewSignal
    import hitl_app.ui.state.inbox as ui
    from hitl_app.ui.state.session import session_principal
    from pathlib import Path
    rights = rights_by_tool(load_policy_toml(Path(ui.__file__).resolve().parents[3] / "examples/policies/team.toml"))
    engines = make_engines(url)
    rt._runtime = SimpleNamespace(engines=engines, inbox=ReviewInbox(engines, rights, LocalReviewSignal()))
    checked = getattr(ui, "checked_read", None)
    cached = {name: await session_principal(tok) for name, tok in tokens.items()}

    async def step(name):
        if checked is not None:
            who, read = await checked(tokens[name], cached[name], "", 1)
        else:
            who = await session_principal(tokens[name])
            read = await ui.rows_for(who, "", 1)
        return read.total

    for name in tokens:
        await step(name)  # warm the pool and the statement caches
    print(json.dumps({"ready": True, "checked": checked is not None}), flush=True)
    for line in sys.stdin:
        n = int(line)
        out = {}
        for name in tokens:
            times = []
            for _ in range(n):
                t = time.perf_counter()
                total = await step(name)
                times.append((time.perf_counter() - t) * 1000)
            out[name] = {"ms": times, "total": total}
        print(json.dumps(out), flush=True)

asyncio.run(main())
"""


def _child(root: Path, url: str, tokens: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, url, json.dumps(tokens)], cwd=root, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**_env(), "PYTHONPATH": str(root)})
    ready = json.loads(proc.stdout.readline() if proc.stdout else "{}")
    if not ready.get("ready"):
        raise RuntimeError(f"the child in {root} did not start")
    return proc


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def watch_reads(before_root: Path, n_reviews: int, n_threads: int, rounds: int, reads: int) -> dict[str, Any]:
    """Both trees, ``rounds`` x ``reads`` steps each, alternating; returns the figures per tree and person."""
    from bench.scale_infra import fresh_postgres

    load_start = load_avg()
    with fresh_postgres() as url:
        tokens = asyncio.run(_prepare(url, n_reviews, n_threads))
        kids = {"before": _child(before_root, url, tokens), "after": _child(ROOT, url, tokens)}
        times: dict[str, dict[str, list[float]]] = {k: {n: [] for n in tokens} for k in kids}
        totals: dict[str, dict[str, int]] = {k: {} for k in kids}
        load_measure = load_avg()
        try:
            for r in range(rounds):
                for label in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
                    kid = kids[label]
                    assert kid.stdin and kid.stdout
                    kid.stdin.write(f"{reads}\n")
                    kid.stdin.flush()
                    got = json.loads(kid.stdout.readline())
                    for name, v in got.items():
                        times[label][name] += v["ms"]
                        totals[label][name] = v["total"]
        finally:
            for kid in kids.values():
                kid.terminate()
                kid.wait(timeout=10)
    q = {label: {name: {"p50": pct(t, 0.5), "p95": pct(t, 0.95), "max": max(t), "n": len(t), "total": totals[label][name]}
                 for name, t in per.items()} for label, per in times.items()}
    return {"load_start": load_start, "load_measure": load_measure, "load_end": load_avg(), "ms": q,
            "before_root": str(before_root)}


def main(argv: list[str] | None = None) -> int:
    """Run and print the figures; returns 0."""
    p = argparse.ArgumentParser(prog="python -m bench.inbox_watch_read", description=__doc__)
    p.add_argument("--before-root", type=Path, required=True)
    p.add_argument("--reviews", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=2_000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--reads", type=int, default=20)
    args = p.parse_args(argv)
    t0 = time.monotonic()
    out = watch_reads(args.before_root.resolve(), args.reviews, args.threads, args.rounds, args.reads)
    print(json.dumps(out, indent=1))
    for label, per in out["ms"].items():
        for name, f in per.items():
            print(f"{label:7} {name:9} p50 {f['p50']:.1f} ms  p95 {f['p95']:.1f} ms  max {f['max']:.1f}  "
                  f"(n={f['n']}, total {f['total']})")
    print(f"load 1m {out['load_start'][0]} / {out['load_measure'][0]} / {out['load_end'][0]}; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
