"""The app (``HITL_AGENT_URL``) on a real ``langgraph dev``, through its real websocket: a message streams
from the deployment, its interrupt shows as the same cards with the deployment's allowed decisions, a
reload brings them back from the server's thread state, Submit resumes the server thread once, and an
app restart in the middle of a review keeps the review answerable."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.langgraph_server import LangGraphDev
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def app(deployment: LangGraphDev, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("ws-remote"), env={"HITL_AGENT_URL": deployment.url}, frontend=False)
    server.start()
    yield server
    server.stop()


async def test_stream_cards_reload_and_submit_on_a_deployed_agent(app, deployment):
    t = str(uuid.uuid4())
    async with WsClient(app.url) as tab:
        await tab.load_thread(t)
        mark = tab.mark()
        await tab.send("email bob@example.com about remote: hi and ask me which colour")
        cards = await tab.wait_review(2, timeout=60)
        assert [c["tool_name"] for c in cards] == ["send_email", "ask_user"]
        assert tab.seen_since(mark, "ChatState", "streaming", lambda v: v is True)
        assert "send an email to bob@example.com" in tab.chat["messages"][-1]["text"]
        async with WsClient(app.url, browser_id=tab.browser_id) as again:  # a reload: from the server's state
            await again.load_thread(t)
            assert [c["tool_name"] for c in await again.wait_review(2, timeout=60)] == ["send_email", "ask_user"]
        await tab.call("ReviewState.choose", index=0, kind="approve")
        await tab.call("ReviewState.set_answer", index=1, text="teal")
        await tab.wait_for(lambda c: c.review.get("all_decided"), what="both cards decided")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming") and not c.review.get("cards"),
                           timeout=60, what="the resumed run ends")
        tools = [(m.get("tool_name"), m.get("outcome")) for m in tab.chat["messages"] if m.get("role") == "tool"]
        assert sorted(tools) == [("ask_user", "answered"), ("send_email", "executed")]
    assert [a for a in deployment.actions() if a.get("subject") == "remote"] == [
        {"kind": "send_email", "to": "bob@example.com", "subject": "remote", "body": "hi"}
    ]


async def test_an_app_restart_mid_review_keeps_the_review(app, deployment):
    t = str(uuid.uuid4())
    async with WsClient(app.url) as tab:
        await tab.load_thread(t)
        await tab.send("delete restart.txt")
        await tab.wait_review(1, timeout=60)
        browser = tab.browser_id
    app.stop()
    app.start()
    async with WsClient(app.url, browser_id=browser) as tab:
        await tab.load_thread(t)
        assert [c["tool_name"] for c in await tab.wait_review(1, timeout=60)] == ["delete_file"]
        await tab.call("ReviewState.choose", index=0, kind="reject")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.review.get("cards"), timeout=60,
                           what="the rejected run ends")
    assert not [a for a in deployment.actions() if a.get("path") == "restart.txt"]


@pytest.mark.slow
async def test_c23_the_app_restarts_mid_run_and_joins_the_deployed_run(tmp_path):
    """The app stops (SIGTERM) while a deployed run streams (held after 100 words until the test lets it
    go: ``DEPLOYED_AGENT_HOLD``); the run goes on on the server; the app that comes back joins it when the
    thread is opened: the reply ends once, whole, and the server ran one run."""
    from langgraph_sdk import get_client

    from hitl_app.agent.demo import demo_words

    hold = tmp_path / "hold"
    hold.touch()
    with LangGraphDev(tmp_path / "held", wps=200, env={"DEPLOYED_AGENT_HOLD": str(hold)}) as held:
        server = AppServer(tmp_path / "app", env={"HITL_AGENT_URL": held.url}, frontend=False)
        server.start()
        try:
            t = str(uuid.uuid4())
            async with WsClient(server.url) as tab:
                await tab.load_thread(t)
                await tab.send("stream 2000 words")
                await tab.wait_for(lambda c: any("hitlLive" in str(e.get("payload")) and "brown fox" in str(e.get("payload"))
                                                 for e in c.events), timeout=60, what="the reply streams")
                browser = tab.browser_id
            server.stop()
            assert len(await get_client(url=held.url).runs.list(t, status="running")) == 1
            server.start()
            async with WsClient(server.url, browser_id=browser) as tab:
                await tab.load_thread(t)
                await tab.wait_for(lambda c: c.chat.get("status") == "running", timeout=60, what="the tab joins the run")
                hold.unlink()  # the server's run goes on
                await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming")
                                   and any(m.get("role") == "assistant" for m in c.chat.get("messages") or []),
                                   timeout=150, what="the joined run ends")
                assistant = [m["text"] for m in tab.chat["messages"] if m.get("role") == "assistant"]
                assert assistant == [demo_words(2000)]
            assert len(await get_client(url=held.url).runs.list(t)) == 1
        finally:
            server.stop()
