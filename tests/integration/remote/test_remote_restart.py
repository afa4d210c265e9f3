"""C23: a run on a deployed agent is streaming when the app stops; the run goes on on the server. The app
that comes back joins it when the thread is loaded (``runs/rejoin.py``): it never starts a second run,
the text is not doubled, and a pause the joined run reaches shows its cards."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from hitl_app.agent.demo import demo_words
from tests.helpers.langgraph_server import LangGraphDev
from tests.integration.remote.conftest import remote_service

OWNER = "owner-c23"


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LangGraphDev, Path]]:
    """A deployment whose replies stop after 100 words while the returned file exists
    (``DEPLOYED_AGENT_HOLD``): a run that lasts until the test lets it go on."""
    folder = tmp_path_factory.mktemp("langgraph-held")
    hold = folder / "hold"
    server = LangGraphDev(folder / "server", wps=200, env={"DEPLOYED_AGENT_HOLD": str(hold)})
    server.start()
    yield server, hold
    server.close()


async def test_c23_a_restarted_app_joins_the_deployed_run_and_never_runs_it_twice(held, tmp_path):
    paced, hold = held
    hold.touch()
    t = str(uuid.uuid4())
    db = tmp_path / "hitl.sqlite"
    async with remote_service(paced.url, db) as first:
        await first.start_turn(t, "stream 600 words", owner=OWNER)
        got_text = False
        async for event in first.subscribe(t):
            if event.kind == "text" and event.delta:
                got_text = True
                break
        assert got_text
        task = first.runs.tasks[t]
        task.cancel()  # the app process goes away (no Stop): its run task ends, the server's run goes on
        await asyncio.wait({task}, timeout=30)
        assert task.done()
    client = get_client(url=paced.url)
    assert len(await client.runs.list(t, status="running")) == 1
    async with remote_service(paced.url, db) as second:
        view = await second.load(t, owner=OWNER)  # the thread is opened again: the run is joined
        assert await second.is_running(t)
        streamed = []
        async for event in second.subscribe(t):
            if hold.exists():  # subscribed (its first event is the text so far): now the server's run goes on
                hold.unlink()
            if event.kind == "text":
                streamed.append(event.delta or "")
            if event.kind == "ended":
                assert event.outcome == "finished"
                break
        view = await second.load(t, owner=OWNER)
    text = demo_words(600)
    assert [m.text for m in view.messages if m.role == "assistant"] == [text]
    assert "".join(streamed) and text.endswith("".join(streamed).strip())  # the rest of it, once
    assert len(await client.runs.list(t)) == 1  # one run on the server for the one message
