"""A real LangGraph server (``langgraph dev``, the in-memory runtime of ``langgraph-cli[inmem]``) on loopback,
serving ``examples/deployed_agent`` for the tests of the deployed-agent mode (``HITL_AGENT_URL``).

Each server runs in its own folder (its ``langgraph.json`` names the example's graph by absolute path;
the dev server keeps its state in ``.langgraph_api/`` there, so a restart in the same folder keeps the
threads and a ``fresh`` one loses them, as a restarted in-memory dev server does). The example's tools
write one JSON line per effect to ``actions.jsonl`` there (``actions()``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.helpers.app_server import free_port, stop_process_group
from tests.helpers.paths import ROOT

EXAMPLE = ROOT / "examples" / "deployed_agent"


class LangGraphDev:
    """``langgraph dev --no-browser --no-reload`` on 127.0.0.1 (see the module).

    Args:
        folder: its working folder (made when missing; a temporary one by default).
        wps: the example model's pace in words per second (0: no pacing).
        port: the port (a free one by default; kept across ``restart``).
        env: more environment for the server (e.g. the benchmark's trace folder).
        path: folders put before the repository on its ``PYTHONPATH`` (e.g. the benchmark's ``sitecustomize``).
        allow_blocking: ``--allow-blocking`` (the dev server otherwise refuses blocking calls in graph code,
            such as the benchmark's trace writes).
    """

    def __init__(
        self, folder: Path | None = None, *, wps: float = 0, port: int | None = None, env: dict[str, str] | None = None,
        path: tuple[Path, ...] = (), allow_blocking: bool = False,
    ) -> None:
        self.folder = folder or Path(tempfile.mkdtemp(prefix="langgraph-dev-"))
        self.port = port or free_port()
        self.wps = wps
        self.extra_env = dict(env or {})
        self.path = path
        self.allow_blocking = allow_blocking
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.folder / "server.log"

    def actions(self) -> list[dict[str, Any]]:
        """The effects the example's tools had, in order (one dict per call)."""
        path = self.folder / "actions.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def start(self, timeout: float = 120) -> LangGraphDev:
        """Start the server and wait until ``/ok`` answers; RuntimeError with the log's tail otherwise."""
        self.folder.mkdir(parents=True, exist_ok=True)
        graphs = {"agent": f"{EXAMPLE / 'agent.py'}:graph", "question": f"{EXAMPLE / 'question.py'}:graph"}
        config = {"dependencies": ["."], "graphs": graphs}
        (self.folder / "langgraph.json").write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "HITL_"))}
        env.update(
            PYTHONPATH=os.pathsep.join([*map(str, self.path), str(ROOT)]), DEPLOYED_AGENT_WPS=str(self.wps),
            DEPLOYED_AGENT_ACTIONS=str(self.folder / "actions.jsonl"),
            LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", PYTHONUNBUFFERED="1", **self.extra_env,
        )
        cmd = [str(ROOT / ".venv/bin/langgraph"), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
               "--port", str(self.port), "--n-jobs-per-worker", "10", "--config", str(self.folder / "langgraph.json"),
               *(["--allow-blocking"] if self.allow_blocking else [])]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=self.folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/ok", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        tail = self.log_path.read_text(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"langgraph dev did not start on port {self.port}:\n{tail}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        """Stop its process group (``SIGTERM`` lets it write its state to its folder first)."""
        if self.proc is None:
            return
        stop_process_group(self.proc, sig, timeout)
        self.proc = None

    def restart(self, *, fresh: bool = False) -> LangGraphDev:
        """Stop and start again on the same port; ``fresh``: without the state it kept (threads lost)."""
        self.stop()
        if fresh:
            shutil.rmtree(self.folder / ".langgraph_api", ignore_errors=True)
        return self.start()

    def close(self) -> None:
        """Stop it and remove its folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> LangGraphDev:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
