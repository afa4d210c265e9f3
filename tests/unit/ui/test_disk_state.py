"""The disk state manager's scan for expired state files runs at most once per interval.

A real Reflex ``StateManagerDisk`` on a temporary states folder (``REFLEX_STATES_WORKDIR``); files
are made to look expired by setting their mtime, as Reflex judges them by it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from reflex.istate.manager.disk import StateManagerDisk
from reflex.istate.manager.memory import StateManagerMemory

from hitl_app.ui.state.disk import pace_disk_purge


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _expired_file(folder: Path, name: str, age_s: float) -> Path:
    path = folder / f"{name}.pkl"
    path.write_bytes(b"x")
    old = time.time() - age_s
    os.utime(path, (old, old))
    return path


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StateManagerDisk:
    monkeypatch.setenv("REFLEX_STATES_WORKDIR", str(tmp_path / "states"))
    m = StateManagerDisk(token_expiration=60)
    assert m.states_directory == (tmp_path / "states").absolute()
    return m


def test_expired_files_are_still_removed_but_the_folder_is_scanned_once_per_interval(manager: StateManagerDisk):
    folder = manager.states_directory
    clock = FakeClock()
    assert pace_disk_purge(manager, every_s=60, clock=clock) is True

    first = _expired_file(folder, "a", age_s=3600)
    fresh = _expired_file(folder, "fresh", age_s=1)
    manager._purge_expired_states()  # the first call scans
    assert not first.exists() and fresh.exists()

    second = _expired_file(folder, "b", age_s=3600)
    clock.now += 59
    for _ in range(100):  # the write queue's loop calls it after every pass
        manager._purge_expired_states()
    assert second.exists(), "scanned again within the interval"

    clock.now += 1
    manager._purge_expired_states()
    assert not second.exists() and fresh.exists()


def test_pacing_twice_keeps_one_gate_and_other_managers_are_left_alone(manager: StateManagerDisk):
    clock = FakeClock()
    assert pace_disk_purge(manager, every_s=60, clock=clock)
    gate = manager._purge_expired_states
    assert pace_disk_purge(manager, every_s=1, clock=clock)
    assert manager._purge_expired_states is gate

    memory = StateManagerMemory()
    assert pace_disk_purge(memory) is False
