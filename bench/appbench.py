"""Sections 2 and 5: the app through its websocket, no browser (``bench.ws.ReflexClient``).

Section 2 - one tab sends ``stream N words``: send -> last word rebuilt from the deltas (s),
websocket wire bytes (TCP, compressed if
permessage-deflate was negotiated; see ``bench.ws``) received from Send until the run has ended and the committed message arrived,
divided by the reply's UTF-8 text bytes, and backend CPU seconds (the server process tree, from
/proc) per 1,000 tokens over the same window.

Section 5 - K tabs, each on its own thread, send at the same moment; each word's arrival time
minus the model's emission time of that token (from the server's model trace) is its lag.
Errors = socket/protocol errors, timeouts, or replies with missing or wrong words.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import read_traces, summary, tree_cpu_seconds, tree_rss_mb
from bench.ws import ReflexClient


async def _one_reply(base_url: str, n_words: int, server_pid: int) -> dict[str, Any]:
    client = ReflexClient(base_url)
    try:
        await client.connect(str(uuid.uuid4()))
        await asyncio.sleep(0.3)
        client.reset_counters()
        cpu0 = tree_cpu_seconds(server_pid)
        t0 = await client.send(f"stream {n_words} words")
        await client.wait_for(lambda: len(client.word_times) >= n_words, timeout=n_words * 0.5 + 60)
        t_last = client.word_times[n_words - 1]
        await client.wait_for(lambda: not client.streaming() and len(client.messages()) >= 2, timeout=60)
        cpu = tree_cpu_seconds(server_pid) - cpu0
        final = client.messages()[-1]["text"]
        text_bytes = len(final.encode())
        return {
            "send_to_last_token_s": t_last - t0,
            "send_to_first_token_s": client.word_times[0] - t0,
            "bytes": client.bytes_received,
            "payload_bytes": client.payload_bytes_received,
            "compressed": client.compressed,
            "frames": client.frames_received,
            "text_bytes": text_bytes,
            "bytes_ratio": client.bytes_received / text_bytes,
            "cpu_s_per_1k_tokens": cpu * 1000 / n_words,
            "text_matches": final.strip() == client.live_text.strip(),
            "errors": client.errors,
        }
    finally:
        await client.close()


def run_ws_replies(base_url: str, n_words: int, repeats: int, server_pid: int) -> dict[str, Any]:
    """Section 2 for one reply length; medians/p95 over ``repeats``."""
    runs = [asyncio.run(_one_reply(base_url, n_words, server_pid)) for _ in range(repeats)]
    return {
        "n_words": n_words,
        "send_to_last_token_s": summary([r["send_to_last_token_s"] for r in runs]),
        "send_to_first_token_s": summary([r["send_to_first_token_s"] for r in runs]),
        "bytes_ratio": summary([r["bytes_ratio"] for r in runs]),
        "bytes": summary([r["bytes"] for r in runs]),
        "payload_bytes_ratio": summary([r["payload_bytes"] / r["text_bytes"] for r in runs]),
        "compressed": all(r["compressed"] for r in runs),
        "frames": summary([r["frames"] for r in runs]),
        "cpu_s_per_1k_tokens": summary([r["cpu_s_per_1k_tokens"] for r in runs]),
        "text_matches": all(r["text_matches"] for r in runs),
        "errors": [e for r in runs for e in r["errors"]],
        "runs": runs,
    }


async def _concurrent(base_url: str, sessions: int, n_words: int, server_pid: int, trace_dir: Path) -> dict[str, Any]:
    clients = [ReflexClient(base_url) for _ in range(sessions)]
    errors: list[str] = []
    connected = []
    results = await asyncio.gather(*(c.connect(str(uuid.uuid4())) for c in clients), return_exceptions=True)
    for c, r in zip(clients, results, strict=True):
        if isinstance(r, BaseException):
            errors.append(f"connect: {type(r).__name__}: {r}")
        else:
            connected.append(c)
    rss0 = tree_rss_mb(server_pid)
    await asyncio.gather(*(c.send(f"stream {n_words} words") for c in connected))
    rss_peak = rss0

    async def finish(c: ReflexClient) -> None:
        try:
            await c.wait_for(
                lambda: not c.streaming() and len(c.messages()) >= 2 and len(c.word_times) >= n_words,
                timeout=n_words / 20 * 4 + 60
            )
        except Exception as exc:  # noqa: BLE001 - counted as an error
            errors.append(f"session {c.thread_id[:8]}: {type(exc).__name__} after {len(c.word_times)} words")

    async def sample_rss() -> None:
        nonlocal rss_peak
        while True:
            rss_peak = max(rss_peak, tree_rss_mb(server_pid))
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample_rss())
    await asyncio.gather(*(finish(c) for c in connected))
    sampler.cancel()
    lags: list[float] = []
    for c in connected:
        errors += c.errors
        traces = read_traces(trace_dir, c.thread_id)
        if not traces:
            errors.append(f"session {c.thread_id[:8]}: no model trace")
            continue
        emitted = traces[-1]["t"]
        lags += [(w - e) * 1000 for w, e in zip(c.word_times, emitted, strict=False)]  # a lost word shortens one side
        if c.messages() and c.messages()[-1]["text"].strip() != c.live_text.strip():
            errors.append(f"session {c.thread_id[:8]}: streamed text differs from the committed message")
    await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    return {
        "sessions": sessions,
        "n_words": n_words,
        "lag_ms": {"p50": _q(lags, 0.5), "p95": _q(lags, 0.95), "max": max(lags, default=None), "n": len(lags)},
        "errors": len(errors),
        "error_samples": errors[:10],
        "rss_mb_before": rss0,
        "rss_mb_peak": rss_peak,
    }


def _q(values: list[float], q: float) -> float | None:
    from bench.common import pct

    return pct(values, q)


def run_concurrency(base_url: str, sessions: int, n_words: int, server_pid: int, trace_dir: Path) -> dict[str, Any]:
    """Section 5 for ``sessions`` simultaneous tabs."""
    return asyncio.run(_concurrent(base_url, sessions, n_words, server_pid, trace_dir))


def settle(seconds: float = 0.5) -> None:
    """Pause between measured runs."""
    time.sleep(seconds)
