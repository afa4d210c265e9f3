"""An agent deployed on the LangGraph server (Agent Server API), reached by its URL with ``langgraph-sdk``.

``RemoteAgentRuntime`` is the second implementation of ``AgentRuntime`` (``runs/agent_runtime.py``):

- a run: ``runs.stream`` in the stream modes ``messages-tuple`` + ``updates`` (``RemoteRun``), the
  app's thread id being the server's (the server thread is created on the first send,
  ``if_not_exists="create"``), ``multitask_strategy="reject"`` (never two runs on one thread) and,
  for a resume, ``command={"resume": ...}`` with ``strict_resume`` (an interrupt no longer waiting is
  refused, not ignored);
- a join: ``JoinRun(run_id)`` reads ``runs.join_stream`` of a run going on (after a restart, C23);
- the state: ``threads.get_state`` read into a LangGraph ``StateSnapshot`` (messages as LangChain
  messages, tasks and interrupts as LangGraph's types), so ``threads/views.py`` reads it as a local one;
  a thread the server does not know is an empty snapshot;
- a write: ``threads.update_state`` (the answers to tool calls a stopped run left open, a cut-off reply);
- Stop and the time limit: ``acancel_run`` (``runs.cancel``, waited for);
- ``live_run``: the id of a run the server is running on a thread (``runs.list(status="running")``);
- ``known_threads``: which threads the server still has (``threads.search``; ``threads/lost.py``).

Every error of the deployment is a ``ThreadError`` with a plain sentence
(``remote_stream.describe_deployment_error``); nothing the server answers is trusted beyond its shape
(the thread views parse interrupts with ``parse_hitl_request``, decisions are checked by the app).
"""

# Tested by: tests/integration/remote/test_remote_agent.py

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, cast

import httpx
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.types import Command, Interrupt, PregelTask, StateSnapshot
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from hitl_app.errors import StartupError, ThreadError
from hitl_app.runs.agent_runtime import JoinRun
from hitl_app.runs.remote_stream import STREAM_MODES, RemoteRun, describe_deployment_error, status_of

log = logging.getLogger("hitl_app.runs")

READ_TIMEOUT_S = 30.0
"""Seconds a state read, a write or a cancel may take before the deployment counts as not answering."""

_MESSAGE_TYPES: dict[str, type[Any]] = {
    "human": HumanMessage, "ai": AIMessage, "AIMessageChunk": AIMessage, "tool": ToolMessage,
    "system": SystemMessage, "remove": RemoveMessage,
}


def message_from_wire(data: Any) -> AnyMessage | None:
    """A message of the server's state (``{"type": "ai", "content": ..., ...}``) as a LangChain
    message; None for anything that is not one (dropped: a deployment's answer is not trusted)."""
    if not isinstance(data, dict):
        return None
    cls = _MESSAGE_TYPES.get(str(data.get("type")))
    if cls is None:
        return None
    fields = {k: v for k, v in data.items() if k != "type"}
    try:
        message: AnyMessage = cls.model_validate(fields)
    except ValueError:
        log.warning("a message of the deployment's state was not readable (type %s)", data.get("type"))
        return None
    return message


def snapshot_from_wire(thread_id: str, state: Mapping[str, Any]) -> StateSnapshot:
    """``threads.get_state``'s answer as LangGraph's ``StateSnapshot`` (what ``thread_view_from_snapshot`` reads)."""
    values = state.get("values") if isinstance(state.get("values"), dict) else {}
    assert isinstance(values, dict)
    messages = [m for m in (message_from_wire(d) for d in values.get("messages") or []) if m is not None]
    checkpoint = state.get("checkpoint") if isinstance(state.get("checkpoint"), dict) else {}
    assert isinstance(checkpoint, dict)
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint.get("checkpoint_id")}}
    tasks = tuple(
        PregelTask(
            id=str(t.get("id", "")), name=str(t.get("name", "")), path=tuple(t.get("path") or ()),
            error=t.get("error"), interrupts=tuple(_interrupts(t.get("interrupts"))),
        )
        for t in state.get("tasks") or () if isinstance(t, dict)
    )
    return StateSnapshot(
        values={**values, "messages": messages}, next=tuple(state.get("next") or ()), config=config,  # type: ignore[arg-type]
        metadata=cast(Any, state.get("metadata") or {}), created_at=state.get("created_at"), parent_config=None, tasks=tasks,
        interrupts=tuple(_interrupts(state.get("interrupts"))),
    )


