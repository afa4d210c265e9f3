"""Where the agent runs: the seam between the app and a kind of agent runtime.

``AgentRuntime`` names the few things the run driver, the thread service and the thread views ask of
an agent: stream a run (``astream_events``: a user message, ``Command(resume=...)`` or ``None`` to
continue), read the thread's checkpointed state (``aget_state``: messages, the pending interrupt),
write answers into it (``aupdate_state``: the tool calls a stopped run left open), and, when it has
one, its checkpointer (the last step, read without replaying the history). The names are
LangGraph's own, so the one implementation today is the in-process compiled graph
(``langchain.agents.create_agent`` + HITL middleware, ``hitl_app.agent_loader``), taken as it is.

A second kind plugs in here: an agent deployed on the LangGraph server, reached with
``langgraph-sdk`` (``runs.stream`` for a run, ``threads.get_state`` for the state and its
interrupts, ``Command(resume=...)`` to resume, ``runs.cancel`` to stop; ``checkpointer`` None).

``thread_config`` addresses a thread; ``resume_command`` is the one place a review's decisions
become the resume payload.
"""

# Tested by: tests/integration/threads/test_thread_service.py, tests/integration/desk/test_final_decisions.py

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langgraph.types import Command

from hitl_app.review.types import AnyDecision, resume_value

log = logging.getLogger("hitl_app.threads")

@dataclass(frozen=True)
class JoinRun:
    """The input that joins a run a deployed agent is running already (``run_id``, the server's) instead
    of starting one (``runs/rejoin.py``, C23); only a runtime with ``live_run`` takes it."""

    run_id: str


RunInput = dict[str, Any] | Command[Any] | JoinRun | None
"""What a run starts from: ``{"messages": [...]}`` (a turn), ``Command(resume=...)`` (decisions),
``None`` (continue from the last checkpoint), or ``JoinRun`` (follow a deployed agent's run)."""


class AgentRuntime(Protocol):
    """One kind of agent runtime (see the module); LangGraph's compiled graph is one as it is.

    Attributes:
        nodes: the graph's node names (an answer to open tool calls is written as ``"tools"``
            when there is such a node).
        checkpointer: the saver whose ``aget_tuple`` gives the last step, or None (a remote agent).
    """

    nodes: Mapping[str, Any]
    checkpointer: Any

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """The thread's state as checkpointed (a ``StateSnapshot``: ``values``, ``next``, ``tasks``
        with their interrupts); never runs the agent."""
        ...

    async def aupdate_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        """Write ``values`` into the thread's state as if node ``as_node`` had returned them."""
        ...

    async def astream_events(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002 - LangGraph's name
        """Start a run from ``input`` (``RunInput``) and stream it (``version="v3"``: an async
        context manager with ``messages`` (each with a ``text`` token stream) and ``interrupted()``)."""
        ...


ThreadConfig = dict[str, dict[str, str]]
"""A thread's address for the runtime: ``{"configurable": {"thread_id": ..., "owner"?: ...}}``."""


def thread_config(thread_id: str, owner: str | None = None) -> ThreadConfig:
    """The config of a thread: ``{"configurable": {"thread_id", "owner"?}}``.

    ``owner`` (the thread's owner, ``""`` when unknown) is given to runs so tools can read it from
    ``ToolRuntime.config["configurable"].get("owner", "")``; reads leave it out.
    """
    configurable = {"thread_id": thread_id}
    if owner is not None:
        configurable["owner"] = owner
    return {"configurable": configurable}


def resume_command(interrupt_id: str, decisions: Sequence[AnyDecision]) -> Command[Any]:
    """The input that resumes the run paused at ``interrupt_id`` with ``decisions`` (one per card):
    ``Command(resume={interrupt_id: {"decisions": [...]}})``; the only dicts on a review's way."""
    return Command(resume={interrupt_id: resume_value(list(decisions))})


async def last_step(agent: AgentRuntime, thread_id: str) -> int | None:
    """The step of the thread's last checkpoint (-1 for a new thread; None when unreadable or the
    runtime has no checkpointer here). Reads the checkpoint's metadata only (``aget_tuple``), not
    the state: no message history is replayed."""
    if agent.checkpointer is None:
        return None
    try:
        found = await agent.checkpointer.aget_tuple(thread_config(thread_id))
    except Exception:  # noqa: BLE001 - the run goes on; answered reviews then get a full step budget
        log.exception("step not read thread=%s", thread_id)
        return None
    step = (found.metadata or {}).get("step") if found is not None else None
    return step if isinstance(step, int) else -1
