"""``python -m bench [--smoke] [--repeats N] [--out PATH] [--sections 1,2,...]``: run the benchmark, print the table, write JSON.

Starts the app in prod mode (tests/helpers/app_server.py ``AppServer``; section 8 starts two more,
back-end only, bench/memory.py) three times with the
demo model at the paces the sections need: 100 words/s (sections 2, 3, 6), 0 = unpaced (4) and
20 words/s (5); each server gets its own data folder and the model trace hook
(bench/_inject/sitecustomize.py). Section 1 (the floor) runs in this process. Section 7 (bench/deployed.py)
starts ``langgraph dev`` with the example deployment and the app in front of it (``HITL_AGENT_URL``).

``python -m bench scale [--smoke] [--sessions N,...] ...``: the scale section (bench/scale.py, docs/scale.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import summary
from bench.memory import SETTLE_S
from bench.report import SECTIONS, render_table

ROOT = Path(__file__).resolve().parents[1]
INJECT = Path(__file__).resolve().parent / "_inject"


def _config(smoke: bool, repeats: int | None) -> dict[str, Any]:
    if smoke:
        return {"wps": 100, "n_main": 100, "n_ws": [50, 100], "repeats": repeats or 1, "review_repeats": 1, "burst_n": 300,
                "conc_sessions": [1, 3], "conc_words": 20, "conc_wps": 20, "long_sizes": [50, 100], "scroll_s": 5,
                "memory_counts": [1, 3], "memory_settle_s": 0.5, "smoke": True}
    return {"wps": 100, "n_main": 2000, "n_ws": [200, 2000], "repeats": repeats or 3, "review_repeats": 5, "burst_n": 2000,
            "conc_sessions": [1, 10, 50], "conc_words": 200, "conc_wps": 20, "long_sizes": [50, 10_000], "scroll_s": 20,
            "memory_counts": [1, 100, 1000], "memory_settle_s": SETTLE_S}


def _server(data_dir: Path, wps: float, trace_dir: Path, desk_off: bool = False):
    sys.path.insert(0, str(ROOT))
    from tests.helpers.app_server import AppServer

    env = {
        # section 3's "desk off" server: grants, rights, drafts, kept choices and previews answer at once
        # (bench/_inject/desk_off.py), the floor the desk's card is held to
        **({"HITL_BENCH_DESK_OFF": "1"} if desk_off else {}),
        "HITL_DEMO_WPS": str(wps),
        "HITL_BENCH_TRACE_DIR": str(trace_dir),
        # The run limits (HITL_MAX_RUNS 32 per worker, HITL_RUNS_PER_OWNER, messages per minute) refuse
        # what section 5 asks for on purpose (50 runs at once); the bench measures streaming, not refusals.
        "HITL_MAX_RUNS": "10000",
        "HITL_MESSAGES_PER_MINUTE": "10000",
        "PYTHONPATH": os.pathsep.join([str(INJECT), str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    return AppServer(data_dir, env=env).start()


def _guard(results: dict[str, Any], key: str, fn) -> None:
    t0 = time.monotonic()
    try:
        results[key] = fn()
    except Exception as exc:  # noqa: BLE001 - a failed section is reported, the others still run
        traceback.print_exc()
        results[key] = {"error": f"{type(exc).__name__}: {exc}"}
    results[key]["section_s"] = round(time.monotonic() - t0, 1)
    print(f"[bench] {key} done in {results[key]['section_s']} s", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 when every section produced figures, 1 otherwise.

    ``python -m bench scale ...`` runs the scale section instead (``bench.scale.main``).
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["scale"]:
        from bench.scale import main as scale_main

        return scale_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="small N, 1 repeat, few sessions (CI; < 3 minutes)")
    parser.add_argument("--repeats", type=int, default=None, help="repeated runs per measurement (default 3)")
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/<time>[-smoke].json)")
    parser.add_argument("--sections", default="1,2,3,4,5,6,7,8", help="which sections to run, e.g. 1,2")
    parser.add_argument("--label", default="", help="a label stored in the JSON (e.g. before/after)")
    args = parser.parse_args(argv)
    cfg = _config(args.smoke, args.repeats)
    want = {int(s) for s in args.sections.split(",") if s.strip()}
    started = time.monotonic()
    results: dict[str, Any] = {
        "label": args.label,
        "smoke": args.smoke,
        "config": cfg,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    tmp = Path(tempfile.mkdtemp(prefix="hitl-bench-"))
    try:
        from bench import appbench, browser, floor, seed

        if 1 in want:
            def sec1():
                main = floor.run_floor(cfg["n_main"], cfg["wps"], cfg["repeats"])
                ws = {str(n): main if n == cfg["n_main"] else floor.run_floor(n, cfg["wps"], cfg["repeats"]) for n in cfg["n_ws"]}
                return {"main": main, "ws": ws, "burst": floor.run_floor(cfg["burst_n"], 0, cfg["repeats"])}
            _guard(results, "floor", sec1)
        if want & {2, 3, 6}:
            data = tmp / "paced"
            trace = data / "trace"
            long_tids = {n: seed.seed_long_thread(data, n) for n in cfg["long_sizes"]} if 6 in want else {}
            server = _server(data, cfg["wps"], trace)
            try:
                if 2 in want:
                    _guard(
                        results, "ws",
                        lambda: {
                            str(n): appbench.run_ws_replies(server.url, n, cfg["repeats"], server.proc.pid) for n in cfg["n_ws"]
                        }
                    )
                if want & {3, 6}:
                    bb = browser.BrowserBench(server.url, trace)
                    try:
                        if 3 in want:
                            def sec3():
                                runs = [bb.stream_reply(cfg["n_main"]) for _ in range(cfg["repeats"])]
                                reviews, off = _review_flows(bb, tmp / "desk-off", cfg)
                                out = _browser_summary(runs, reviews, bb.errors)
                                out["desk_off"] = {
                                    k: summary([r[k] for r in off if r[k] is not None])
                                    for k in ("interrupt_to_card_ms", "submit_to_first_resumed_token_ms")
                                }
                                out["desk_off"]["reviews"] = off
                                out["floor_page"] = bb.floor_page(cfg["n_main"], cfg["wps"])
                                return out
                            _guard(results, "browser", sec3)
                        if 6 in want:
                            # the long one is also scrolled to its first message (earlier pages load as it goes)
                            _guard(results, "long_thread", lambda: {
                                str(n): _long_summary([
                                    bb.open_long_thread(tid, n, scroll_s=cfg["scroll_s"] if n > 50 else 0)
                                    for _ in range(cfg["repeats"])
                                ]) for n, tid in long_tids.items()
                            })
                    finally:
                        bb.close()
            finally:
                server.stop()
        if 4 in want:
            data = tmp / "burst"
            server = _server(data, 0, data / "trace")
            try:
                bb = browser.BrowserBench(server.url, data / "trace")
                try:
                    def sec4():
                        runs = [bb.stream_reply(cfg["burst_n"]) for _ in range(cfg["repeats"])]
                        return {
                            "n_words": cfg["burst_n"],
                            "send_to_complete_ms": summary([r["send_to_complete_ms"] for r in runs]),
                            "longest_task_ms": summary([r["longest_task_ms"] for r in runs]),
                            "main_thread_ms_per_token": summary([r["main_thread_ms_per_token"] for r in runs]),
                            "errors": bb.errors[:10],
                            "runs": [{k: v for k, v in r.items() if k != "lags_ms"} for r in runs],
                        }
                    _guard(results, "burst", sec4)
                finally:
                    bb.close()
            finally:
                server.stop()
        if 5 in want:
            data = tmp / "conc"
            server = _server(data, cfg["conc_wps"], data / "trace")
            try:
                def sec5():
                    out = {}
                    for k in cfg["conc_sessions"]:
                        out[str(k)] = appbench.run_concurrency(server.url, k, cfg["conc_words"], server.proc.pid, data / "trace")
                        time.sleep(1)
                    return out
                _guard(results, "concurrency", sec5)
            finally:
                server.stop()
        if 7 in want:
            from bench.deployed import run_deployed

            _guard(results, "deployed", lambda: run_deployed(cfg, tmp / "deployed", _browser_summary))
        if 8 in want:
            from bench.memory import run_memory

            _guard(results, "memory", lambda: run_memory(tmp / "memory", cfg["memory_counts"], cfg["memory_settle_s"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["total_s"] = round(time.monotonic() - started, 1)
    out = args.out or ROOT / "bench" / "results" / (
        datetime.now().strftime("%Y%m%d-%H%M%S") + ("-smoke" if args.smoke else "") + ".json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    print(render_table(results))
    print(f"\nJSON: {out}")
    missing = [s for s in SECTIONS if s in results and "error" in results[s]]
    return 1 if missing else 0


def _review_flows(bb: Any, data: Path, cfg: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Section 3's review flows on ``bb``'s server and, alternating with them (A,B then B,A), on a
    second server of the same code with the desk switched off (``desk_off``): both lists of
    ``BrowserBench.review_flow`` results. The desk-off server is stopped at the end."""
    from bench import browser

    server = _server(data, cfg["wps"], data / "trace", desk_off=True)
    off_bb = browser.BrowserBench(server.url, data / "trace", share=bb)
    try:
        off_bb.review_flow()  # warm-up: its server's first review
        reviews: list[dict[str, Any]] = []
        off: list[dict[str, Any]] = []
        for i in range(cfg["review_repeats"]):
            pair = ((bb, reviews), (off_bb, off)) if i % 2 == 0 else ((off_bb, off), (bb, reviews))
            for bench, into in pair:
                into.append(bench.review_flow())
        bb.errors += off_bb.errors
        return reviews, off
    finally:
        off_bb.close()
        server.stop()


