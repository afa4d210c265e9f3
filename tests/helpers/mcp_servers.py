"""Real MCP servers for the tests: the example notes server and a faulty one, over stdio or
Streamable HTTP on a free loopback port (started here, ended when the test ends)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from hitl_app.agent.mcp.config import McpServer
from tests.helpers.app_server import free_port

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "examples" / "mcp" / "notes_server.py"
FAULTY = ROOT / "tests" / "fixtures" / "mcp_faulty_server.py"


def stdio_server(name: str, script: Path, **env: str) -> McpServer:
    """A stdio server: ``script`` run by this Python, with ``env`` added."""
    return McpServer(name, "stdio", command=sys.executable, args=(str(script),), env=env)


@contextlib.contextmanager
def http_server(name: str, script: Path, **env: str) -> Iterator[McpServer]:
    """``script --http 127.0.0.1:<free port>`` as a child process; yields its ``McpServer`` once the
    port answers (60 s at most), ends the process after."""

    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, str(script), "--http", f"127.0.0.1:{port}"],
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"MCP server {script.name} did not start: {log.read()[-2000:]!r}")
            time.sleep(0.1)
        yield McpServer(name, "streamable_http", url=f"http://127.0.0.1:{port}/mcp")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
