"""An "always allow" scope picked beside an approval goes when the card is switched to Reject: the
tab's Submit sends no grant with a reject (a QA finding: it failed on f6c1954, where the scope stayed
in the tab and the Submit was refused).

Steps in the browser: Approve a mail card, pick "Always allow this tool in this thread", click
Reject (the scope select disappears), type a reason, Submit: the card shows "A grant goes with an
approval: approve the card to add one." and nothing the person can see explains or clears it (only
a new tab, whose kept scope is dropped, submits).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import SESSION, WsClient

pytestmark = pytest.mark.app
DESK = f"{SESSION}.hitl_app___ui___state___desk____desk_state"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    s = AppServer(tmp_path_factory.mktemp("qa-reject-after-scope") / "app", frontend=False)
    s.start()
    yield s
    s.stop()


async def test_a_reject_after_an_approval_with_a_scope_submits(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("email bob@example.com about plans: hi")
        await tab.wait_review(1)
        await tab.call("ReviewState.choose", index=0, kind="approve")
        await tab.call("ReviewState.set_grant", index=0, value="thread:24")
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("grant_choice") == ["thread:24"], what="scope")
        await tab.call("ReviewState.choose", index=0, kind="reject")
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("grant_choice") == ["none"], what="scope dropped")
        await tab.call("ReviewState.set_reason", index=0, text="not now")
        await tab.settle()
        await tab.call("ReviewState.submit")
        await tab.wait_for(
            lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming") and not c.review.get("cards"),
            timeout=30,
            what="the rejection runs (actual: the card stays with 'A grant goes with an approval')",
        )
