"""Section 7: the deployed mode (``HITL_AGENT_URL``): the app in front of a real ``langgraph dev`` serving
``examples/deployed_agent`` (the same demo model, at the bench's pace), beside a direct client of the
same deployment.

* **The app, in Chromium** (``bench/browser.py``, the same page measurements as section 3): per-token
  lag (word k in the page - the model's emission of token k, read from the trace the model writes in
  the *deployment's* process: ``bench/_inject/sitecustomize.py`` on its ``PYTHONPATH``), send -> whole
  reply, interrupt (the model's tool call) -> card, submit -> first resumed token.
* **A direct client of the deployment** (``langgraph-sdk``'s ``runs.stream`` in this process, stream mode
  ``messages-tuple``): the arrival of token k - its emission (the stream's own lag), the interrupt's
  arrival - the arrival of the tool call's chunk, and a resume's first token - the resume request. This is the floor any client
  of the Agent Server API sits on, agent-chat-ui included (it reads the same SSE stream with the JS SDK's
  ``useStream``).
* **agent-chat-ui itself** on the same deployment in the same run (``bench/agent_chat_ui.py``: built
  outside the repository, measured from outside its code in Chromium): per-token lag, interrupt -> its
  interrupt view, Approve -> first resumed token. Not in ``--smoke`` (its first build takes minutes);
  when it cannot be built here the report says which step failed and why.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import read_traces, summary

INJECT = Path(__file__).resolve().parent / "_inject"


async def _direct_reply(url: str, trace_dir: Path, n: int) -> dict[str, Any]:
    """One ``stream N words`` through the SDK: each token's arrival - its emission (ms)."""
    from langgraph_sdk import get_client

    client, tid = get_client(url=url), str(uuid.uuid4())
    arrivals: list[float] = []
    ask = {"messages": [{"role": "user", "content": f"stream {n} words"}]}
    async for part in client.runs.stream(tid, "agent", input=ask, stream_mode="messages-tuple", if_not_exists="create"):
        if _is_token(part):
            arrivals.append(time.time())
    traces = await _traces(trace_dir, tid, 1)
    stamps = traces[0]["t"] if traces else []
    return {"lags_ms": [(a - e) * 1000 for a, e in zip(arrivals, stamps, strict=False)], "tokens": len(arrivals)}


async def _direct_review(url: str) -> dict[str, Any]:
    """An email request through the SDK: the interrupt's arrival - the arrival of the model's last chunk (its
    tool call; the model's own trace of that call is not written before the run pauses in the dev server);
    the resume's first token - the resume request."""
    from langgraph_sdk import get_client

    client, tid = get_client(url=url), str(uuid.uuid4())
    interrupt_at, interrupt_id, last_chunk_at = None, None, None
    ask = {"messages": [{"role": "user", "content": "email alice@example.com about the report: it is ready"}]}
    modes: Any = ["messages-tuple", "updates"]
    async for part in client.runs.stream(tid, "agent", input=ask, stream_mode=modes, if_not_exists="create"):
        if part.event == "messages" and part.data and part.data[0].get("type") == "AIMessageChunk":
            last_chunk_at = time.time()
        if part.event == "updates" and isinstance(part.data, dict) and "__interrupt__" in part.data:
            interrupt_at, interrupt_id = time.time(), part.data["__interrupt__"][0]["id"]
    sent, first = time.time(), None
    resume = {interrupt_id: {"decisions": [{"type": "approve"}]}}
    async for part in client.runs.stream(tid, "agent", command={"resume": resume}, stream_mode="messages-tuple"):
        if first is None and _is_token(part):
            first = time.time()
    return {
        "interrupt_to_client_ms": (interrupt_at - last_chunk_at) * 1000 if interrupt_at and last_chunk_at else None,
        "resume_to_first_token_ms": (first - sent) * 1000 if first else None,
    }


def _is_token(part: Any) -> bool:
    """A ``messages-tuple`` part carrying a model token with text."""
    data = part.data
    return part.event == "messages" and bool(data) and data[0].get("type") == "AIMessageChunk" and bool(data[0].get("content"))