def _interrupts(items: Any) -> list[Interrupt]:
    return [Interrupt(value=i.get("value"), id=str(i.get("id", ""))) for i in items or () if isinstance(i, dict)]


def _empty_snapshot(thread_id: str) -> StateSnapshot:
    return snapshot_from_wire(thread_id, {})


class RemoteAgentRuntime:
    """A deployed agent (see the module). Open it with ``open_remote_agent``.

    Args:
        client: the ``langgraph-sdk`` client of the deployment.
        url: the deployment's address (``HITL_AGENT_URL``), for the messages.
        assistant_id: the assistant or graph id (``HITL_ASSISTANT_ID``).
        nodes: the graph's node names (``assistants.get_graph``): ``tools`` and ``model`` say how
            the answers to open tool calls and a cut-off reply are written.

    Attributes:
        checkpointer: None (the server keeps the checkpoints).
        runs_by_thread: thread id -> the id of the server run this process streams now.
    """

    checkpointer: Any = None

    def __init__(self, client: LangGraphClient, url: str, assistant_id: str, nodes: Mapping[str, Any]) -> None:
        self.client = client
        self.url = url
        self.assistant_id = assistant_id
        self.nodes = dict(nodes)
        self.runs_by_thread: dict[str, str] = {}

    async def _call(self, coro: Any) -> Any:
        """Await a request of the deployment within ``READ_TIMEOUT_S``; its errors as ``ThreadError``."""
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                return await coro
        except TimeoutError as exc:
            raise describe_deployment_error(httpx.ReadTimeout("state read"), self.url) from exc
        except (httpx.HTTPError, OSError) as exc:
            raise describe_deployment_error(exc, self.url) from exc

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> StateSnapshot:
        """The server thread's state as a ``StateSnapshot`` (empty for a thread not created yet).

        Raises ThreadError (``agent_unavailable``, ``refused``) when the deployment fails."""
        thread_id = config["configurable"]["thread_id"]
        try:
            state = await self._call(self.client.threads.get_state(thread_id))
        except ThreadError as exc:
            if status_of(exc.__cause__) == 404:
                return _empty_snapshot(thread_id)
            raise
        return snapshot_from_wire(thread_id, state)

    async def aupdate_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        """Write ``values`` into the server thread's state as node ``as_node``. Raises ThreadError."""
        thread_id = config["configurable"]["thread_id"]
        return await self._call(self.client.threads.update_state(thread_id, values, as_node=as_node))

    async def astream_events(self, input: Any, config: Any = None, **kwargs: Any) -> RemoteRun:  # noqa: A002 - LangGraph's name
        """A run on the server from ``input`` (a turn's ``{"messages": ...}``, ``Command(resume=...)``,
        None to continue, or ``JoinRun``) as ``RemoteRun``; ``config`` gives the thread, the owner and
        the ``recursion_limit``. Errors are raised as the run is read."""
        thread_id = config["configurable"]["thread_id"]
        owner = config["configurable"].get("owner")
        run_config = {
            "configurable": {"owner": owner} if owner is not None else {}, "recursion_limit": config.get("recursion_limit", 50),
        }

        def opened(on_created: Any) -> AsyncIterator[Any]:
            if isinstance(input, JoinRun):
                on_created({"run_id": input.run_id})
                # every mode the run streams (a join filtered to "messages-tuple" gets no tokens from this server)
                return self.client.runs.join_stream(thread_id, input.run_id)
            payload: dict[str, Any] = {"input": input} if not isinstance(input, Command) else {
                "command": {"resume": input.resume}, "strict_resume": True,
            }
            runs: Any = self.client.runs  # the payload's keys pick one of its overloads
            return runs.stream(
                thread_id, self.assistant_id, **payload, stream_mode=STREAM_MODES, config=run_config,
                on_disconnect="continue", multitask_strategy="reject", if_not_exists="create", on_run_created=on_created,
            )

        def named(run_id: str) -> None:
            self.runs_by_thread[thread_id] = run_id

        async def ended() -> None:
            self.runs_by_thread.pop(thread_id, None)

        return RemoteRun(opened, self.url, named, ended)

    async def acancel_run(self, thread_id: str) -> None:
        """Cancel the server's run of ``thread_id`` (the one this process streams, else any running one)
        and wait for it to end; a failure is logged (the thread then says what the next turn does)."""
        run_id = self.runs_by_thread.get(thread_id) or await self.live_run(thread_id)
        if run_id is None:
            return
        try:
            await self._call(self.client.runs.cancel(thread_id, run_id, wait=True))
        except ThreadError as exc:
            log.warning("server run not cancelled thread=%s run=%s: %s", thread_id, run_id, exc.message)

    async def live_run(self, thread_id: str) -> str | None:
        """The id of a run the server is running (or about to run) on ``thread_id``; None when there is none
        or the deployment does not answer."""
        try:
            runs = await self._call(self.client.runs.list(thread_id, status="running", limit=1))
            if not runs:
                runs = await self._call(self.client.runs.list(thread_id, status="pending", limit=1))
        except ThreadError:
            return None
        return str(runs[0]["run_id"]) if runs else None

    async def known_threads(self, thread_ids: Sequence[str]) -> set[str] | None:
        """Which of ``thread_ids`` the server has (``threads.search(ids=...)``); None when it does not answer
        (``hitl_app.threads.lost`` marks the reviews of the others lost)."""
        try:
            search = self.client.threads.search(ids=list(thread_ids), limit=len(thread_ids), select=["thread_id"])
            found = await self._call(search)
        except ThreadError:
            return None
        return {str(t.get("thread_id")) for t in found if isinstance(t, dict)}

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self.client.http.client.aclose()


