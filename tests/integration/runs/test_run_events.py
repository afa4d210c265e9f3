"""What a run publishes on the bus for the tabs: text as it comes, a boundary between two model
messages (so the tabs show the first), and no boundary before ``ended``, which carries the thread
as checkpointed, so a tab reads nothing more for a plain reply or an interrupt."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent_loader import validators_for
from hitl_app.bus.run_bus import RunEvent
from hitl_app.store.db import create_schema, make_engines
from hitl_app.threads.service import ThreadService

OWNER = "owner-a"


GATE_S = 30.0
"""How long (seconds) ``HeldModel`` holds the rest of a reply for a tab to see its first words."""


class HeldModel(DemoChatModel):
    """The demo model, which after its first ``HELD_AFTER`` words holds the rest of the reply until
    ``seen`` is set (by a tab that received those words), and fails the run after ``GATE_S`` seconds."""

    HELD_AFTER: ClassVar[int] = 5
    seen: Any = None

    async def _astream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        words = 0
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
            words += bool(chunk.message.content)
            if words == self.HELD_AFTER:
                try:
                    await asyncio.wait_for(self.seen.wait(), GATE_S)
                except TimeoutError:
                    raise RuntimeError("no tab saw the first words while the model held the rest") from None


@pytest.fixture
async def service(database_url, workspace, saver):
    """The service on the demo agent at 200 words a second; for a reply, the model holds all but
    its first words until a tab has seen text (``HeldModel``)."""
    engines = make_engines(database_url)
    create_schema(engines)
    model = HeldModel(words_per_second=200, seen=asyncio.Event())
    bundle = build_demo_agent(model=model, workspace=workspace, checkpointer=saver)
    svc = ThreadService(bundle.graph, engines, validators_for(bundle.tools_by_name))
    # a finished message's boundary waits for the run to go on; on a loaded machine the end of a
    # run can take longer than the default hold, so the tests hold it for as long as a run lasts
    svc.runs.boundary_hold_s = 60
    svc.held_model = model  # type: ignore[attr-defined]  # for follow()
    try:
        yield svc
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


async def follow(service: ThreadService, text: str) -> tuple[str, list[tuple[RunEvent, bool]]]:
    """Start a turn and collect its events, each with whether the run was still live when it came."""
    tid = str(uuid.uuid4())
    await service.start_turn(tid, text, owner=OWNER)
    events, so_far = [], ""
    async for event in service.subscribe(tid):
        events.append((event, await service.is_running(tid)))
        so_far += event.delta if event.kind == "text" else ""
        if len(so_far.split()) >= HeldModel.HELD_AFTER:  # the model goes on only once a tab saw its first words
            service.held_model.seen.set()  # type: ignore[attr-defined]
    await service.runs.wait(tid)
    return tid, events


def streamed(events: list[tuple[RunEvent, bool]]) -> str:
    return "".join(e.delta for e, _ in events if e.kind == "text")


async def test_a_reply_streams_word_by_word_and_ends_with_the_view_and_no_boundary(service):
    _, events = await follow(service, "stream 30 words")
    kinds = [e.kind for e, _ in events]
    assert kinds[0] == "text" and kinds[-1] == "ended" and "boundary" not in kinds
    ended = events[-1][0]
    assert ended.outcome == "finished" and ended.view is not None
    assert ended.view.messages[-1].text.strip() == streamed(events).strip()
    # the model held the last 25 words until a tab had the first 5 (else the run fails after 30 s):
    # words went out as they came, not held back for the message's end
    assert kinds.count("text") >= 2


async def test_an_interrupt_ends_with_the_review_in_the_view_and_no_boundary(service):
    _, events = await follow(service, "email alice@example.com about the report: it is ready")
    assert "boundary" not in [e.kind for e, _ in events]
    ended = events[-1][0]
    assert ended.outcome == "interrupted" and ended.view is not None and ended.view.pending is not None


async def test_a_message_followed_by_a_tool_and_another_message_is_announced_while_the_run_goes_on(service):
    tid, events = await follow(service, "read records")
    kinds = [e.kind for e, _ in events]
    assert kinds.count("boundary") == 1 and kinds[-1] == "ended"
    at = kinds.index("boundary")
    assert events[at][1], "the boundary came while the run was still live"
    assert "text" in kinds[at + 1 :], "the second message streams after the boundary"
    view = await service.load(tid, owner=OWNER)
    assert [m.role for m in view.messages][-3:] == ["assistant", "tool", "assistant"]
