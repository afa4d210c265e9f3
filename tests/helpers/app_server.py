"""Start the real app (``reflex run --env prod``) on a free port with its own data folder.

Used by the end-to-end tests, the websocket tests and the benchmark. Each server gets a fresh
``HITL_DATA_DIR`` (so its SQLite file, files sandbox and demo records are its own) unless one is
given, which is how the restart tests reopen the same data. Prod mode serves front end and back end
on one port.

``frontend=False`` starts the same prod back end without building or serving the pages
(``reflex run --env prod --backend-only``): ~3 s instead of ~15 s and no bun/vite build taking the
CPU. It is what a test that talks to the websocket and the HTTP routes needs.

With pages, the first server of a test process builds them (``reflex run --env prod``: compile, bun,
vite); the next ones with the same ``FRONTEND_SETTINGS`` serve a copy of that build with their own
port written in (Reflex bakes the back end's address into the pages' ``env.json``), through
``serve_built.py``: Reflex's same prod server, without the compile and build steps.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import gzip
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.helpers import accounts

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process_group(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 20) -> None:
    """Send ``sig`` to ``proc``'s process group (started with ``start_new_session``) and wait up to
    ``timeout`` seconds for it to end; then ``SIGKILL`` it and wait 10 s more."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


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


FRONTEND_SETTINGS = ("HITL_TEST_HOOKS",)
"""The server settings the compiled pages depend on (``hitl_app/hitl_app.py``: the test-only pages exist
with ``HITL_TEST_HOOKS=1``). Servers of one source tree that agree on these share one front-end build."""


@dataclass(frozen=True)
class FrontEndBuild:
    """A finished prod ``.web`` folder (without ``node_modules``) and the port baked into it."""

    web: Path
    port: int


BUILDS: dict[tuple[str, ...], FrontEndBuild] = {}
"""Front-end builds of this test process by (source root, ``source_stamp``, ``FRONTEND_SETTINGS`` values)."""

SHARED_BUILDS_ENV = "HITL_TEST_SHARED_BUILDS"
"""A folder where the test processes of one run (pytest-xdist workers) share their builds: the first
process to need a build makes it under a file lock, the others wait for it and copy it (set by
``tests/conftest.py`` in the controlling process, which removes the folder at the end)."""


def _forget_builds() -> None:
    for build in BUILDS.values():
        if not os.environ.get(SHARED_BUILDS_ENV) or not build.web.is_relative_to(os.environ[SHARED_BUILDS_ENV]):
            shutil.rmtree(build.web.parent, ignore_errors=True)


atexit.register(_forget_builds)


def _shared_slot(key: tuple[str, ...]) -> Path | None:
    """The shared folder for the build of ``key`` (None: this process builds for itself)."""
    shared = os.environ.get(SHARED_BUILDS_ENV)
    if not shared:
        return None
    return Path(shared) / hashlib.sha256("\0".join(key).encode()).hexdigest()[:16]


def _shared_build(slot: Path) -> FrontEndBuild | None:
    """The build another process of this run finished in ``slot``, if any."""
    try:
        return FrontEndBuild(slot / ".web", int((slot / "port").read_text()))
    except (OSError, ValueError):
        return None


def source_stamp(root: Path) -> str:
    """A digest of the names, sizes and modification times of the files the pages are compiled from
    (``hitl_app/``, ``assets/``, ``rxconfig.py``): a source changed during a test run (a checkout, a
    merge) makes the next server build again instead of serving pages whose states its back end lacks."""
    digest = hashlib.sha256()
    files = [root / "rxconfig.py", *(root / "hitl_app").rglob("*.py"), *(root / "assets").rglob("*")]
    for path in sorted(files):
        with contextlib.suppress(OSError):
            st = path.stat()
            digest.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def lock_changes(committed: Path, after_start: Path) -> list[str]:
    """The files of the front-end lock folder that differ between the committed copy and the copy a
    start left behind (names relative to the folder; ``[]`` when the start changed nothing)."""
    if not committed.is_dir():
        return []
    names = {p.relative_to(committed) for p in committed.rglob("*") if p.is_file()}
    names |= {p.relative_to(after_start) for p in after_start.rglob("*") if p.is_file()}
    return sorted(
        str(n) for n in names
        if not (committed / n).is_file() or not (after_start / n).is_file()
        or (committed / n).read_bytes() != (after_start / n).read_bytes()
    )


