"""A reviewer's tab after deciding someone else's card, through the real websocket (prod app
under examples/policies/team.toml): it follows the run it released to its end and stays usable
(before: "This thread belongs to someone else", "Thinking..." and a running badge forever)."""

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
    s = AppServer(tmp_path_factory.mktemp("ws-rights-now"), env={"HITL_POLICY": str(TEAM)}, frontend=False)
    s.start()
    yield s
    s.stop()


async def test_the_reviewer_tab_follows_the_run_it_released_and_can_reload(server):
    tid = str(uuid.uuid4())
    rita = await server.asign_in("rita-" + tid, role="reviewer", name="Rita")
    async with WsClient(server.url) as mo:
        await mo.load_thread(tid)
        await mo.send("pay 500 to Bob")
        await mo.wait_review(1)
        async with WsClient(server.url, session=rita.token) as tab:
            chat = await tab.load_thread(tid)
            assert chat["load_error"] == "" and chat["read_only"]
            [card] = await tab.wait_review(1)
            assert card["allowed"] == ["approve", "reject"]
            await tab.call("ReviewState.choose", index=0, kind="approve")
            await tab.call("ReviewState.submit")
            await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                               what="Rita's tab sees the run end")
            assert tab.chat["load_error"] == "" and not tab.review.get("cards")
            assert tab.chat["read_only"], "her live tab stays read-only (no composer) once the run ends"
            assert any("Paid" in (m.get("text") or "") or m.get("role") == "tool" for m in tab.chat["messages"])
        async with WsClient(server.url, session=rita.token) as again:  # a reload of her tab
            chat = await again.load_thread(tid)
            assert chat["load_error"] == "" and chat["status"] == "idle" and not chat["streaming"] and chat["read_only"]
    [row] = app_db.audit_rows(server.data_dir, tid)
    assert row["decision_type"] == "approve" and row["reviewer_id"] == str(rita.account_id)
