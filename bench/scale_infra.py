"""The scale section's surroundings: a private Redis, a fresh PostgreSQL database, the app with N workers,
and what every process (server, workers, Redis, this client) costs.

Redis is a private ``redis-server`` on a free port (no persistence), so its memory, connections and
pub/sub channels are the app's alone (the shared Redis on 6379 serves other work). PostgreSQL is a
fresh ``hitl_scale_<hex>`` database on the shared server (``HITL_TEST_PG``), dropped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from bench.common import process_tree

ROOT = Path(__file__).resolve().parents[1]
INJECT = Path(__file__).resolve().parent / "_inject"


RUN_LIMITS = {"HITL_RUNS_PER_OWNER": "1000", "HITL_MAX_RUNS": "1000", "HITL_MESSAGES_PER_MINUTE": "100000"}
"""The run limits the bench's server gets (see ``hitl_app/settings.py``): high enough for 500 tabs of one account."""


def load_avg() -> list[float]:
    """The 1, 5 and 15 minute load averages (``uptime``), rounded to 2 places."""
    return [round(x, 2) for x in os.getloadavg()]


def client_cpu_s() -> float:
    """User+system CPU seconds used so far by this (the client's) process."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@dataclass
class PrivateRedis:
    """A ``redis-server`` on ``port`` with no persistence; ``url`` is ``redis://127.0.0.1:<port>``."""

    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>``."""
        return f"redis://127.0.0.1:{self.port}"

    def stats(self) -> dict[str, Any]:
        """Memory, connections and pub/sub of this Redis, as seen by one extra admin connection.

        Returns ``{"used_memory_mb", "rss_mb", "clients", "pubsub_channels", "pubsub_clients",
        "keys"}``; ``clients`` excludes the admin connection, ``pubsub_clients`` counts
        connections in pub/sub mode (``CLIENT LIST`` with ``sub`` > 0).
        """
        with redis.Redis(port=self.port, decode_responses=True) as r:
            info = r.info()
            clients = r.client_list()
            return {
                "used_memory_mb": info["used_memory"] / 2**20,
                "rss_mb": info["used_memory_rss"] / 2**20,
                "clients": len(clients) - 1,
                "pubsub_clients": sum(1 for c in clients if int(c.get("sub", 0)) + int(c.get("psub", 0)) > 0),
                "pubsub_channels": len(r.pubsub_channels()),
                "pubsub_patterns": r.pubsub_numpat(),
                "keys": r.dbsize(),
                "clients_by_kind": _kinds(clients),
            }


def _kinds(clients: list[dict[str, Any]]) -> dict[str, int]:
    """Connections by client name and mode (``name|sub`` = subscribed to channels, ``|psub`` = patterns,
    ``|cmd:<last command>`` otherwise), to tell the app's run bus from Reflex's state manager."""
    out: dict[str, int] = {}
    for c in clients:
        if c.get("cmd") == "client|list":
            continue
        mode = "sub" if int(c.get("sub", 0)) else "psub" if int(c.get("psub", 0)) else f"cmd:{c.get('cmd')}"
        key = f"{c.get('name') or '-'}|{mode}"
        out[key] = out.get(key, 0) + 1
    return out


@contextlib.contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    """Start ``redis-server`` on a free port, yield it, stop it."""
    from tests.helpers.app_server import free_port

    port = free_port()
    workdir = tempfile.mkdtemp(prefix="hitl-scale-redis-")
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with contextlib.suppress(redis.exceptions.ConnectionError), redis.Redis(port=port) as r:
                if r.ping():
                    break
            time.sleep(0.05)
        yield PrivateRedis(port, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def fresh_postgres() -> Iterator[str]:
    """A fresh PostgreSQL database (``tests.helpers.postgres.fresh_database``); yields its URL."""
    from tests.helpers.postgres import fresh_database

    with fresh_database() as url:
        yield url


def start_app(
    data_dir: Path, *, workers: int, wps: float, database_url: str = "", redis_url: str = "",
    extra_env: dict[str, str] | None = None, source_root: Path | None = None, frontend: bool = True,
):
    """The app in prod mode (``AppServer``) with ``workers`` gunicorn workers, the demo model at ``wps``
    words/s and the model trace hook (``extra_env``: more environment, e.g. ``HITL_POLICY``;
    ``source_root``: the source tree to run, default this one; ``frontend=False``: the back end only, no
    pages); returns the started ``AppServer``.

    Raises RuntimeError (with the log's tail) when it does not come up.
    """
    from tests.helpers.app_server import AppServer

    env = {
        "HITL_DEMO_WPS": str(wps),
        "HITL_BENCH_TRACE_DIR": str(data_dir / "trace"),
        "GUNICORN_CMD_ARGS": f"--workers {workers} --graceful-timeout 5",
        # one bench account drives every tab: lift the per-owner and per-worker run limits (defaults
        # 3 live runs and 30 messages a minute per owner, 32 runs per worker) so they do not cap the load
        **RUN_LIMITS,
        "PYTHONPATH": os.pathsep.join([str(INJECT), str(source_root or ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
    }
    env.update(extra_env or {})
    if database_url:
        env["DATABASE_URL"] = database_url
    if redis_url:
        env["REFLEX_REDIS_URL"] = redis_url
    return AppServer(data_dir, env=env, source_root=source_root, frontend=frontend).start()


def _status(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def _pss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def process_memory(root_pid: int) -> dict[str, Any]:
    """RSS and PSS (MB) of every process of the app: ``reflex`` (the CLI), ``gunicorn master``, ``worker <pid>``.

    PSS (proportional set size) splits pages shared after gunicorn's ``--preload`` fork among the
    processes sharing them, so PSS sums to the real total; RSS counts shared pages in each process.
    Returns ``{"processes": [{"role", "pid", "rss_mb", "pss_mb"}], "total_pss_mb", "workers_pss_mb"}``.
    """
    rows = []
    for pid in process_tree(root_pid):
        try:
            st = _status(pid)
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            pss = _pss_kb(pid) / 1024
        except OSError:
            continue
        if pid == root_pid:
            role = "reflex cli"
        elif "gunicorn" in cmd and int(st.get("PPid", 0)) == root_pid:
            role = "gunicorn master"
        elif "gunicorn" in cmd:
            role = "worker"
        else:
            role = cmd.split(" ")[0].rsplit("/", 1)[-1]
        rss = int(st.get("VmRSS", "0 kB").split()[0]) / 1024
        rows.append({"role": role, "pid": pid, "rss_mb": round(rss, 1), "pss_mb": round(pss, 1)})
    return {
        "processes": rows,
        "total_pss_mb": round(sum(r["pss_mb"] for r in rows), 1),
        "workers_pss_mb": round(sum(r["pss_mb"] for r in rows if r["role"] == "worker"), 1),
    }


def log_count(path: Path, needle: str) -> int:
    """How many lines of the server log at ``path`` contain ``needle`` (case-insensitive)."""
    try:
        text = path.read_text(errors="replace").lower()
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if needle.lower() in line)