CPU_KEYS = ("main_thread_cpu_ms_per_token", "renderer_cpu_ms_per_token", "observer_ms_per_token")


def _browser_summary(runs: list[dict[str, Any]], reviews: list[dict[str, Any]], errors: list[str]) -> dict[str, Any]:
    lags = [x for r in runs for x in r["lags_ms"]]
    return {
        "n_words": runs[0]["words_seen_streaming"] if runs else 0,
        "send_to_complete_ms": summary([r["send_to_complete_ms"] for r in runs]),
        "lag_ms": summary(lags),
        "model_first_to_last_ms": summary([r["model_first_to_last_ms"] for r in runs if r["model_first_to_last_ms"] is not None]),
        "last_emitted_to_complete_ms": summary(
            [r["last_emitted_to_complete_ms"] for r in runs if r["last_emitted_to_complete_ms"] is not None]
        ),
        "main_thread_ms_per_token": summary([r["main_thread_ms_per_token"] for r in runs]),
        **{k: summary([r[k] for r in runs]) for k in CPU_KEYS},
        "script_s": summary([r["script_s"] for r in runs]),
        "longest_task_ms": summary([r["longest_task_ms"] for r in runs]),
        "long_tasks": summary([r["long_tasks"] for r in runs]),
        "send_to_first_token_ms": summary([r["send_to_first_token_ms"] for r in runs if r["send_to_first_token_ms"] is not None]),
        "interrupt_to_card_ms": summary([r["interrupt_to_card_ms"] for r in reviews if r["interrupt_to_card_ms"] is not None]),
        "submit_to_first_resumed_token_ms": summary([r["submit_to_first_resumed_token_ms"] for r in reviews]),
        "page_errors": errors[:10],
        "runs": [{k: v for k, v in r.items() if k != "lags_ms"} for r in runs],
        "reviews": reviews,
    }


SCROLL_KEYS = ("scroll_ms", "scroll_longest_task_ms", "scroll_long_tasks", "scroll_elements_after")


def _long_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "messages_in_dom": runs[0]["messages_in_dom"] if runs else 0,
        "interactive_ms": summary([r["interactive_ms"] for r in runs]),
        "reopened_interactive_ms": summary([r["reopened_interactive_ms"] for r in runs]),
        "card_visible_ms": summary([r["card_visible_ms"] for r in runs]),
        "first_click_round_trip_ms": summary([r["first_click_round_trip_ms"] for r in runs]),
        "longest_task_ms": summary([r["longest_task_ms"] for r in runs]),
        "elements": summary([r["elements"] for r in runs]),
        **{k: summary([r[k] for r in runs if k in r]) for k in SCROLL_KEYS},
        "scroll_reached_first": all(r.get("scroll_reached_first") for r in runs) if "scroll_ms" in runs[0] else None,
        "runs": runs,
    }


if __name__ == "__main__":
    sys.exit(main())
