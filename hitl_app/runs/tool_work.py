"""Which threads still have tool work running in a worker thread, even after their run was stopped.

LangGraph runs a synchronous tool in the event loop's default executor. Stop cancels the run's
task, but Python cannot stop a thread: the tool goes on until it returns. If Continue started the
same call again meanwhile, an approved write could happen twice. ``ToolWork`` sees that work: the
run driver marks its task with the thread id (a context variable, which asyncio copies into every
task and executor call the run makes), and a default executor installed on the loop records each
job submitted under that mark until it finishes. ``busy(thread_id)`` then says whether any is left.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any

from hitl_app.errors import ThreadError

RUN_THREAD: ContextVar[str | None] = ContextVar("hitl_run_thread", default=None)
"""The thread id of the run whose task is current (set by the run driver), else None."""


class _TrackingExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` that hands each job submitted inside a run to ``ToolWork``."""

    def __init__(self, work: ToolWork) -> None:
        super().__init__(thread_name_prefix="hitl-tool")
        self._work = work

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        thread_id = RUN_THREAD.get()
        if thread_id is not None:
            self._work.add(thread_id, future)
        return future


class ToolWork:
    """Jobs in worker threads per thread id, kept only until each finishes (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, set[Future[Any]]] = {}
        self._loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Make ``loop``'s default executor a tracking one (once per loop)."""
        if loop not in self._loops:
            loop.set_default_executor(_TrackingExecutor(self))
            self._loops.add(loop)

    def add(self, thread_id: str, future: Future[Any]) -> None:
        """Record ``future`` as work of ``thread_id`` until it is done."""
        with self._lock:
            self._jobs.setdefault(thread_id, set()).add(future)
        future.add_done_callback(lambda f: self._discard(thread_id, f))

    def _discard(self, thread_id: str, future: Future[Any]) -> None:
        with self._lock:
            jobs = self._jobs.get(thread_id)
            if jobs is not None:
                jobs.discard(future)
                if not jobs:
                    del self._jobs[thread_id]

    def busy(self, thread_id: str) -> bool:
        """True while a job started by a run of ``thread_id`` is still running in a worker thread."""
        with self._lock:
            return bool(self._jobs.get(thread_id))

    async def wait_idle(self, thread_id: str, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for ``thread_id``'s jobs to finish; True when none is left."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self.busy(thread_id):
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._jobs)


TOOL_WORK = ToolWork()
"""The process's one record of tool work (executors are per loop; thread ids are unique)."""


TOOL_SETTLE_S = 2.0
"""Seconds a new message or Continue waits for a stopped run's tool to finish before refusing."""


STILL_FINISHING = (
    "A stopped tool call is still finishing in the background; try again in a few seconds "
    "(it will not be run a second time)."
)
"""The refusal (code ``busy``) of a new run while a stopped run's tool call has not finished."""


async def refuse_while_busy(thread_id: str, *, running: bool) -> None:
    """Refuse to start a run of ``thread_id`` while one is ``running``, or while a stopped run's tool
    still runs in a worker thread (waits up to ``TOOL_SETTLE_S`` for it first): starting again could
    run it a second time.

    Raises ThreadError("busy").
    """
    if running:
        raise ThreadError("The agent is still answering; wait for it or press Stop.", code="busy")
    if not await TOOL_WORK.wait_idle(thread_id, TOOL_SETTLE_S):
        raise ThreadError(STILL_FINISHING, code="busy")
