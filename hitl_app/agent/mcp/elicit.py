"""An MCP server's question during a call (elicitation) becomes a card for the thread's owner.

When a server asks (``elicitation/create``, form mode) during a tool call, the call's live session
(``sessions.py``) passes the question to the call's asker (``current_asker``), which hands it to
``ElicitationBridge``, the outermost interceptor of that call, running in the graph's tool task.
The bridge asks LangGraph for the answer with ``interrupt(...)``:

* the first time there is none: ``interrupt`` raises, the bridge ends the server's call (its
  session is closed while the server waits for the answer, so it has done nothing past the
  question) and the run pauses on a card;
* after the card is decided the run resumes, the tool node calls the tool again, the server asks
  the same question again and ``interrupt`` now returns the decision: the bridge answers at once
  and the call goes on with it.

The card (an HITL-shaped interrupt, so the review desk, rights, deadlines, audit and every tab
handle it as any card) is named ``<tool>:question``; its arguments are the requested fields with
their defaults and its ``args_schema`` is the server's ``requestedSchema``, so the card's form and
the server's checks come from it. It offers the MCP spec's three answers and the server receives
exactly the one picked (``answer_from``): **Accept** (the form, checked against the schema; an
edit) answers ``accept`` with the form's values, **Decline** (a reject) ``decline``, **Cancel** (a
reject with ``cancel``) ``cancel``. A run stopped while the question waits ends the call.

Why the call is replayed rather than held open across the pause: a paused run is a checkpoint,
not a live task; its card may be answered hours later, after a restart, or through another worker
process, and the MCP protocol has no way to resume a call in another session. So a server whose
work before its question is not idempotent repeats it on the second call (the example server
only reads before it asks).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_mcp_adapters.interceptors import MCPToolCallRequest, MCPToolCallResult
from langgraph.types import interrupt
from mcp.types import ElicitRequestFormParams, ElicitResult

from hitl_app.review.types import CANCEL_NOTE, QUESTION_SUFFIX


@dataclass
class _Asks:
    """The questions of one running call: ``(params, future of the answer)`` in order, handed over
    from the session's loop to the bridge's (the same loop, or another thread's: thread-safe)."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[tuple[Any, concurrent.futures.Future[ElicitResult]]] = field(default_factory=asyncio.Queue)

    async def ask(self, params: Any) -> ElicitResult:
        """The server's question ``params``, answered by the bridge; a URL-mode question declines."""
        if not isinstance(params, ElicitRequestFormParams):
            return ElicitResult(action="decline")
        answer: concurrent.futures.Future[ElicitResult] = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (params, answer))
        return await asyncio.wrap_future(answer)


_CALL: contextvars.ContextVar[_Asks | None] = contextvars.ContextVar("hitl_mcp_call", default=None)


def current_asker() -> Callable[[Any], Awaitable[ElicitResult]] | None:
    """The question asker of the MCP call running in this context (set by ``ElicitationBridge``),
    or None outside a bridged call (the session then declines any question)."""
    asks = _CALL.get()
    return asks.ask if asks is not None else None


class ElicitationBridge:
    """The outermost interceptor of an MCP tool call: turns the server's questions into cards (see
    the module docstring). ``server`` names the server on the card."""

    def __init__(self, server: str) -> None:
        self.server = server

    async def __call__(
        self, request: MCPToolCallRequest, handler: Callable[[MCPToolCallRequest], Awaitable[MCPToolCallResult]]
    ) -> MCPToolCallResult:
        """Run ``handler`` and answer each question it asks from a card (``interrupt``)."""
        asks = _Asks(asyncio.get_running_loop())
        token = _CALL.set(asks)
        try:
            call = asyncio.ensure_future(handler(request))  # the session's tasks inherit _CALL
        finally:
            _CALL.reset(token)
        try:
            while True:
                question = asyncio.ensure_future(asks.queue.get())
                await asyncio.wait({call, question}, return_when=asyncio.FIRST_COMPLETED)
                if call.done():
                    question.cancel()
                    return call.result()
                params, answer = question.result()
                decision = interrupt(question_request(self.server, request.name, params))  # raises until decided
                answer.set_result(answer_from(decision))
        finally:
            if not call.done():
                call.cancel()
                await asyncio.wait({call})


def question_request(server: str, tool: str, params: ElicitRequestFormParams) -> dict[str, Any]:
    """The HITL-shaped interrupt value of a question: one card ``<server>__<tool>:question`` with
    the requested fields' defaults as its arguments and the requested schema as ``args_schema``."""
    schema = dict(params.requestedSchema or {})
    name = f"{server}__{tool}{QUESTION_SUFFIX}"
    props = schema.get("properties")
    args = {key: _default(spec) for key, spec in props.items()} if isinstance(props, dict) else {}
    return {
        "action_requests": [{"name": name, "args": args, "args_schema": schema,
                             "description": f"{server} asks: {params.message}"[:2000]}],
        "review_configs": [{"action_name": name, "allowed_decisions": ["edit", "reject"]}],
    }


def answer_from(decision: Any) -> ElicitResult:
    """The server's answer for a card's resume value (``{"decisions": [...]}``), one of the MCP
    spec's three actions: an edit (the card's Accept, its form checked against the requested
    schema) accepts with its arguments; a reject whose message carries ``CANCEL_NOTE`` (the card's
    Cancel) cancels; any other reject (Decline), or anything else, declines."""
    decisions = decision.get("decisions") if isinstance(decision, Mapping) else None
    first = decisions[0] if isinstance(decisions, list) and decisions else {}
    if isinstance(first, Mapping) and first.get("type") == "edit":
        edited = first.get("edited_action") or {}
        content = edited.get("args") if isinstance(edited, Mapping) else None
        if isinstance(content, dict):
            return ElicitResult(action="accept", content=content)
    if isinstance(first, Mapping) and first.get("type") == "reject" and CANCEL_NOTE in str(first.get("message") or ""):
        return ElicitResult(action="cancel")
    return ElicitResult(action="decline")


def _default(spec: Any) -> Any:
    if not isinstance(spec, Mapping):
        return ""
    if "default" in spec:
        return spec["default"]
    return {"boolean": False, "integer": 0, "number": 0, "array": []}.get(str(spec.get("type")), "")
