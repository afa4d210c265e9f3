"""A developer's agent may pause with its own ``interrupt(...)``: the thread loads with a readable
notice instead of approval cards (never a KeyError inside ``load``), and runs carry the owner."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt

from hitl_app.store.db import create_schema, make_engines
from hitl_app.threads.service import ThreadService


def agent_interrupting_with(value, saver, seen_owners: list[str]):
    def ask(state: MessagesState, config: RunnableConfig) -> dict:
        seen_owners.append(config["configurable"].get("owner", "<missing>"))
        answer = interrupt(value)
        return {"messages": [AIMessage(str(answer))]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize(
    "value",
    ["Which colour should the button be?", {"action_requests": [{"args": {"x": 1}}], "review_configs": []}],
    ids=["plain question", "malformed HITL request"],
)
async def test_a_non_hitl_interrupt_loads_as_a_notice_and_the_run_knows_its_owner(database_url, saver, value):
    engines = make_engines(database_url)
    create_schema(engines)
    seen: list[str] = []
    service = ThreadService(agent_interrupting_with(value, saver, seen), engines)
    thread_id = str(uuid.uuid4())
    try:
        await service.start_turn(thread_id, "hello", owner="alice")
        await service.wait(thread_id)
        view = await service.load(thread_id, owner="alice")
        assert view.pending is None and view.status == "failed"
        assert "cannot answer" in view.error
        if isinstance(value, str):
            assert value in view.error
        assert [m.text for m in view.messages] == ["hello"]
        assert seen == ["alice"]
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()
