"""The benchmark's smoke mode runs end to end (so it cannot rot); no timing is asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import SECTIONS

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def test_bench_smoke_completes_with_every_section(tmp_path: Path):
    out = tmp_path / "smoke.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"bench --smoke failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(out.read_text())
    for section in SECTIONS:
        assert section in results, f"section {section} missing from the JSON"
        assert "error" not in results[section], f"section {section} failed: {results[section]['error']}"
    # the table printed every section with figures, not dashes
    for title in ("1 floor", "2 websocket", "3 browser", "4 burst", "5 concurrency", "6 long thread", "7 deployed",
                  "8 memory"):
        assert title in proc.stdout, f"{title} missing from the printed table"
    assert results["ws"]["100"]["text_matches"], "the text rebuilt from the websocket differs from the committed reply"
    assert results["concurrency"]["3"]["errors"] == 0, results["concurrency"]["3"]["error_samples"]
    assert results["browser"]["runs"][0]["words_seen_streaming"] == 100, "the page did not show every streamed word"
    assert set(results["long_thread"]) >= {"50", "100"}, "a thread size is missing from section 6"
    assert all(results["long_thread"][n]["reopened_interactive_ms"]["median"] > 0 for n in ("50", "100"))
    for kind in ("idle_tabs", "open_reviews"):
        part = results["memory"][kind]
        assert part["errors"] == 0 and part["steps"][-1]["open"] == 3, f"{kind}: {part}"
