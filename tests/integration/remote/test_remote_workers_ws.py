"""Exactly once on a deployed agent across workers: the app with 2 workers (Redis bus, PostgreSQL) in front
of a real ``langgraph dev``; two tabs of the owner on different workers submit the same review at the
same moment. The deployment runs the approved call once and both tabs end on the same thread."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.langgraph_server import LangGraphDev
from tests.helpers.postgres import fresh_database
from tests.helpers.redis_server import require_redis
from tests.helpers.ws_client import WsClient

pytestmark = [pytest.mark.app, pytest.mark.postgres]


@pytest.fixture(scope="module")
def app(deployment: LangGraphDev, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    redis_url = require_redis().rsplit("/", 1)[0]
    with fresh_database() as url:
        env = {"DATABASE_URL": url, "REFLEX_REDIS_URL": redis_url, "HITL_AGENT_URL": deployment.url,
               "GUNICORN_CMD_ARGS": "--workers 2 --graceful-timeout 5"}
        server = AppServer(tmp_path_factory.mktemp("ws-remote-workers"), env=env, frontend=False)
        server.start()
        yield server
        server.stop()


def worker(tab: WsClient) -> str:
    return str(tab.chat.get("worker_pid", "")).split(":")[0]


async def test_two_tabs_on_two_workers_submit_at_once_and_the_deployment_runs_it_once(app, deployment):
    t, bid = str(uuid.uuid4()), str(uuid.uuid4())
    tabs: list[WsClient] = []
    try:
        first = await WsClient(app.url, browser_id=bid).connect()
        tabs.append(first)
        await first.load_thread(t)
        await first.send("delete twice.txt")
        await first.wait_review(1, timeout=60)
        second = None
        for _ in range(8):  # a tab on the other worker
            tab = await WsClient(app.url, browser_id=bid).connect()
            tabs.append(tab)
            await tab.load_thread(t)
            if worker(tab) != worker(first):
                second = tab
                break
        assert second is not None, "no tab reached the second worker"
        await second.wait_review(1, timeout=60)
        for tab in (first, second):
            await tab.call("ReviewState.choose", index=0, kind="approve")
            await tab.wait_for(lambda c: c.review.get("all_decided"), what="the card decided in the tab")
        await asyncio.gather(first.call("ReviewState.submit"), second.call("ReviewState.submit"))
        for tab in (first, second):
            await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.review.get("cards")
                               and not c.chat.get("streaming"), timeout=60, what="the run ends in every tab")
            assert [m.get("outcome") for m in tab.chat["messages"] if m.get("role") == "tool"] == ["executed"]
    finally:
        for tab in tabs:
            await tab.close()
    assert [a for a in deployment.actions() if a.get("path") == "twice.txt"] == [{"kind": "delete_file", "path": "twice.txt"}]