async def _traces(trace_dir: Path, tid: str, count: int) -> list[dict[str, Any]]:
    """The model's traces of ``tid`` once ``count`` are written (the deployment writes them as its model call ends)."""
    for _ in range(100):
        found = read_traces(trace_dir, tid)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    return read_traces(trace_dir, tid)


def _agent_chat_ui(cfg: dict[str, Any], api_url: str, trace: Path) -> dict[str, Any]:
    """agent-chat-ui on the deployment (``bench/agent_chat_ui.py``): ``{"lag_ms", "send_to_complete_ms",
    "interrupt_to_ui_ms", "submit_to_first_resumed_token_ms"}`` summaries and ``page_errors``; ``{"skipped": why}``
    in ``--smoke`` or when it cannot be built (the failed step and its error)."""
    from bench import agent_chat_ui as acu
    from tests.helpers.app_server import free_port

    if cfg.get("smoke"):
        return {"skipped": "not in --smoke (a first build takes minutes; make bench runs it)"}
    folder = acu.prepare()
    if isinstance(folder, acu.Unavailable):
        return {"skipped": f"not built: {folder.step} failed: {folder.error}"}
    with acu.Served(folder, free_port()) as served:
        bb = acu.AcuBench(served.url, api_url, trace)
        try:
            runs = [bb.stream_reply(cfg["n_main"]) for _ in range(cfg["repeats"])]
            reviews = [bb.review_flow() for _ in range(cfg["review_repeats"])]
        finally:
            bb.close()
    return {
        "lag_ms": summary([x for r in runs for x in r["lags_ms"]]),
        "send_to_complete_ms": summary([r["send_to_complete_ms"] for r in runs]),
        "tokens": [r["tokens"] for r in runs],
        "interrupt_to_ui_ms": summary([r["interrupt_to_ui_ms"] for r in reviews if r["interrupt_to_ui_ms"] is not None]),
        "submit_to_first_resumed_token_ms": summary([r["submit_to_first_resumed_token_ms"] for r in reviews]),
        "page_errors": bb.errors, "commit": acu.COMMIT,
    }


def run_deployed(cfg: dict[str, Any], tmp: Path, browser_summary: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """Section 7 (see the module): ``{"app": section-3-like summary, "direct": {...}}``."""
    from bench import browser
    from tests.helpers.app_server import AppServer
    from tests.helpers.langgraph_server import LangGraphDev

    trace = tmp / "deployed-trace"
    dev = LangGraphDev(tmp / "langgraph", wps=cfg["wps"], env={"HITL_BENCH_TRACE_DIR": str(trace)}, path=(INJECT,),
                       allow_blocking=True).start()
    try:
        server = AppServer(tmp / "deployed-app", env={"HITL_AGENT_URL": dev.url, "HITL_MAX_RUNS": "10000",
                                                      "HITL_MESSAGES_PER_MINUTE": "10000"}).start()
        try:
            bb = browser.BrowserBench(server.url, trace)
            try:
                runs = [bb.stream_reply(cfg["n_main"]) for _ in range(cfg["repeats"])]
                reviews = [bb.review_flow() for _ in range(cfg["review_repeats"])]
                app = browser_summary(runs, reviews, bb.errors)
            finally:
                bb.close()
        finally:
            server.stop()
        acu = _agent_chat_ui(cfg, dev.url, trace)
        replies = [asyncio.run(_direct_reply(dev.url, trace, cfg["n_main"])) for _ in range(cfg["repeats"])]
        direct_reviews = [asyncio.run(_direct_review(dev.url)) for _ in range(cfg["review_repeats"])]
    finally:
        dev.close()
    return {
        "app": app,
        "agent_chat_ui": acu,
        "direct": {
            "lag_ms": summary([x for r in replies for x in r["lags_ms"]]),
            "tokens": [r["tokens"] for r in replies],
            "interrupt_to_client_ms": summary(
                [r["interrupt_to_client_ms"] for r in direct_reviews if r["interrupt_to_client_ms"] is not None]
            ),
            "resume_to_first_token_ms": summary(
                [r["resume_to_first_token_ms"] for r in direct_reviews if r["resume_to_first_token_ms"] is not None]
            ),
        },
    }
