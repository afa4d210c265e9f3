"""Review rights through the real websocket (prod app under examples/policies/team.toml).

Each simulated browser signs in as a member account of its own (``WsClient``). A member's
payment card needs a reviewer: the page offers the member only Reject (withdraw), a forged Approve
(an event the page would never send) is refused with a message, nothing is paid, the review stays
answerable; another browser cannot open the thread at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.paths import ROOT
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app
TEAM = ROOT / "examples" / "policies" / "team.toml"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    s = AppServer(tmp_path_factory.mktemp("ws-rights"), env={"HITL_POLICY": str(TEAM)}, frontend=False)
    s.start()
    yield s
    s.stop()


async def test_forged_approve_on_a_card_that_needs_a_reviewer_is_refused(server):
    tid = str(uuid.uuid4())
    async with WsClient(server.url) as c:
        await c.load_thread(tid)
        await c.send("pay 1500 to Bob")
        [card] = await c.wait_review(1)
        assert card["allowed"] == ["reject"] and card["show_progress"] and card["progress"] == "0 of 2 approvals"
        assert card["note"] == "transfer_funds needs a reviewer; you are a member"
        await c.call("ReviewState.choose", index=0, kind="approve")  # forged: no such button
        await c.wait_for(lambda c: "not allowed" in (c.review["cards"][0].get("error") or ""), what="card error")
        await c.call("ReviewState.submit")
        await c.settle()
        assert c.chat["status"] == "review" and c.review["cards"][0]["choice"] == ""
        owner = str(c.account_id)
        async with WsClient(server.url) as other:  # another browser: not theirs, no card of theirs
            chat = await other.load_thread(tid)
            assert "belongs to someone else" in chat["load_error"]
        # the review is still answerable: the member withdraws it, nothing is paid
        await c.call("ReviewState.choose", index=0, kind="reject")
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30, what="run ended")
    [row] = app_db.audit_rows(server.data_dir, tid)
    assert row["decision_type"] == "reject" and row["reviewer_id"] == owner and row["reviewer_role"] == "member"
    assert app_db.tool_effects(server.data_dir, "transfer_funds") == 0
