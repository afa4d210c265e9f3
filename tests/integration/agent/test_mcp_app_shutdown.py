"""The app owns its stdio MCP servers' processes: started with it, alive while it runs, ended when
it stops, even a badly behaved server that outlives its stdin (only the SDK's shutdown, run by the
app's lifespan, ends it; the SDK starts it in a session of its own, out of the app's process group)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from tests.helpers.app_server import AppServer
from tests.helpers.mcp_servers import FAULTY


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait(check, deadline_s: float = 60.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_a_stdio_servers_process_lives_with_the_app_and_ends_with_it(tmp_path: Path):
    pid_file = tmp_path / "pids"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"faulty": {
        "command": sys.executable, "args": [str(FAULTY)],
        "env": {"FAULTY_PID_FILE": str(pid_file), "FAULTY_STUBBORN": "1"}}}}), encoding="utf-8")
    app = AppServer(tmp_path / "app", env={"HITL_MCP": str(config)}, frontend=False)
    app.start()
    try:
        assert _wait(lambda: pid_file.exists() and pid_file.read_text(encoding="utf-8").strip() != "")
        [pid] = [int(line) for line in pid_file.read_text(encoding="utf-8").split()]
        assert _alive(pid), "the server's process should live as long as the app"
    finally:
        app.stop()
    ended = _wait(lambda: not _alive(pid))
    if not ended:
        os.kill(pid, signal.SIGKILL)  # the test's own child's child: not left behind for an hour
    assert ended, "the server's process outlived the app"
    assert len(pid_file.read_text(encoding="utf-8").split()) == 1  # listed and kept: started once
