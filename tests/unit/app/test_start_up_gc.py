"""The app module pauses the garbage collector while its modules load and freezes what they made
(``hitl_app/hitl_app.py``); a process that imports it must get a running collector back, or every
reference cycle made afterwards (a request, a run) would never be freed."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import ROOT


def test_the_collector_runs_again_once_the_app_is_loaded_and_the_loaded_objects_are_frozen():
    probe = "import gc, hitl_app.hitl_app; print(gc.isenabled(), gc.get_freeze_count() > 10_000)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True"], out.stdout


def test_a_process_that_had_turned_the_collector_off_keeps_it_off():
    probe = "import gc; gc.disable(); import hitl_app.hitl_app; print(gc.isenabled())"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"
