"""The committed front-end lock (``reflex.lock/``) pins every front-end package the pages use, and a
start that rewrites it fails the test run (issue 23, QA M12: the first ``make run`` of a fresh clone
added ``recharts`` to the lock, so the clone showed as modified)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.app_server import lock_changes

ROOT = Path(__file__).resolve().parents[3]


def test_the_committed_lock_pins_the_charts_package_the_metrics_page_uses():
    package = json.loads((ROOT / "reflex.lock" / "package.json").read_text())
    assert "recharts" in package["dependencies"], "rx.recharts on /metrics needs recharts in reflex.lock"
    assert '"recharts":' in (ROOT / "reflex.lock" / "bun.lock").read_text()


def test_a_start_that_changes_the_lock_is_found(tmp_path: Path):
    committed, after = tmp_path / "committed", tmp_path / "after"
    for folder in (committed, after):
        folder.mkdir()
        (folder / "package.json").write_text('{"dependencies": {}}')
        (folder / "bun.lock").write_text("lock")
    assert lock_changes(committed, after) == []
    (after / "bun.lock").write_text("lock + recharts")
    (after / "extra.json").write_text("{}")
    assert lock_changes(committed, after) == ["bun.lock", "extra.json"]
