"""A LangGraph project for the LangGraph server (``langgraph dev``) that hitl_app reviews by its URL.

``graph`` is ``create_agent`` + ``HumanInTheLoopMiddleware`` (batched) over the app's offline demo
model (``hitl_app.agent.demo.DemoChatModel``: deterministic, streamed word by word, no key), so the
deployment runs without a network. Its tools:

- ``send_email(to, subject, body)``: approve / edit / reject;
- ``delete_file(path)``: approve / reject;
- ``ask_user(question)``: respond (the answer is the result);
- ``slow_task(seconds)``: approve / reject (sleeps, to try Stop and a restart mid-run);
- ``read_data(table)``: runs at once, never asks.

Phrases (the demo model's): ``email bob@example.com about the report: ready``, ``delete notes.txt``,
``ask me which colour``, ``wait 5 seconds``, ``read outbox``, ``stream 200 words``, joined by ``and``.

The effects are kept in the graph's own state (the tool results in the thread) and, for tests, one JSON
line per call in ``$DEPLOYED_AGENT_ACTIONS`` when it is set. ``DEPLOYED_AGENT_WPS`` sets the model's pace
(words per second, default 30; 0 = no pacing). ``DEPLOYED_AGENT_HOLD`` (tests) names a file: while it exists,
a reply stops after its first 100 words and goes on once the file is removed, so a test can restart the
app in the middle of a run without relying on a slow pace.

Run (README "A deployed agent"): ``cd examples/deployed_agent && langgraph dev --no-browser --port 2024``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool

from hitl_app.agent.demo import DemoChatModel


def _record(kind: str, **fields: Any) -> None:
    path = os.environ.get("DEPLOYED_AGENT_ACTIONS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"kind": kind, **fields}) + "\n")


async def _effect(kind: str, **fields: Any) -> None:
    """Record one effect off the event loop (the dev server refuses blocking calls in graph code)."""
    await asyncio.to_thread(_record, kind, **fields)


@tool
async def send_email(to: str, subject: str, body: str) -> str:
    """Send an email to `to` with `subject` and `body`."""
    await _effect("send_email", to=to, subject=subject, body=body)
    return f"Sent email to {to} (subject: {subject})."


@tool
async def delete_file(path: str) -> str:
    """Delete the file at `path` in the agent's workspace."""
    await _effect("delete_file", path=path)
    return f"Deleted {path}."


@tool
async def ask_user(question: str) -> str:
    """Ask the person a question; their answer is the result."""
    return "No answer."


@tool
async def slow_task(seconds: float) -> str:
    """A task that takes `seconds` seconds."""
    await asyncio.sleep(min(float(seconds), 120.0))
    await _effect("slow_task", seconds=seconds)
    return f"Waited {seconds} seconds."


@tool
async def read_data(table: str) -> str:
    """Read a table (`outbox`): runs without review."""
    return f"The {table} table is empty in this example."


INTERRUPT_ON: dict[str, Any] = {
    "send_email": {"allowed_decisions": ["approve", "edit", "reject"], "description": "Send an email"},
    "delete_file": {"allowed_decisions": ["approve", "reject"], "description": "Delete a file"},
    "ask_user": {"allowed_decisions": ["respond"], "description": "The agent asks you"},
    "slow_task": {"allowed_decisions": ["approve", "reject"], "description": "A slow task"},
    "read_data": False,
}
"""The deployment's own policy: the upper bound of what a card in hitl_app offers."""


class HeldDemoModel(DemoChatModel):
    """The demo model, held after ``hold_after_words`` words of a reply while the file ``hold_file`` exists
    (``""``: never held, the demo model as it is)."""

    hold_file: str = ""
    hold_after_words: int = 100

    async def _astream(
        self, messages: list[BaseMessage], stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        words = 0
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
            if chunk.message.content:
                words += 1
                if words == self.hold_after_words:
                    # off the event loop: the dev server refuses blocking calls in graph code
                    while self.hold_file and await asyncio.to_thread(os.path.exists, self.hold_file):
                        await asyncio.sleep(0.05)


def make_graph() -> Any:
    """The compiled agent the server serves (the server adds its own checkpointer)."""
    model = HeldDemoModel(words_per_second=float(os.environ.get("DEPLOYED_AGENT_WPS", "30")),
                          hold_file=os.environ.get("DEPLOYED_AGENT_HOLD", ""))
    return create_agent(
        model,
        [send_email, delete_file, ask_user, slow_task, read_data],
        system_prompt="You are a helpful assistant; risky actions are reviewed by a person.",
        middleware=[HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON, interrupt_mode="batched")],
    )


graph = make_graph()
