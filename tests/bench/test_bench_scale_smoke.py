"""The scale benchmark's smoke mode runs end to end (3 workers, Redis, PostgreSQL; SQLite) so it cannot rot.

No timing is asserted: only that every row produced figures, and the two facts that hold at any
speed (every streamed reply arrived whole, every approval sent exactly one mail).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e

SERVER_ROWS = ("sessions_2", "idle", "submits_postgres", "submits_sqlite")
INBOX_ROWS = ("inbox_postgres", "inbox_sqlite", "inbox_page")


def smoke(tmp_path: Path, rows: str, expected: tuple[str, ...]) -> dict:
    """Run ``python -m bench scale --smoke --rows <rows>``; every expected row has figures and a line."""
    out = tmp_path / "scale.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "scale", "--smoke", "--rows", rows, "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, f"bench scale --smoke failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(out.read_text())
    for row in expected:
        assert row in results, f"row {row} missing from the JSON"
        assert "error" not in results[row], f"row {row} failed: {results[row]['error']}"
        assert row in proc.stdout, f"row {row} missing from the printed table"
        assert results[row]["load_before"], f"row {row} has no load average"
    return results


def test_bench_scale_smoke_produces_every_server_row(tmp_path: Path):
    results = smoke(tmp_path, "sessions,idle,submits", SERVER_ROWS)
    sessions = results["sessions_2"]
    assert sessions["errors"] == 0, sessions["error_samples"]
    assert sessions["tokens_delivered"] == 2 * sessions["n_words"], "a streamed reply did not arrive whole"
    assert len(sessions["memory_peak"]["processes"]) >= 4, "the server should be the CLI, gunicorn's master and 3 workers"
    assert results["idle"]["alive_after_window"] == results["idle"]["tabs"], results["idle"]["error_samples"]
    for row in ("submits_postgres", "submits_sqlite"):
        assert results[row]["exactly_once"], f"{row}: {results[row]['mails']} mails, {results[row]['audit_rows']} audit rows"


def test_bench_scale_smoke_produces_the_inbox_rows(tmp_path: Path):
    results = smoke(tmp_path, "inbox,inbox_page", INBOX_ROWS)
    for row in ("inbox_postgres", "inbox_sqlite"):
        got = (results[row]["rows_per_read"], results[row]["total_count"])
        assert got == (50, 200), f"{row}: the reviewer's first page and count were {got}, not 50 of 200"
    page = results["inbox_page"]
    opened, arrived = page["interactive"], page["arrival"]
    assert opened["ms"]["n"] == 2 and opened["items"] == 50, opened
    assert opened["total_text"].startswith("200 waiting"), opened["total_text"]
    assert (arrived["ms"]["n"], arrived["missing"]) == (3, 0), arrived
    assert page["workers"] == 3
