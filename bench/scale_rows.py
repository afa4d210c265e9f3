"""The scale section's rows, each against a running app (``AppServer``) through real websockets.

- ``sessions``: K tabs, each on its own thread, send ``stream N words`` at the same moment (demo
  model at 20 words/s). Lag = each word's arrival in the client - the model's emission time of that
  token (server trace, ``bench/_inject``). Also: errors, backend CPU s per 1,000 delivered tokens,
  PSS/RSS of every process (peak, sampled every 2 s), Redis memory and connections, which worker
  each tab landed on, and this client's own CPU share of the wall time (near 1.0 = the client, one
  Python process on one core, is the limit, not the app).
- ``idle``: N tabs hydrate ``/thread/<new uuid>`` (the page runs ``load_thread`` and starts the tab's
  watcher) and then do nothing. Memory and Redis (connections, pub/sub connections, channels) before,
  with the tabs, and after they closed; backend CPU per idle tab per minute over a quiet window,
  minus the same window's CPU with no tabs.
- ``submits``: N tabs each raise a review (``email ...``), then all press Approve all at once, each
  twice (a double click). Latency = the press -> the card gone (the decision taken) and -> the tool
  row shown executed. Exactly once = one outbox mail and one audit row per review in the database;
  any "database is locked" seen by a tab or in the server log is counted.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import pct, read_traces, tree_cpu_seconds
from bench.scale_infra import PrivateRedis, client_cpu_s, load_avg, log_count, process_memory
from bench.ws import CHAT, REVIEW, ReflexClient

CONNECT_BATCH = 25


def _q(values: list[float]) -> dict[str, Any]:
    return {"p50": pct(values, 0.5), "p95": pct(values, 0.95), "max": max(values, default=None), "n": len(values)}


async def connect_tabs(url: str, token: str, threads: list[str], errors: list[str]) -> list[ReflexClient]:
    """A signed-in tab (session ``token``) hydrated on each of ``threads``, opened ``CONNECT_BATCH`` at a
    time; returns the tabs that connected, in order. A tab that failed is closed and its error appended to
    ``errors`` (``"connect: <type>: <message>"``)."""
    connected: list[ReflexClient] = []
    for start in range(0, len(threads), CONNECT_BATCH):
        chunk = threads[start:start + CONNECT_BATCH]
        batch = [ReflexClient(url, session_token=token) for _ in chunk]
        results = await asyncio.gather(*(c.connect(t) for c, t in zip(batch, chunk, strict=True)), return_exceptions=True)
        for c, r in zip(batch, results, strict=True):
            if isinstance(r, BaseException):
                errors.append(f"connect: {type(r).__name__}: {r}")
                await c.close()
            else:
                connected.append(c)
    return connected


async def _connect_all(url: str, token: str, n: int, errors: list[str]) -> list[ReflexClient]:
    """``n`` signed-in tabs, each hydrated on its own new thread (``connect_tabs``)."""
    return await connect_tabs(url, token, [str(uuid.uuid4()) for _ in range(n)], errors)


def _workers_of(clients: list[ReflexClient]) -> dict[str, int]:
    """Tabs per worker pid (``ChatState.worker_pid``, set by the worker that ran the tab's on_load)."""
    out: dict[str, int] = {}
    for c in clients:
        pid = str(c.get(CHAT, "worker_pid") or "?").split(":")[0]
        out[pid] = out.get(pid, 0) + 1
    return out


class _Peak:
    """Samples process memory (and Redis) every ``every`` seconds; keeps the sample of highest total PSS."""

    def __init__(self, pid: int, redis: PrivateRedis | None, every: float = 2.0):
        self.pid, self.redis, self.every = pid, redis, every
        self.mem = process_memory(pid)
        self.redis_peak = redis.stats() if redis else None
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            mem = await asyncio.to_thread(process_memory, self.pid)
            if mem["total_pss_mb"] > self.mem["total_pss_mb"]:
                self.mem = mem
            if self.redis is not None:
                stats = await asyncio.to_thread(self.redis.stats)
                if stats["used_memory_mb"] >= self.redis_peak["used_memory_mb"]:  # type: ignore[index]
                    self.redis_peak = stats
            await asyncio.sleep(self.every)

    def __enter__(self) -> _Peak:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._task is not None:
            self._task.cancel()


async def _finish(c: ReflexClient, n_words: int, timeout: float, errors: list[str]) -> None:
    try:
        await c.wait_for(lambda: not c.streaming() and len(c.messages()) >= 2 and len(c.word_times) >= n_words, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - counted as an error
        shown = _user_visible_error(c)
        errors.append(f"session {c.thread_id[:8]}: {type(exc).__name__} after {len(c.word_times)} words {shown}".strip())


def _lags(clients: list[ReflexClient], trace_dir: Path, errors: list[str]) -> list[float]:
    lags: list[float] = []
    for c in clients:
        errors += c.errors
        traces = read_traces(trace_dir, c.thread_id)
        if not traces:
            errors.append(f"session {c.thread_id[:8]}: no model trace")
            continue
        lags += [(w - e) * 1000 for w, e in zip(c.word_times, traces[-1]["t"], strict=False)]
        if c.messages() and c.messages()[-1]["text"].strip() != c.live_text.strip():
            errors.append(f"session {c.thread_id[:8]}: streamed text differs from the committed message")
    return lags


async def sessions_row(server: Any, token: str, k: int, n_words: int, wps: float, redis: PrivateRedis | None) -> dict[str, Any]:
    """K simultaneous streaming tabs; see the module docstring. Returns the row's figures."""
    errors: list[str] = []
    load_before = load_avg()
    clients = await _connect_all(server.url, token, k, errors)
    pid = server.proc.pid
    cpu0, ccpu0, t0 = tree_cpu_seconds(pid), client_cpu_s(), time.monotonic()
    with _Peak(pid, redis) as peak:
        await asyncio.gather(*(c.send(f"stream {n_words} words") for c in clients))
        timeout = n_words / wps * 4 + 60
        await asyncio.gather(*(_finish(c, n_words, timeout, errors) for c in clients))
    wall = time.monotonic() - t0
    cpu, ccpu = tree_cpu_seconds(pid) - cpu0, client_cpu_s() - ccpu0
    tokens = sum(min(len(c.word_times), n_words) for c in clients)
    lags = _lags(clients, server.data_dir / "trace", errors)
    workers = _workers_of(clients)
    await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    return {
        "sessions": k, "connected": len(clients), "n_words": n_words, "wps": wps,
        "lag_ms": _q(lags), "errors": len(errors), "error_samples": errors[:10],
        "tokens_delivered": tokens, "wall_s": round(wall, 2),
        "backend_cpu_s": round(cpu, 2), "cpu_s_per_1k_tokens": round(cpu * 1000 / tokens, 3) if tokens else None,
        "client_cpu_s": round(ccpu, 2), "client_cpu_share": round(ccpu / wall, 2) if wall else None,
        "memory_peak": peak.mem, "redis_peak": peak.redis_peak, "tabs_per_worker": workers,
        "load_before": load_before, "load_after": load_avg(),
    }


async def idle_row(server: Any, token: str, n: int, window_s: float, redis: PrivateRedis | None) -> dict[str, Any]:
    """N connected, hydrated, idle tabs; see the module docstring. Returns the row's figures."""
    pid = server.proc.pid
    load_before = load_avg()
    base_window = min(window_s, 30.0)
    cpu0 = tree_cpu_seconds(pid)
    await asyncio.sleep(base_window)
    base_cpu_per_min = (tree_cpu_seconds(pid) - cpu0) * 60 / base_window
    mem0, redis0 = process_memory(pid), redis.stats() if redis else None
    errors: list[str] = []
    t0 = time.monotonic()
    clients = await _connect_all(server.url, token, n, errors)
    connect_s = time.monotonic() - t0
    await asyncio.sleep(5)  # let watchers settle
    mem1, redis1 = process_memory(pid), redis.stats() if redis else None
    cpu0 = tree_cpu_seconds(pid)
    await asyncio.sleep(window_s)
    idle_cpu_per_min = (tree_cpu_seconds(pid) - cpu0) * 60 / window_s
    alive = sum(1 for c in clients if c.ws is not None and not c.ws.closed)
    workers = _workers_of(clients)
    for c in clients:
        errors += c.errors
    await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    await asyncio.sleep(5)
    mem2, redis2 = process_memory(pid), redis.stats() if redis else None
    tabs = max(1, len(clients))
    return {
        "tabs": n, "connected": len(clients), "alive_after_window": alive, "connect_s": round(connect_s, 1),
        "errors": len(errors), "error_samples": errors[:10], "window_s": window_s,
        "pss_mb_per_tab": round((mem1["total_pss_mb"] - mem0["total_pss_mb"]) / tabs, 3),
        "redis_mb_per_tab": round((redis1["used_memory_mb"] - redis0["used_memory_mb"]) / tabs, 4) if redis else None,
        "cpu_s_per_tab_per_min": round(max(0.0, idle_cpu_per_min - base_cpu_per_min) / tabs, 5),
        "cpu_s_per_min_idle_tabs": round(idle_cpu_per_min, 2), "cpu_s_per_min_no_tabs": round(base_cpu_per_min, 2),
        "memory": {"before": mem0, "with_tabs": mem1, "after_close": mem2},
        "redis": {"before": redis0, "with_tabs": redis1, "after_close": redis2},
        "tabs_per_worker": workers, "load_before": load_before, "load_after": load_avg(),
    }


def _user_visible_error(c: ReflexClient) -> str:
    texts = [str(c.get(REVIEW, "review_error") or ""), str(c.get(CHAT, "run_error") or ""),
             str(c.get(CHAT, "composer_error") or ""), str(c.get(CHAT, "notice") or "")]
    return " | ".join(t for t in texts if t)


async def _timed(c: ReflexClient, cond: Any, timeout: float) -> float | None:
    try:
        await c.wait_for(cond, timeout=timeout)
    except (TimeoutError, RuntimeError):
        return None
    return time.time()


def _executed(c: ReflexClient) -> bool:
    return any(m.get("role") == "tool" and m.get("outcome") == "executed" for m in c.messages())


async def _submit_one(c: ReflexClient) -> dict[str, Any]:
    try:
        t0 = await c.emit(f"{REVIEW}.approve_all", {})
        await c.emit(f"{REVIEW}.approve_all", {})  # the double click
    except Exception as exc:  # noqa: BLE001 - a socket the server closed is an error of this row, not a crash
        c.errors.append(f"submit on {c.thread_id[:8]}: {type(exc).__name__}: {exc}")
        return {"taken_ms": None, "executed_ms": None}
    t_taken = await _timed(c, lambda: not c.get(REVIEW, "cards"), 60)
    t_done = await _timed(c, lambda: _executed(c) and not c.streaming(), 120)
    return {"taken_ms": (t_taken - t0) * 1000 if t_taken else None, "executed_ms": (t_done - t0) * 1000 if t_done else None}


async def submits_row(server: Any, token: str, n: int, count_outbox: Any) -> dict[str, Any]:
    """N reviews approved at the same moment (each twice). ``count_outbox(subject_prefix, thread_ids)``
    reads the database: ``({subject: mails}, audit rows of those threads)``. Returns the row's figures."""
    errors: list[str] = []
    load_before = load_avg()
    clients = await _connect_all(server.url, token, n, errors)
    tag = uuid.uuid4().hex[:6]
    await asyncio.gather(*(c.send(f"email r{i}@example.com about scale-{tag}-{i}: ok") for i, c in enumerate(clients)))
    raised = await asyncio.gather(*(_timed(c, lambda c=c: bool(c.get(REVIEW, "cards")), 120) for c in clients))
    ready = [c for c, t in zip(clients, raised, strict=True) if t is not None]
    errors += [
        f"no review raised on {c.thread_id[:8]} {_user_visible_error(c)}"
        for c, t in zip(clients, raised, strict=True) if t is None
    ]
    await asyncio.sleep(1)
    pid = server.proc.pid
    cpu0, t0 = tree_cpu_seconds(pid), time.monotonic()
    results = await asyncio.gather(*(_submit_one(c) for c in ready))
    wall, cpu = time.monotonic() - t0, tree_cpu_seconds(pid) - cpu0
    shown = [e for c in ready if (e := _user_visible_error(c))]
    mails, audit = await asyncio.to_thread(count_outbox, f"scale-{tag}-", [c.thread_id for c in ready])
    for c in clients:
        errors += c.errors
    workers = _workers_of(clients)
    await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    taken = [r["taken_ms"] for r in results if r["taken_ms"] is not None]
    done = [r["executed_ms"] for r in results if r["executed_ms"] is not None]
    return {
        "submits": n, "reviews_raised": len(ready), "submit_to_card_gone_ms": _q(taken), "submit_to_executed_ms": _q(done),
        "not_finished": len(ready) - len(done), "mails": sum(mails.values()),
        "reviews_with_one_mail": sum(1 for v in mails.values() if v == 1),
        "reviews_with_more_mails": sum(1 for v in mails.values() if v > 1), "audit_rows": audit,
        "exactly_once": len(ready) == n and len(mails) == n and all(v == 1 for v in mails.values()) and audit == n,
        "user_visible_messages": shown[:10], "user_visible_locked": sum(1 for s in shown if "locked" in s.lower()),
        "log_database_locked": log_count(server.log_path, "database is locked"),
        "errors": len(errors), "error_samples": errors[:10], "wall_s": round(wall, 2), "backend_cpu_s": round(cpu, 2),
        "tabs_per_worker": workers, "load_before": load_before, "load_after": load_avg(),
    }