async def _graph_nodes(client: LangGraphClient, url: str, assistant_id: str) -> dict[str, Any] | None:
    """The assistant's node names; None when the deployment does not answer. Raises StartupError for an
    assistant id the deployment does not know (naming the graphs it serves)."""
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            drawn = await client.assistants.get_graph(assistant_id)
    except httpx.HTTPStatusError as exc:
        status = status_of(exc)
        if status is None or status >= 500:
            log.warning("the agent deployment at %s does not answer (%s): starting anyway", url, type(exc).__name__)
            return None
        if status not in (404, 422):
            raise StartupError(f"HITL_AGENT_URL={url}: {describe_deployment_error(exc, url).message}") from exc
        names: list[str] = []
        with contextlib.suppress(Exception):
            names = sorted({str(a.get("graph_id")) for a in await client.assistants.search(limit=20)})
        raise StartupError(
            f"HITL_ASSISTANT_ID={assistant_id!r} is not an assistant or graph of the deployment at {url}; "
            f"it serves: {', '.join(names) or 'no graph'}."
        ) from exc
    except (httpx.HTTPError, OSError, TimeoutError) as exc:
        log.warning("the agent deployment at %s does not answer (%s): starting anyway", url, type(exc).__name__)
        return None
    nodes = drawn["nodes"] if isinstance(drawn.get("nodes"), list) else []
    return {str(n.get("id")): None for n in nodes if isinstance(n, dict)}


@contextlib.asynccontextmanager
async def open_remote_agent(url: str, assistant_id: str, api_key: str | None = None) -> AsyncIterator[RemoteAgentRuntime]:
    """A ``RemoteAgentRuntime`` of the deployment at ``url`` (``api_key`` sent as ``x-api-key``); closed on exit.

    Raises StartupError for an assistant id the deployment does not know. A deployment that does not
    answer yet is no error here: the app starts, and each thread says so until it answers.
    """
    client = get_client(
        url=url, api_key=api_key, timeout=(5.0, None, 30.0, 30.0),  # connect, read (a run may be quiet for long), write, pool
    )
    nodes = await _graph_nodes(client, url, assistant_id)
    runtime = RemoteAgentRuntime(client, url, assistant_id, nodes if nodes is not None else {"model": None, "tools": None})
    try:
        yield runtime
    finally:
        await runtime.aclose()
