"""Section 1, the floor: the agent alone, in-process, with no app around it.

Builds the demo agent with ``hitl_app.agent.build.build_demo_agent`` on an ``AsyncSqliteSaver``
in a temporary folder and drives ``graph.astream_events(..., version="v3")`` exactly as
``RunDriver._drive`` does, with the message ``stream N words``. Measures, per run, the time
from the call to ``astream_events`` to the last text token (seconds), plus the time to the first.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

from bench.common import summary


async def _floor(n_words: int, wps: float, repeats: int) -> dict[str, Any]:
    from langchain_core._api import LangChainBetaWarning
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from hitl_app.agent.build import build_demo_agent
    from hitl_app.agent.demo import DemoChatModel
    from hitl_app.agent.workspace import DemoWorkspace
    from hitl_app.store.db import create_schema, make_engines

    warnings.filterwarnings("ignore", category=LangChainBetaWarning)
    totals, firsts, counts = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        data = Path(tmp)
        engines = make_engines(f"sqlite:///{data / 'hitl.sqlite'}")
        create_schema(engines)
        workspace = DemoWorkspace(files_dir=data / "files", engine=engines.sync, demo_db_path=data / "demo.sqlite")
        async with AsyncSqliteSaver.from_conn_string(str(data / "ckpt.sqlite")) as saver:
            bundle = build_demo_agent(model=DemoChatModel(words_per_second=wps), workspace=workspace, checkpointer=saver)
            for _ in range(repeats):
                config = {"configurable": {"thread_id": str(uuid.uuid4())}}
                t0 = time.perf_counter()
                first = last = None
                tokens = 0
                run = await bundle.graph.astream_events(
                    {"messages": [{"role": "user", "content": f"stream {n_words} words"}]}, config, version="v3"
                )
                async with run:
                    async for message in run.messages:
                        async for token in message.text:
                            if token:
                                tokens += 1
                                last = time.perf_counter()
                                if first is None:
                                    first = last
                if last is None or first is None:
                    raise RuntimeError("the floor run streamed no tokens")
                totals.append(last - t0)
                firsts.append(first - t0)
                counts.append(tokens)
        await engines.async_.dispose()
        engines.sync.dispose()
    return {
        "n_words": n_words,
        "wps": wps,
        "total_s": summary(totals),
        "first_token_s": summary(firsts),
        "tokens": counts,
        "runs": totals,
    }


def run_floor(n_words: int, wps: float, repeats: int) -> dict[str, Any]:
    """Floor for ``n_words`` at ``wps`` words/s over ``repeats`` runs: {"total_s": {median, p95, n}, ...}."""
    return asyncio.run(_floor(n_words, wps, repeats))
