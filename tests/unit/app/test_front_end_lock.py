"""The committed front-end lock (``reflex.lock/``) pins every front-end package the pages use, and a
start that rewrites it, or changes any other file of the source tree, fails the test run (issue 23,
QA M12: the first ``make run`` of a fresh clone added ``recharts`` to the lock, so the clone showed as
modified)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.app_server import AppServer, lock_changes, tree_changes, tree_state

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


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=T", "-c", "user.email=t@example.com",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A git work tree as a fresh clone: committed files, ``.web/`` and ``*.log`` ignored, and one
    file the developer had changed before the start (``edited.md``)."""
    root = tmp_path / "clone"
    root.mkdir()
    _git(root, "init", "-q")
    (root / ".gitignore").write_text(".web/\n*.log\n")
    for name, text in {"requirements.txt": "reflex\n", "README.md": "hello\n", "edited.md": "v1\n"}.items():
        (root / name).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a commit")
    (root / "edited.md").write_text("v2, the developer's\n")
    return root


def test_a_start_that_changes_the_source_tree_is_found(clone: Path):
    before = tree_state(clone)
    assert before is not None and list(before) == ["edited.md"]
    # what a start may do: write ignored files, touch a file (Reflex touches requirements.txt)
    (clone / ".web").mkdir()
    (clone / ".web" / "build.js").write_text("built")
    (clone / "server.log").write_text("started")
    os.utime(clone / "requirements.txt")
    assert tree_changes(before, tree_state(clone)) == []
    # what it must not: rewrite a tracked file, change one already changed again, add or delete one
    (clone / "README.md").write_text("rewritten\n")
    (clone / "edited.md").write_text("v3, the start's\n")
    (clone / "package.json").write_text("{}")
    (clone / "requirements.txt").unlink()
    assert tree_changes(before, tree_state(clone)) == ["README.md", "edited.md", "package.json", "requirements.txt"]


def test_a_tree_outside_git_is_not_compared(tmp_path: Path):
    assert tree_state(tmp_path) is None
    assert tree_changes(None, {"README.md": " M 0"}) == []


def test_the_build_guard_fails_the_start_and_names_the_files(clone: Path, tmp_path: Path):
    """``AppServer._keep_build`` after a start that built the pages (the e2e suite's once a run):
    a changed file of the tree stops the run with a RuntimeError naming it; an unchanged tree passes."""
    server = AppServer(tmp_path / "data", source_root=clone)
    server.app_root = tmp_path / "app"
    (server.app_root / ".web").mkdir(parents=True)
    server._builds_pages, server._key = True, ("guard-test", str(clone))
    server._tree_before = tree_state(clone)
    (clone / "README.md").write_text("rewritten by the start\n")
    with pytest.raises(RuntimeError, match=r"changed these files of the source tree .*: README\.md;"):
        server._keep_build()


def test_the_build_guard_keeps_a_build_that_changed_nothing(clone: Path, tmp_path: Path, monkeypatch):
    from tests.helpers import app_server

    monkeypatch.setattr(app_server, "BUILDS", {})
    monkeypatch.delenv(app_server.SHARED_BUILDS_ENV, raising=False)
    server = AppServer(tmp_path / "data", source_root=clone)
    server.app_root = tmp_path / "app"
    (server.app_root / ".web").mkdir(parents=True)
    (server.app_root / ".web" / "env.json").write_text("{}")
    server._builds_pages, server._key = True, ("guard-test", str(clone))
    server._tree_before = tree_state(clone)
    server._keep_build()
    kept = app_server.BUILDS[server._key]
    assert (kept.web / "env.json").read_text() == "{}"
    shutil.rmtree(kept.web.parent)
