"""The eight demo tools, each with a real, inspectable side effect in the caller's own workspace.

Each tool reads from ``ToolRuntime`` (langchain 1.5 ``langchain.tools.ToolRuntime``):

* the idempotency key ``"<thread_id>:<tool_call_id>"`` (``runtime.tool_call_id`` and
  ``runtime.config["configurable"]["thread_id"]``): a replay of the same call returns the recorded
  result and does not repeat the effect;
* the owner (``runtime.config["configurable"]["owner"]``, ``""`` when unknown): the workspace the
  call acts on (``DemoWorkspace.space``).

``execute_sql``, ``read_data`` and ``slow_task`` have async versions, used when the agent runs
asynchronously: cancelling the tool's task (Stop) interrupts the running statement or wait, and
the worker thread is free again when the cancellation has finished.

Errors: tools raise ``ToolException`` and are built with ``handle_tool_error=True``; LangChain's
``BaseTool.run`` then returns a ``ToolMessage(status="error")`` whose content is the exception
text. (create_agent's ToolNode default ``handle_tool_errors`` only handles argument validation
errors and re-raises everything else, so the tool must handle its own errors.)
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from collections.abc import Callable
from typing import Annotated, Any

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tools.base import ArgsSchema
from langgraph.config import get_config
from langgraph.runtime import Runtime
from pydantic import Field

from hitl_app.agent.payments import make_transfer_funds
from hitl_app.agent.sql_guard import QueryCancel
from hitl_app.agent.workspace import EMAIL_PATTERN, DemoWorkspace

MAX_WAIT_SECONDS = 30.0

EmailAddress = Annotated[str, Field(pattern=EMAIL_PATTERN, description="an email address like name@example.com")]
"""The ``to`` of ``send_email``: checked by the tool's schema, so an edit with a bad address is refused on the card."""


def _configurable(runtime: ToolRuntime | None) -> dict[str, Any]:
    config = getattr(runtime, "config", None) or {}
    return config.get("configurable") or {}


def effect_key(runtime: ToolRuntime | None) -> str:
    """``"<thread_id>:<tool_call_id>"`` from a ToolRuntime (the idempotency key of a call).

    Without a tool call id (a direct call outside an agent) a fresh unique key is returned, so
    the effect happens and is never mistaken for a replay.
    """
    thread_id = _configurable(runtime).get("thread_id") or "no-thread"
    call_id = getattr(runtime, "tool_call_id", None) or f"direct-{uuid.uuid4().hex}"
    return f"{thread_id}:{call_id}"


def owner_of(runtime: ToolRuntime | None) -> str:
    """The run's owner (``config["configurable"]["owner"]``), ``""`` when unknown or not a string."""
    owner = _configurable(runtime).get("owner")
    return owner if isinstance(owner, str) else ""


async def run_cancellable(work: Callable[[QueryCancel], str]) -> str:
    """Run ``work(cancel)`` in a worker thread; if this task is cancelled, stop it and wait for it.

    On cancellation ``cancel.cancel()`` interrupts the statement; the coroutine then waits until
    the thread has returned (so the thread is free) and re-raises ``CancelledError``.
    """
    cancel = QueryCancel()
    ctx = contextvars.copy_context()
    future = asyncio.get_running_loop().run_in_executor(None, ctx.run, work, cancel)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        cancel.cancel()
        await asyncio.wait({future})
        if not future.cancelled():
            future.exception()  # retrieved: QueryCancelled is the expected outcome
        raise


class OwnerWorkspaceSetup(AgentMiddleware):
    """Creates the run owner's workspace (seeded sandbox and demo database) when a run starts.

    A ``before_agent`` hook: the owner (``config["configurable"]["owner"]``) then sees the seed
    files and records in the Workspace panel from the first message on, before any tool ran.
    Returns no state update.
    """

    def __init__(self, workspace: DemoWorkspace) -> None:
        super().__init__()
        self.workspace = workspace

    def before_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Create the owner's space if missing (idempotent, cached per process)."""
        self.workspace.space(_run_owner())
        return None

    async def abefore_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        """Async variant of ``before_agent`` (the file work runs in a thread)."""
        await asyncio.to_thread(self.workspace.space, _run_owner())
        return None


def _run_owner() -> str:
    try:
        owner = (get_config().get("configurable") or {}).get("owner")
    except RuntimeError:  # outside a run
        return ""
    return owner if isinstance(owner, str) else ""


