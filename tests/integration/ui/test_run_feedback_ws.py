"""What the thread says while a run works and after it failed (issue 19, QA M2 and M1), through the
real websocket:

* A tool that runs shows as running, not as "Thinking…" (case C11): ``wait 4 seconds``, approve,
  submit; while ``slow_task`` works the streaming bubble is labelled "Running slow_task…"
  (``ChatState.running_label``, the bubble's placeholder); when the run ends the label is gone.
* Retry says that it retried: ``fail after 5 words`` keeps the five words; Retry (the demo model
  fails again, by design) shows "Retried; it failed again." with the error, a second one "(2 times)".
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    s = AppServer(tmp_path_factory.mktemp("running-tool"), frontend=False)
    s.start()
    yield s
    s.stop()


async def test_a_running_tool_is_named_while_it_runs(server: AppServer):
    c = await WsClient(server.url, browser_id=str(uuid.uuid4())).connect()
    try:
        await c.load_thread(str(uuid.uuid4()))
        await c.send("wait 4 seconds")
        await c.wait_review(1)
        await c.call("ReviewState.choose", index=0, kind="approve")
        await c.wait_for(lambda t: t.review["cards"][0]["choice"] == "approve")
        await c.call("ReviewState.submit")
        await c.wait_for(lambda t: t.chat.get("running_label") == "Running slow_task…", timeout=15, what="the running label")
        assert c.chat.get("streaming") is True
        await c.wait_for(lambda t: t.chat.get("streaming") is False and t.chat.get("status") == "idle", timeout=30)
        assert c.chat.get("running_label") == ""
        assert [(m["role"], m["tool_name"]) for m in c.chat["messages"] if m["role"] == "tool"] == [("tool", "slow_task")]
    finally:
        await c.close()


async def test_retry_says_it_retried(server: AppServer):
    c = await WsClient(server.url, browser_id=str(uuid.uuid4())).connect()
    try:
        await c.load_thread(str(uuid.uuid4()))
        await c.send("fail after 5 words")
        await c.wait_for(lambda t: t.chat.get("status") == "failed" and not t.chat.get("streaming"), timeout=30)
        first = c.chat["run_error"]
        assert first and not first.startswith("Retried")
        assert [len(m["text"].split()) for m in c.chat["messages"] if m["role"] == "assistant"] == [5]  # the words stay
        for times in ("Retried; it failed again. ", "Retried (2 times); it failed again. "):
            await c.call("ChatState.continue_run")
            await c.wait_for(lambda t, w=times: t.chat.get("run_error") == w + first, timeout=30, what=times)
        assert [m["role"] for m in c.chat["messages"]] == ["user", "assistant"], "each retry replaced the cut-off words"
    finally:
        await c.close()
