"""Section 6's data: a thread of ``n`` messages ending with a pending review, written before the server starts.

Opens the app's own runtime (``hitl_app.runtime.open_runtime``) on the server's data folder, writes
``n - 2`` alternating user/assistant messages into the thread's checkpoint with
``graph.aupdate_state(..., as_node="model")``, then runs one real turn ("email ... about ...")
through ``ThreadService.start_turn`` so the last two messages are the request and the model's
tool call, and the HITL middleware leaves a real pending review. The thread has no owner, so any
browser may open it.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage


async def _seed(data_dir: Path, n_messages: int) -> str:
    from hitl_app.runtime import open_runtime
    from hitl_app.settings import Settings

    warnings.filterwarnings("ignore")
    settings = Settings(HITL_DATA_DIR=data_dir, HITL_DEMO_WPS=0)
    tid = str(uuid.uuid4())
    async with open_runtime(settings) as rt:
        service = rt.service
        history = []
        for i in range(max(0, n_messages - 2)):
            if i % 2 == 0:
                history.append(
                    HumanMessage(content=f"Question {i // 2}: what does the report say about item {i}?", id=f"seed-h-{i}")
                )
            else:
                history.append(
                    AIMessage(
                        content=f"Item {i} is **fine**. The quick brown fox jumps over a lazy dog, message {i}.", id=f"seed-a-{i}"
                    )
                )
        await service.graph.aupdate_state(service.config(tid), {"messages": history}, as_node="model")
        await service.start_turn(tid, "email alice@example.com about the report: it is ready", owner=None)
        await service.wait(tid, timeout=120)
        view = await service.load(tid)
        if view.pending is None:
            raise RuntimeError(f"seeding left no pending review (status {view.status})")
    return tid


def seed_long_thread(data_dir: Path, n_messages: int) -> str:
    """Seed the thread in ``data_dir``; returns its id. Raises RuntimeError if no review is pending."""
    return asyncio.run(_seed(data_dir, n_messages))
