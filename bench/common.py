"""Shared helpers: statistics, the server process tree's CPU and memory, emission traces."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")


def median(values: list[float]) -> float | None:
    """Median of ``values`` (None when empty)."""
    return statistics.median(values) if values else None


def p95(values: list[float]) -> float | None:
    """95th percentile (nearest rank) of ``values`` (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def pct(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1, nearest rank) of ``values`` (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summary(values: list[float]) -> dict[str, Any]:
    """``{"median", "p95", "n"}`` of ``values``."""
    return {"median": median(values), "p95": p95(values), "n": len(values)}


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc)."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo += _children(p)
    return seen


def tree_cpu_seconds(pid: int) -> float:
    """User+system CPU seconds used so far by ``pid`` and its live descendants (/proc/<pid>/stat)."""
    total = 0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
        except (OSError, IndexError, ValueError):
            pass
    return total / CLK_TCK


def tree_rss_mb(pid: int) -> float:
    """Resident memory (MB) of ``pid`` and its descendants (VmRSS from /proc/<pid>/status)."""
    total_kb = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except (OSError, ValueError):
            pass
    return total_kb / 1024


def read_traces(trace_dir: Path, thread_id: str) -> list[dict[str, Any]]:
    """The demo model's emission traces for ``thread_id``, one per model call, oldest first.

    Each is ``{"t": [epoch seconds of each text token], "t_end": epoch seconds of the last chunk}``
    (written by bench/_inject/sitecustomize.py in the app server).
    """
    files = sorted(trace_dir.glob(f"{thread_id}.*.json"), key=lambda p: int(p.name.split(".")[1]))
    return [json.loads(p.read_text()) for p in files]
