"""The review panel's counter and Submit label after a partial submission, through the real
websocket (prod app under examples/policies/team.toml).

Mo (a member) asks for an email, a question and a delete in one batch. He approves the email,
answers the question and submits; the delete needs a reviewer. Before the fix his panel said
"0 of 3 decided" and "Submit 3 decisions" next to cards "already decided"; now it says
"2 of 3 decided · 1 waiting for a reviewer" and offers no Submit. The reviewer's tab counts
Mo's cards as decided and offers "Submit 1 decision" for the one left to her.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from hitl_app.ui import review_text
from tests.helpers.app_server import AppServer
from tests.helpers.paths import ROOT
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app
TEAM = ROOT / "examples" / "policies" / "team.toml"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    s = AppServer(tmp_path_factory.mktemp("ws-labels"), env={"HITL_POLICY": str(TEAM)}, frontend=False)
    s.start()
    yield s
    s.stop()


async def test_after_a_partial_submit_the_counter_and_submit_label_follow_the_servers_cards(server):
    tid = str(uuid.uuid4())
    rita = await server.asign_in("rita-" + tid, role="reviewer", name="Rita")
    async with WsClient(server.url) as mo:
        await mo.load_thread(tid)
        await mo.send("email bob@example.com about labels: hi and ask me which colour and delete notes.txt")
        cards = await mo.wait_review(3)
        assert [c["tool_name"] for c in cards] == ["send_email", "ask_user", "delete_file"]
        assert [c["standing"] for c in cards] == ["open", "open", "waiting"]
        assert mo.review["summary"] == "0 of 3 decided · 1 waiting for a reviewer"
        assert mo.review["submit_label"] == "Submit"  # nothing chosen yet
        await mo.call("ReviewState.choose", index=0, kind="approve")
        await mo.call("ReviewState.set_answer", index=1, text="blue")
        await mo.wait_for(lambda c: c.review.get("summary", "").startswith("2 of 3"), what="Mo's draft counted")
        await mo.call("ReviewState.submit")
        await mo.wait_for(lambda c: "saved" in (c.review.get("review_note") or ""), what="partial submit saved")
        await mo.wait_for(lambda c: [x["standing"] for x in c.review["cards"]] == ["complete", "complete", "waiting"],
                          what="Mo's cards complete")
        await mo.settle()
        assert mo.review["summary"] == "2 of 3 decided · 1 waiting for a reviewer"
        assert mo.review["submit_label"] == "" and mo.review["nothing_left"] == review_text.WITHDRAW_NOTE
        assert not mo.review["all_decided"] and not mo.review["can_approve_all"]
        assert mo.review["cards"][0]["progress"].startswith("Approved by")
        assert mo.chat["status"] == "review"

        async with WsClient(server.url, session=rita.token) as tab:
            await tab.load_thread(tid)
            cards = await tab.wait_review(3)
            assert [c["standing"] for c in cards] == ["complete", "complete", "open"]
            assert tab.review["summary"] == "2 of 3 decided" and tab.review["submit_label"] == "Submit"
            assert tab.review["nothing_left"] == ""
            await tab.call("ReviewState.choose", index=2, kind="reject")
            await tab.wait_for(lambda c: c.review.get("summary") == "3 of 3 decided" and c.review.get("all_decided"),
                               what="Rita's draft complete")
            await tab.call("ReviewState.submit")
            await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                               what="the run ends")
        await mo.wait_for(lambda c: c.chat.get("status") == "idle" and not c.review.get("cards"), timeout=30,
                          what="Mo sees the run end")


async def test_a_card_only_the_asker_may_decide_says_it_waits_for_them_by_name(server):
    """QA shot 31: Rita saw Max's question "Waiting for a reviewer" and "1 waiting for a reviewer"."""
    tid, max_key, rita_key = (str(uuid.uuid4()) for _ in range(3))
    await server.asign_in(max_key, role="member", name="Max")
    await server.asign_in(rita_key, role="reviewer", name="Rita")
    async with WsClient(server.url, browser_id=max_key) as mx, WsClient(server.url, browser_id=rita_key) as rita:
        await mx.load_thread(tid)
        await mx.send("email bob@example.com about names: hi and ask me which colour")
        assert [c["tool_name"] for c in await mx.wait_review(2)] == ["send_email", "ask_user"]
        await rita.load_thread(tid)
        cards = await rita.wait_review(2)
        assert [(c["standing"], c["others_who_decide"]) for c in cards] == [("open", "a reviewer"), ("waiting", "Max")]
        assert rita.review["summary"] == "0 of 2 decided · 1 waiting for Max"
        assert rita.review["composer_line"] == "Decide your 1 card above, then submit; 1 more waits for Max."
        await rita.call("ReviewState.choose", index=0, kind="approve")
        await rita.call("ReviewState.submit")
        await rita.wait_for(lambda c: c.review["cards"][0]["standing"] == "complete", what="Rita's approval in")
        assert rita.review["nothing_left"] == "Waiting for Max: nothing is left for you to decide here."
