"""``python -m bench.compare BEFORE.json AFTER.json``: the two runs' tables side by side (median/p95, after/before)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.report import _fmt, rows


def compare(before: dict, after: dict) -> str:
    """A Markdown table: metric, before median|p95, after median|p95, after/before (medians), target, met after."""
    b = {(s, m): (a, p) for s, m, a, p, _, _ in rows(before)}
    out = [
        "| section | metric | before median / p95 | after median / p95 | after/before | target | met (after) |",
        "|---|---|---|---|---|---|---|"
    ]
    for s, m, a, p, target, ok in rows(after):
        ba, bp = b.get((s, m), (None, None))
        ratio = f"{a / ba:.2f}" if isinstance(a, (int, float)) and isinstance(
            ba, (int, float)
        ) and not isinstance(a, bool) and ba else ""
        met = "" if ok is None else ("yes" if ok else "**no**")
        out.append(f"| {s} | {m} | {_fmt(ba)} / {_fmt(bp)} | {_fmt(a)} / {_fmt(p)} | {ratio} | {target} | {met} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(compare(json.loads(Path(sys.argv[1]).read_text()), json.loads(Path(sys.argv[2]).read_text())))
