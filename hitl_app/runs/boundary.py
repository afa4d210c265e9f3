"""A finished message's ``boundary`` event, held back a moment: published when the next message
starts, or after a short hold when the run goes on (a tool running), never while grants are asked,
and not at all when the run ends (its ``ended`` event says it all). ``read_pass`` reads one pass of
the graph's stream with it."""

# Tested by: tests/integration/runs/test_run_events.py

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hitl_app.runs.partial import PartialReply
    from hitl_app.runs.text_batcher import TextBatcher

BOUNDARY_HOLD_S = 0.25
"""How long (seconds) a finished message's ``boundary`` waits for the run to end or the next
message to start before it is published anyway (a tool is running: the tabs show the message)."""


class HeldBoundary:
    """The ``boundary`` of the message that just ended, published late or not at all.

    ``hold`` starts the wait (a timer on the running loop), ``release`` publishes now if one is
    held (the next message started), ``pause`` stops the timer but keeps the boundary for the next
    ``release`` (the run paused for review: no tab may read the pending review while the grants
    are asked), ``drop`` forgets it (the run ended: ``ended`` says it all).

    Args:
        publish: publishes the boundary event.
        hold_s: seconds to hold it.
    """

    def __init__(self, publish: Callable[[], None], hold_s: float) -> None:
        self._publish = publish
        self._hold_s = hold_s
        self._timer: asyncio.TimerHandle | None = None
        self._pending = False

    def hold(self) -> None:
        """Hold the boundary of the message that just ended (publish it after ``hold_s``)."""
        self.drop()
        self._pending = True
        self._timer = asyncio.get_running_loop().call_later(self._hold_s, self.release)

    def pause(self) -> None:
        """Stop the timer; a held boundary waits for ``release``."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def release(self) -> None:
        """Publish a held boundary now."""
        if self._pending:
            self.drop()
            self._publish()

    def drop(self) -> None:
        """Forget a held boundary."""
        self.pause()
        self._pending = False


async def read_pass(run: Any, batcher: TextBatcher, boundary: HeldBoundary, reply: PartialReply) -> bool:
    """Read one pass of the graph (``astream_events``' v3 run): each message's tokens to ``batcher``
    and ``reply``, its boundary held in ``boundary``; True when the pass ended paused on an interrupt."""
    async with run:
        async for message in run.messages:
            boundary.release()
            reply.start()
            async for token in message.text:
                batcher.append(token)
                reply.append(token)
            reply.start()
            batcher.flush()
            boundary.hold()
        return bool(await run.interrupted())
