"""One run of a deployed agent, read from the LangGraph server's event stream as the run driver reads a
local one.

The run driver reads a run as LangGraph's ``astream_events(version="v3")`` gives it: an async context
manager with ``messages`` (each with a ``text`` token stream) and ``interrupted()``. ``RemoteRun`` gives
the same shape over ``langgraph-sdk``'s ``runs.stream`` (a new run) or ``runs.join_stream`` (a run that
is going on already, ``agent_runtime.JoinRun``), in the server's stream modes ``messages-tuple`` (each model token
with its message id) and ``updates`` (an ``__interrupt__`` update says the run paused).

Errors become what the driver already understands: the server's ``GraphRecursionError`` is raised as
LangGraph's own (the step limit's words), anything else as ``ThreadError`` with one plain sentence
(``describe_deployment_error``). ``sent`` says whether the server took the run (its id came back):
a resume that was never sent must leave its review answerable.
"""

# Tested by: tests/integration/remote/test_remote_agent.py

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from langgraph.errors import GraphRecursionError
from langgraph_sdk.errors import APIConnectionError, APITimeoutError
from langgraph_sdk.schema import StreamMode

from hitl_app.errors import ThreadError

log = logging.getLogger("hitl_app.runs")

_DOWN: Literal["agent_unavailable"] = "agent_unavailable"

STREAM_MODES: list[StreamMode] = ["messages-tuple", "updates"]
"""The server's stream modes a remote run asks for (and a join reads)."""


def describe_deployment_error(exc: BaseException, url: str) -> ThreadError:
    """``exc`` from ``langgraph-sdk``/``httpx`` as a ``ThreadError`` with one plain sentence.

    Codes: ``agent_unavailable`` (no connection, a timeout, a 5xx: try again), ``busy`` (HTTP 409: the
    server runs this thread already), ``refused`` (another 4xx, its status and the server's words).
    """
    status = status_of(exc)
    if isinstance(exc, (httpx.TimeoutException, APITimeoutError)):
        return ThreadError(f"The agent deployment at {url} did not answer in time. Try again in a moment.", code=_DOWN)
    if status is None and isinstance(exc, (httpx.TransportError, OSError, APIConnectionError)):
        return ThreadError(
            f"The agent deployment at {url} does not answer ({type(exc).__name__}). Try again when it is back.",
            code=_DOWN,
        )
    if status == 409:
        return ThreadError("The deployed agent is still working on this thread; wait for it or press Stop.", code="busy")
    if status is not None and status >= 500:
        text = f"The agent deployment at {url} had an internal error (HTTP {status}). Try again in a moment."
        return ThreadError(text, code=_DOWN)
    if status is not None:
        detail = " ".join(str(exc).split())[:200]
        return ThreadError(f"The agent deployment at {url} refused the request (HTTP {status}): {detail}", code="refused")
    return ThreadError(f"The agent deployment at {url} failed: {type(exc).__name__}.", code=_DOWN)


def status_of(exc: BaseException | None) -> int | None:
    """The HTTP status of a deployment's answer carried by ``exc`` (None: no answer)."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _chunk_text(content: Any) -> str:
    """The text of a message chunk's ``content`` (a string, or content blocks with ``text``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
        return "".join(t for t in texts if isinstance(t, str))
    return ""


@dataclass
class _Token:
    message_id: str
    text: str


class RemoteMessage:
    """One model message as it streams: ``text`` yields its tokens (ends when the next message starts)."""

    def __init__(self, run: RemoteRun, first: _Token) -> None:
        self._run = run
        self._first = first

    @property
    async def text(self) -> AsyncIterator[str]:
        """The message's tokens, in order."""
        mid = self._first.message_id
        if self._first.text:
            yield self._first.text
        while (token := await self._run.next_token()) is not None:
            if token.message_id != mid:
                self._run.held = token
                return
            if token.text:
                yield token.text


class RemoteRun:
    """A run on the server, read as LangGraph's v3 event stream (see the module).

    Args:
        open_stream: ``on_run_created -> the SSE parts`` (``runs.stream`` or ``runs.join_stream``).
        url: the deployment's address (for the error sentences).
        on_run_id: told the run's id as soon as the server names it.
    """

    def __init__(
        self, open_stream: Callable[[Callable[[Any], None]], AsyncIterator[Any]], url: str,
        on_run_id: Callable[[str], None], on_end: Callable[[], Awaitable[None]],
    ) -> None:
        self._open_stream = open_stream
        self._url = url
        self._on_run_id = on_run_id
        self._on_end = on_end
        self._parts: AsyncIterator[Any] | None = None
        self._interrupted = False
        self.held: _Token | None = None
        self.run_id: str | None = None

    @property
    def sent(self) -> bool:
        """True once the server took the run (named its id)."""
        return self.run_id is not None

    def _named(self, run_id: str | None) -> None:
        if run_id and self.run_id is None:
            self.run_id = str(run_id)
            self._on_run_id(self.run_id)

    async def __aenter__(self) -> RemoteRun:
        self._parts = self._open_stream(lambda meta: self._named((meta or {}).get("run_id")))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._on_end()

    @property
    async def messages(self) -> AsyncIterator[RemoteMessage]:
        """The run's model messages, each with its token stream."""
        while True:
            token = self.held or await self.next_token()
            self.held = None
            if token is None:
                return
            yield RemoteMessage(self, token)

    async def interrupted(self) -> bool:
        """True when the run ended paused on an interrupt (read to the stream's end first)."""
        while await self.next_token() is not None:
            pass
        return self._interrupted

    async def next_token(self) -> _Token | None:
        """The next model token of the stream (None at its end); notes interrupts, raises its errors."""
        assert self._parts is not None, "use RemoteRun in 'async with'"
        while True:
            try:
                part = await anext(self._parts)
            except StopAsyncIteration:
                return None
            except (httpx.HTTPError, OSError) as exc:
                raise describe_deployment_error(exc, self._url) from exc
            token = self._read(part.event, part.data)
            if token is not None:
                return token

    def _read(self, event: str, data: Any) -> _Token | None:
        """One SSE part: a token, or None (metadata, an update, the end); raises the run's error."""
        if event == "metadata" and isinstance(data, dict):
            self._named(data.get("run_id"))
        elif event.startswith("messages") and isinstance(data, list) and data and isinstance(data[0], dict):
            chunk = data[0]
            if chunk.get("type") == "AIMessageChunk":
                return _Token(str(chunk.get("id") or ""), _chunk_text(chunk.get("content")))
        elif event.startswith("updates") and isinstance(data, dict) and "__interrupt__" in data:
            self._interrupted = True
        elif event == "error":
            raise _run_error(data)
        return None


def _run_error(data: Any) -> Exception:
    """The server's ``error`` event as an exception the driver reads (the step limit as LangGraph's)."""
    name = str(data.get("error", "Error")) if isinstance(data, dict) else "Error"
    message = str(data.get("message", "")) if isinstance(data, dict) else str(data)
    if name == "GraphRecursionError":
        return GraphRecursionError(message)
    log.warning("deployed run failed: %s: %s", name, message[:300])
    short = " ".join(message.split())[:300]
    return ThreadError(f"The deployed agent's run failed: {name}: {short}. Press Retry.", code="refused")
