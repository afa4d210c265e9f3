"""Start the real app (``reflex run --env prod``) on a free port with its own data folder.

Used by the end-to-end tests, the websocket tests and the benchmark. Each server gets a fresh
``HITL_DATA_DIR`` (so its SQLite file, files sandbox and demo records are its own) unless one is
given, which is how the restart tests reopen the same data. Prod mode serves front end and back end
on one port.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import accounts

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reflex_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the Makefile sets for Reflex (offline, bun from .tools), plus ``extra``."""
    env = dict(os.environ)
    env["PATH"] = f"{ROOT / '.tools/node_modules/.bin'}:{ROOT / '.venv/bin'}:{env.get('PATH', '')}"
    env.setdefault("REFLEX_TELEMETRY_ENABLED", "false")
    env.setdefault("REFLEX_CHECK_LATEST_VERSION", "false")
    env.setdefault("REFLEX_USE_SYSTEM_BUN", "true")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env


SERVERS: dict[str, AppServer] = {}
"""Running servers by base URL: ``WsClient`` finds its server here to sign its browser in."""


@dataclass(frozen=True)
class SignedIn:
    """A test account signed in on a server: its id, email and session token."""

    account_id: int
    email: str
    token: str


class AppServer:
    """One running app process.

    Args:
        data_dir: the HITL_DATA_DIR (created if missing).
        env: extra environment (e.g. ``{"HITL_DEMO_WPS": "0"}``, ``DATABASE_URL``).
        port: the single prod port (a free one by default).
        log_path: where the server's output goes (default ``<data_dir>/server.log``).
        source_root: the source tree the app runs from (default this one; e.g. another git
            worktree, for a before/after benchmark).
    """

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, port: int | None = None, log_path: Path | None = None,
                 source_root: Path | None = None):
        self.source_root = Path(source_root or ROOT)
        self.data_dir = Path(data_dir)
        self.env = {
            "HITL_DATA_DIR": str(self.data_dir),
            "HITL_DEMO_WPS": "0",
            "GUNICORN_CMD_ARGS": "--graceful-timeout 5",  # as `make run`: stop in seconds, not 30
            **(env or {}),
        }
        self.port = port or free_port()
        self.log_path = log_path or self.data_dir / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.app_root: Path | None = None
        self._signed_in: dict[str, SignedIn] = {}

    async def asign_in(self, key: str, *, role: str = "member", name: str = "") -> SignedIn:
        """A signed-in account for ``key`` (e.g. a simulated browser's id): created on first use
        (email ``accounts.email_for(key)``), then signed in through the real route; cached per key."""
        if key not in self._signed_in:
            email = accounts.email_for(key)
            account_id = await accounts.ensure_account(self.env, email, name=name or f"Tester {key[:6]}", role=role)
            token = await asyncio.to_thread(accounts.sign_in, self.url, email)
            self._signed_in[key] = SignedIn(account_id, email, token)
        return self._signed_in[key]

    def sign_in(self, key: str, *, role: str = "member", name: str = "") -> SignedIn:
        """``asign_in`` for sync code (e2e tests)."""
        return accounts.run_sync(self.asign_in(key, role=role, name=name))

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:3456``."""
        return f"http://127.0.0.1:{self.port}"

    def _app_root(self) -> Path:
        """A private app folder for this server: links to the sources, its own ``.web``.

        Reflex's prod build writes the backend's port into ``.web``; two servers built in one
        folder would overwrite each other's build, and a page of the first would then talk to the
        second server's port. So each server gets a folder of symlinks (sources, .venv, .tools) and
        a copy of ``reflex.lock``; Reflex creates ``.web`` there (bun installs from its cache).
        """
        if self.app_root is None:
            self.app_root = Path(tempfile.mkdtemp(prefix=f"hitl-app-{self.port}-"))
            for entry in self.source_root.iterdir():
                if entry.name in (
                    ".web", ".states", "data", ".git", "reflex.lock", "test-artifacts"
                ) or entry.name.endswith("build-lock"):
                    continue
                (self.app_root / entry.name).symlink_to(entry)
            if (self.source_root / "reflex.lock").is_dir():
                shutil.copytree(self.source_root / "reflex.lock", self.app_root / "reflex.lock")
        return self.app_root

    def start(self, timeout: float = 240) -> AppServer:
        """Start the server and wait until ``/ping`` answers and the page is served.

        Raises RuntimeError with the log's tail if it does not come up within ``timeout`` seconds.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        cmd = [
            str(ROOT / ".venv/bin/reflex"), "run", "--env", "prod", "--frontend-port", str(self.port), "--backend-port",
            str(self.port), "--loglevel", "info"
        ]
        self.proc = subprocess.Popen(
            cmd, cwd=self._app_root(), env=reflex_env(self.env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/ping", timeout=2) as r:
                    if r.status == 200:
                        with urllib.request.urlopen(f"{self.url}/", timeout=5) as page:
                            if page.status == 200:
                                SERVERS[self.url] = self
                                return self
            except OSError:
                pass
            time.sleep(0.5)
        tail = self.log_path.read_text(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"app did not start on port {self.port}:\n{tail}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        """Stop the whole process group (``signal.SIGKILL`` simulates a crash)."""
        SERVERS.pop(self.url, None)
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None
        if self.app_root is not None:
            shutil.rmtree(self.app_root, ignore_errors=True)
            self.app_root = None
        # the server's workers may outlive the parent by a moment; wait for the port to free up
        for _ in range(50):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.2)

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
