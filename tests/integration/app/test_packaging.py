"""`make run` installs requirements.txt only: the app must start with exactly that.

A runtime dependency that only arrived through requirements-test.txt (greenlet came with
Playwright) once made `make run` fail on a fresh machine while `make test` passed. This test builds
a virtual environment from requirements.txt alone (pip's cache makes it quick) and opens the app's
runtime in it: settings, database, checkpointer, demo workspace and agent.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

# ~50 s of pip: `make test` runs it (early, on its own xdist worker); `make test-fast` leaves it out.
pytestmark = pytest.mark.packaging

OPEN_RUNTIME = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
import hitl_app.hitl_app  # the Reflex app module, as `reflex run` imports it
from hitl_app.runtime import open_runtime

async def main():
    async with open_runtime() as runtime:
        view = await runtime.service.load("1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b")
        print("runtime ok", view.status)

asyncio.run(main())
"""


def test_the_app_starts_with_requirements_txt_alone(tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        # --no-compile: the app's start compiles what it imports; pip would compile every installed module
        # (62 -> 46 s for this install on this machine)
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
         "-r", str(ROOT / "requirements.txt")],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    run = subprocess.run(
        [str(venv / "bin/python"), "-c", OPEN_RUNTIME, str(ROOT)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"HITL_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin", "REFLEX_TELEMETRY_ENABLED": "false"},
        timeout=300,
    )
    assert run.returncode == 0 and "runtime ok idle" in run.stdout, (run.stdout + run.stderr)[-3000:]