def build_tools(workspace: DemoWorkspace) -> list[BaseTool]:
    """The eight demo tools bound to ``workspace``.

    Returns, in order: send_email, write_file, delete_file, execute_sql, ask_user, read_data,
    slow_task, transfer_funds (``hitl_app.agent.payments``, paid into the owner's demo database).
    Each has ``handle_tool_error=True`` so a ``ToolException`` becomes a ``ToolMessage(status="error")``
    with the error text as content.
    """

    def send_email(to: EmailAddress, subject: str, body: str, runtime: ToolRuntime) -> str:
        """Send an email: stores it in the outbox. `to` must be an email address."""
        return workspace.send_email(effect_key(runtime), to, subject, body, owner=owner_of(runtime))

    def write_file(path: str, content: str, runtime: ToolRuntime) -> str:
        """Write a UTF-8 text file at a relative path inside the workspace (replaces it)."""
        return workspace.write_file(effect_key(runtime), path, content, owner=owner_of(runtime))

    def delete_file(path: str, runtime: ToolRuntime) -> str:
        """Delete a file at a relative path inside the workspace."""
        return workspace.delete_file(effect_key(runtime), path, owner=owner_of(runtime))

    def execute_sql(query: str, runtime: ToolRuntime) -> str:
        """Run one SQL statement on the demo database (table `records`)."""
        return workspace.execute_sql(effect_key(runtime), query, owner=owner_of(runtime))

    async def aexecute_sql(query: str, runtime: ToolRuntime) -> str:
        key, owner = effect_key(runtime), owner_of(runtime)
        return await run_cancellable(lambda c: workspace.execute_sql(key, query, owner=owner, cancel=c))

    def ask_user(question: str, runtime: ToolRuntime) -> str:
        """Ask the user a question; the reviewer answers it."""
        return workspace.run_once(effect_key(runtime), "ask_user", lambda: "No answer was given.", owner=owner_of(runtime))

    def read_data(table: str, runtime: ToolRuntime) -> str:
        """Read rows of the `records` or `outbox` table (at most 50)."""
        return workspace.read_data(effect_key(runtime), table, owner=owner_of(runtime))

    async def aread_data(table: str, runtime: ToolRuntime) -> str:
        key, owner = effect_key(runtime), owner_of(runtime)
        return await run_cancellable(lambda c: workspace.read_data(key, table, owner=owner, cancel=c))

    def slow_task(seconds: float, runtime: ToolRuntime) -> str:
        """Block for `seconds` seconds (at most 30), like a slow disk or network call."""
        wait = _wait_seconds(seconds)
        return workspace.run_once(effect_key(runtime), "slow_task", lambda: _sleep(wait), owner=owner_of(runtime))

    async def aslow_task(seconds: float, runtime: ToolRuntime) -> str:
        wait, key, owner = _wait_seconds(seconds), effect_key(runtime), owner_of(runtime)
        if (done := await asyncio.to_thread(workspace.recorded_result, key)) is not None:
            return done
        await asyncio.sleep(wait)  # Stop cancels this wait at once
        return await asyncio.to_thread(workspace.run_once, key, "slow_task", lambda: f"Waited {wait:g} s", owner=owner)

    transfer_funds = make_transfer_funds(ledger_path=lambda owner: workspace.space(owner).demo_db, effect_key=effect_key)
    return _as_tools([(send_email, None), (write_file, None), (delete_file, None), (execute_sql, aexecute_sql),
                      (ask_user, None), (read_data, aread_data), (slow_task, aslow_task), (transfer_funds, None)])


_ARGS_SCHEMAS: dict[str, ArgsSchema] = {}
"""Each demo tool's argument schema by its function's qualified name, inferred once per process: the
functions are built anew for every workspace, but their signatures and docstrings are the code's own.
Inferring one (a pydantic model of the signature, ``ToolRuntime`` included) took ~6 ms of CPU a tool,
~50 ms of every agent build (cProfile of ``build_tools``, this machine)."""


def _as_tools(pairs: list[tuple[Callable[..., str], Callable[..., Any] | None]]) -> list[BaseTool]:
    """StructuredTools from ``(sync function, async function or None)`` pairs (name, doc and
    schema from the sync one), turning ToolException and bad arguments into error tool messages."""
    tools: list[BaseTool] = []
    for func, coro in pairs:
        tool = StructuredTool.from_function(func, coroutine=coro, args_schema=_ARGS_SCHEMAS.get(func.__qualname__),
                                            handle_tool_error=True, handle_validation_error=_invalid_arguments)
        if tool.args_schema is not None:
            _ARGS_SCHEMAS.setdefault(func.__qualname__, tool.args_schema)
        tools.append(tool)
    return tools


def _wait_seconds(seconds: float) -> float:
    if seconds < 0:
        raise ToolException("seconds must be 0 or more.")
    return min(float(seconds), MAX_WAIT_SECONDS)


def _sleep(wait: float) -> str:
    time.sleep(wait)
    return f"Waited {wait:g} s"


def _invalid_arguments(exc: Exception) -> str:
    """The ToolMessage text for arguments that do not fit a tool's schema (the tool did not run)."""
    errors: list[dict[str, Any]] = getattr(exc, "errors", lambda: [])()
    parts = []
    for err in errors[:3]:
        field = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        if err.get("type") == "string_pattern_mismatch" and field == "to":
            parts.append(f"`to` is not a valid email address (got {err.get('input')!r})")
        else:
            parts.append(f"`{field}`: {err.get('msg')}")
    return "Not run: invalid arguments: " + ("; ".join(parts) or str(exc)) + "."
