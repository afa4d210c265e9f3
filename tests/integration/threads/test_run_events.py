"""What a run publishes on the bus for the tabs: text as it comes, a boundary between two model
messages (so the tabs show the first), and no boundary before ``ended``, which carries the thread
as checkpointed, so a tab reads nothing more for a plain reply or an interrupt."""

from __future__ import annotations

import uuid

import pytest

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.demo import DemoChatModel
from hitl_app.store.db import create_schema, make_engines
from hitl_app.threads.agent_loader import validators_for
from hitl_app.threads.bus import RunEvent
from hitl_app.threads.service import ThreadService

OWNER = "owner-a"


@pytest.fixture
async def service(database_url, workspace, saver):
    """The service on the demo agent at 200 words a second."""
    engines = make_engines(database_url)
    create_schema(engines)
    bundle = build_demo_agent(model=DemoChatModel(words_per_second=200), workspace=workspace, checkpointer=saver)
    svc = ThreadService(bundle.graph, engines, validators_for(bundle.tools_by_name))
    # a finished message's boundary waits for the run to go on; on a loaded machine the end of a
    # run can take longer than the default hold, so the tests hold it for as long as a run lasts
    svc.runs.boundary_hold_s = 60
    try:
        yield svc
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


async def follow(service: ThreadService, text: str) -> tuple[str, list[tuple[RunEvent, bool]]]:
    """Start a turn and collect its events, each with whether the run was still live when it came."""
    tid = str(uuid.uuid4())
    await service.start_turn(tid, text, owner=OWNER)
    events = [(event, await service.is_running(tid)) async for event in service.subscribe(tid)]
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
    assert kinds.count("text") > 10  # at 200 words a second the words are not held back in batches


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