def tree_state(root: Path) -> dict[str, str] | None:
    """What ``git status`` says differs in the source tree at ``root`` from its last commit: each changed,
    deleted or untracked (not ignored) file's path (relative to the repository) -> its status and a
    digest of its content now, so a second change of an already changed file shows too. None when
    ``root`` is not in a git work tree (an unpacked copy): nothing to compare then.

    ``--no-optional-locks``: the look writes nothing, not even the index's cached file times (a
    developer's or another helper's git command in the same tree is never kept waiting)."""
    try:
        out = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(root), "status", "--porcelain=v1", "-z", "--untracked-files=all",
             "--", "."],
            capture_output=True, check=True, timeout=120,
        ).stdout
        top = Path(subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                                  check=True, timeout=60, text=True).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None
    state: dict[str, str] = {}
    entries = iter(out.split(b"\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        status, name = entry[:2].decode(), os.fsdecode(entry[3:])
        if status[0] in "RC":
            next(entries, None)  # a rename's or copy's old path follows its new one
        path = top / name
        try:
            content = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            state[name] = f"{status} {hashlib.sha256(content).hexdigest()}"
        except OSError:
            state[name] = f"{status} -"  # deleted (or unreadable)
    return state


def tree_changes(before: dict[str, str] | None, after: dict[str, str] | None) -> list[str]:
    """The files of the source tree whose ``tree_state`` differs between two looks (``[]`` when either is None)."""
    if before is None or after is None:
        return []
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def point_build_at_port(web: Path, old: int, new: int) -> int:
    """Rewrite ``localhost:<old>`` to ``localhost:<new>`` in a copied ``.web`` (``env.json`` and the
    bundled ``reflex-env`` module, with its precompressed ``.gz``); returns how many files changed.

    Raises RuntimeError if ``env.json`` or no built asset named the old port (the build's layout
    changed: a page would talk to the wrong server).
    """
    pattern = re.compile(rf"(localhost|127\.0\.0\.1):{old}(?!\d)")
    changed: list[Path] = []
    for path in [web / "env.json", *web.glob("build/**/*.js"), *web.glob("build/**/*.html")]:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        new_text = pattern.sub(rf"\g<1>:{new}", text)
        if new_text != text:
            path.write_text(new_text, encoding="utf-8", errors="surrogateescape")
            changed.append(path)
            packed = path.with_name(path.name + ".gz")
            if packed.exists():
                packed.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    if web / "env.json" not in changed or not any(p.suffix == ".js" for p in changed):
        raise RuntimeError(f"the build in {web} does not name port {old} where expected; changed: {changed}")
    return len(changed)


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
        frontend: False = the back end only (websocket, ``/ping``, the auth and probe routes; no
            pages): no front-end build.
    """

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, port: int | None = None, log_path: Path | None = None,
                 source_root: Path | None = None, frontend: bool = True):
        self.source_root = Path(source_root or ROOT)
        self.frontend = frontend
        self.data_dir = Path(data_dir)
        self.env = {
            "HITL_DATA_DIR": str(self.data_dir),
            "HITL_DEMO_WPS": "0",
            "GUNICORN_CMD_ARGS": "--graceful-timeout 5",  # as `make run`: stop in seconds, not 30
            # its own run bus on a shared Redis: the servers of concurrent tests (xdist) would else hear
            # each other's review signals, whose account ids their databases share
            "HITL_REDIS_PREFIX": f"t{uuid.uuid4().hex[:10]}:",
            **(env or {}),
        }
        self.port = port or free_port()
        self.log_path = log_path or self.data_dir / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.app_root: Path | None = None
        self._builds_pages = False
        self._build_lock: IO[str] | None = None
        self._key: tuple[str, ...] = ()
        self._tree_before: dict[str, str] | None = None
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

    def _build_key(self) -> tuple[str, ...]:
        return (str(self.source_root), source_stamp(self.source_root),
                *(self.env.get(k, os.environ.get(k, "")) for k in FRONTEND_SETTINGS))

    def _command(self) -> list[str]:
        """``reflex run --env prod`` for this server: backend-only, on a copy of an earlier build, or
        building the pages."""
        port = str(self.port)
        if not self.frontend:
            return [str(ROOT / ".venv/bin/reflex"), "run", "--env", "prod", "--backend-only", "--backend-port", port,
                    "--loglevel", "info"]
        args = ["run", "--env", "prod", "--frontend-port", port, "--backend-port", port, "--loglevel", "info"]
        self._key = self._build_key()
        build = BUILDS.get(self._key)
        if build is None and (slot := _shared_slot(self._key)) is not None:
            # one process of the run builds; the others wait here (the build's own time, ~1-2 min)
            slot.parent.mkdir(parents=True, exist_ok=True)
            self._build_lock = open(slot.with_suffix(".lock"), "w")  # noqa: SIM115 - released in _release_build_lock
            fcntl.flock(self._build_lock, fcntl.LOCK_EX)
            if (build := _shared_build(slot)) is not None:
                BUILDS[self._key] = build
                self._release_build_lock()
        self._builds_pages = build is None
        if build is None:
            self._tree_before = tree_state(self.source_root)  # a start must change no file of the tree (QA M12)
            return [str(ROOT / ".venv/bin/reflex"), *args]
        web = self._app_root() / ".web"
        shutil.rmtree(web, ignore_errors=True)
        shutil.copytree(build.web, web, symlinks=True)
        point_build_at_port(web, build.port, self.port)
        return [str(ROOT / ".venv/bin/python"), str(ROOT / "tests/helpers/serve_built.py"), *args]

    def _keep_build(self) -> None:
        """After a start that built the pages: keep a copy of them for the next servers of this process.

        Raises RuntimeError when the start changed a file of the source tree, as the first ``make run``
        of a fresh clone would (issue 23, QA M12): a tracked file changed, deleted or an untracked one
        added, by ``git status`` before and after the build (ignored files do not count; ``tree_state``),
        or the committed front-end lock (``reflex.lock/``, copied into the server's own folder, so git
        does not see it there) rewritten: the lock must pin every front-end package, or a fresh clone
        resolves what is missing at whatever version the registry serves (``recharts`` was missing)."""
        key = self._key
        if not self._builds_pages or key in BUILDS or self.app_root is None:
            return
        tree = tree_changes(self._tree_before, tree_state(self.source_root))
        lock = lock_changes(self.source_root / "reflex.lock", self.app_root / "reflex.lock")
        if tree or lock:
            problems = []
            if lock:
                kept = self.data_dir / "reflex.lock-after-start"
                shutil.copytree(self.app_root / "reflex.lock", kept, dirs_exist_ok=True)
                problems.append(f"it rewrote the committed front-end lock ({', '.join(lock)}): copy {kept}/* over "
                                "reflex.lock/ and commit it")
            if tree:
                problems.append(
                    f"it changed these files of the source tree {self.source_root} (git status before and after the "
                    f"build): {', '.join(tree)}; a start must leave a fresh clone as committed (commit what the start "
                    "writes, or make it write elsewhere or into an ignored file). If you edited them yourself during "
                    "the build, run the tests again"
                )
            self._release_build_lock()
            self.stop()
            raise RuntimeError("starting the app changed the source tree: " + "; ".join(problems))
        slot = _shared_slot(key)
        keep = (slot if slot is not None else Path(tempfile.mkdtemp(prefix="hitl-web-"))) / ".web"
        shutil.copytree(self.app_root / ".web", keep, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))
        if slot is not None:  # written last: the other processes take the build once the port is there
            (slot / "port").write_text(str(self.port))
        BUILDS[key] = FrontEndBuild(keep, self.port)
        self._release_build_lock()

    def _release_build_lock(self) -> None:
        """Let the run's other processes look for the shared build (found, made, or failed)."""
        lock, self._build_lock = self._build_lock, None
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()

    def start(self, timeout: float = 240) -> AppServer:
        """Start the server and wait until ``/ping`` answers and (``frontend``) the page is served.

        A page build that failed only in react-router's prerender fetch is tried once more: that fetch
        has a fixed 10 s limit (``timeout = 1e4`` in @react-router/dev's ``prerender``, not settable from
        ``react-router.config.js``), which a loaded 2-core machine can exceed while importing the server
        bundle; nothing in the app is wrong then.

        Raises RuntimeError with the log's tail if it does not come up within ``timeout`` seconds.
        """
        try:
            return self._start(timeout)
        except RuntimeError as exc:
            if "Prerender: Request" not in str(exc):
                raise
            return self._start(timeout)

    def _start(self, timeout: float) -> AppServer:
        """One try of ``start`` (its log tail in the RuntimeError is this try's alone)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")
        cmd = self._command()
        self.proc = subprocess.Popen(
            cmd, cwd=self._app_root(), env=reflex_env(self.env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/ping", timeout=2) as r:
                    if r.status == 200 and (not self.frontend or self._page_served()):
                        SERVERS[self.url] = self
                        self._keep_build()
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        with open(self.log_path, "rb") as written:
            written.seek(offset)
            output = written.read().decode(errors="replace")
        tail = output[-3000:]
        if "Prerender: Request" in output and "Prerender: Request" not in tail:
            tail = "(Prerender: Request failed, above)\n" + tail
        self._release_build_lock()  # no build: the next process of the run tries its own
        self.stop()
        raise RuntimeError(f"app did not start on port {self.port}:\n{tail}")

    def _page_served(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/", timeout=5) as page:
            return page.status == 200

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        """Stop the whole process group (``signal.SIGKILL`` simulates a crash)."""
        SERVERS.pop(self.url, None)
        if self.proc is None:
            return
        stop_process_group(self.proc, sig, timeout)
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
