"""People and roles through the real websocket (prod app, a team policy whose ``delete_file``
escalates to the reviewers after a short deadline):

- an escalated review appears live in a reviewer's /reviews inbox (no reload), the reviewer may
  open and decide it, and it leaves their inbox;
- the line above the member's locked composer says what is left for THEM: their own card, or
  whom the review waits for and how many approvals it still needs (not "decide every card"
  when nothing is theirs to decide).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app

POLICY = """
[tools.delete_file]
allowed_decisions = ["approve", "reject"]
description = "Delete the file {path}"
deadline = "3s"
on_timeout = "escalate"
escalate_to = "reviewer"

[tools.send_email]
allowed_decisions = ["approve", "edit", "reject"]
description = "Send an email to {to}: {subject}"
reviewers = ["owner", "reviewer"]

[tools.transfer_funds]
allowed_decisions = ["approve", "reject"]
description = "Pay {amount} to {to}"
reviewers = ["reviewer"]
self_approval = false

[[tools.transfer_funds.rules]]
when = "amount > 1000"
approvals = 2

[tools.ask_user]
allowed_decisions = ["respond"]
description = "Question for you: {question}"
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    root = tmp_path_factory.mktemp("ws-people")
    (root / "policy.toml").write_text(POLICY)
    s = AppServer(root / "data", env={"HITL_POLICY": str(root / "policy.toml"), "HITL_SWEEP_SECONDS": "0.5"}, frontend=False)
    s.start()
    yield s
    s.stop()


def inbox_rows(c: WsClient, tid: str) -> list[dict[str, Any]]:
    return [r for r in c.state.get("InboxState", {}).get("rows") or [] if r["thread_id"] == tid]


async def test_an_escalated_review_reaches_the_reviewers_inbox_live_and_they_may_decide_it(server):
    tid = str(uuid.uuid4())
    rita = await server.asign_in("rita-" + tid, role="reviewer", name="Rita")
    async with WsClient(server.url, session=rita.token) as inbox, WsClient(server.url) as mo:
        await inbox.hydrate("/reviews")
        await inbox.wait_for(lambda c: c.state.get("InboxState", {}).get("loaded") is True, what="inbox read")
        await mo.load_thread(tid)
        await mo.send("delete notes/old.txt")
        [card] = await mo.wait_review(1)
        assert card["allowed"] == ["approve", "reject"], "before the deadline the person who asked decides"
        # the deadline passes, the sweeper escalates: the reviewer's open inbox shows it without a reload
        [row] = await inbox.wait_for(lambda c: inbox_rows(c, tid), timeout=30, what="the escalated review in the inbox")
        assert row["tool"] == "delete_file" and row["asked_by"].startswith("Tester")
        async with WsClient(server.url, session=rita.token) as tab:  # the reviewer opens it and decides
            chat = await tab.load_thread(tid)
            assert chat["load_error"] == "" and chat["read_only"]
            [card] = await tab.wait_review(1)
            assert card["allowed"] == ["approve", "reject"]
            await tab.call("ReviewState.choose", index=0, kind="approve")
            await tab.call("ReviewState.submit")
            await mo.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                              what="the member's run resumed and ended")
        await inbox.wait_for(lambda c: not inbox_rows(c, tid), what="the decided review left the inbox")
    [audit] = app_db.audit_rows(server.data_dir, tid)
    assert (audit["decision_type"], audit["reviewer_id"], audit["reviewer_role"]) == ("approve", str(rita.account_id), "reviewer")
    assert not (app_db.sandbox(server.data_dir, str(mo.account_id)) / "notes" / "old.txt").exists()


def composer(c: WsClient) -> str:
    return str(c.review.get("composer_line", ""))


async def test_the_composer_line_says_what_is_left_for_this_person(server):
    tid = str(uuid.uuid4())
    async with WsClient(server.url) as mo:
        await mo.load_thread(tid)
        await mo.send("pay 1500 to Bob")
        await mo.wait_review(1)
        await mo.wait_for(lambda c: composer(c), what="a composer line")
        assert composer(mo) == "Waiting for a reviewer to decide (2 approvals still needed); nothing here is yours to approve."

    tid = str(uuid.uuid4())
    rita = await server.asign_in("rita2-" + tid, role="reviewer", name="Rita")
    async with WsClient(server.url) as mo:
        await mo.load_thread(tid)
        await mo.send("email bob@example.com about the report: ready and pay 1500 to Bob")
        await mo.wait_review(2)
        await mo.wait_for(lambda c: composer(c), what="a composer line")
        assert composer(mo) == "Decide your 1 card above, then submit; 1 more waits for a reviewer."
        await mo.call("ReviewState.choose", index=0, kind="approve")
        await mo.call("ReviewState.submit")
        await mo.wait_for(
            lambda c: composer(c) == "Your decisions are in; waiting for 2 more approvals from a reviewer.",
            what="the member's decision in",
        )
        async with WsClient(server.url, session=rita.token) as tab:  # a first reviewer approves the payment
            await tab.load_thread(tid)
            await tab.wait_review(2)
            await tab.call("ReviewState.choose", index=1, kind="approve")
            await tab.call("ReviewState.submit")
            await mo.wait_for(  # live in the member's tab
                lambda c: composer(c) == "Your decisions are in; waiting for 1 more approval from a reviewer.",
                what="one approval left",
            )
        assert mo.chat["status"] == "review"


async def test_a_reviewer_beside_the_owners_question_reads_that_an_answer_waits(server):
    # QA: after a reviewer's approval, "waiting for 1 more approval from <owner>" where a question waits
    tid = str(uuid.uuid4())
    rita = await server.asign_in("rita3-" + tid, role="reviewer", name="Rita")
    async with WsClient(server.url) as mo:
        await mo.load_thread(tid)
        await mo.send("pay 500 to Bob and ask me which day")
        await mo.wait_review(2)
        async with WsClient(server.url, session=rita.token) as tab:
            await tab.load_thread(tid)
            await tab.wait_review(2)
            await tab.call("ReviewState.choose", index=0, kind="approve")
            await tab.call("ReviewState.submit")
            await tab.wait_for(lambda c: composer(c).startswith("Your decisions are in"), what="Rita's decision in")
            line = composer(tab)
            assert line.startswith("Your decisions are in; waiting for 1 more answer from "), line


ADMIN = "reflex___state____state.hitl_app___ui___state___session____session_state.hitl_app___ui___state___admin____admin_state"


async def test_a_demoted_reviewers_open_inbox_loses_the_metrics_link_without_a_reload(server):
    key = uuid.uuid4().hex[:8]
    ada = await server.asign_in("ada-" + key, role="admin", name="Ada")
    rex = await server.asign_in("rex-" + key, role="reviewer", name="Rex")
    async with WsClient(server.url, session=rex.token) as tab:
        await tab.hydrate("/reviews")
        await tab.wait_for(lambda c: c.state.get("SessionState", {}).get("may_open_metrics") is True, what="Metrics link")
        async with WsClient(server.url, session=ada.token) as admin:
            await admin.hydrate("/admin")
            await admin.call(f"{ADMIN}.set_role", account_id=rex.account_id, role="member")
            await admin.wait_for(lambda c: "Role changed" in (c.state.get(ADMIN, {}).get("message") or ""), what="changed")
        # Rex does nothing: his open tab's watcher re-reads the session and the link goes
        await tab.wait_for(
            lambda c: c.state.get("SessionState", {}).get("may_open_metrics") is False
            and c.state["SessionState"].get("user_role") == "member",
            timeout=10, what="the Metrics link gone (QA: it stayed until a reload)",
        )
