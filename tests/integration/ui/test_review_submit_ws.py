"""The review flow's submit and undo through the real websocket (prod app; examples/policies/team.toml
with a long undo window on ``send_email``), as the QA pass of 2026-12-01 found it:

* Undo belongs to the person whose submission opened the window (or an admin): a member whose
  earlier partial submission did not open it is refused and shown no Undo; when the submitter
  undoes, the other tabs on the thread show it live (the window gone, the card waiting again).
* The texts fit the moment: "a reviewer" before any reviewer acted, the undo window's line while
  it is open, "press Submit" after an Undo.
* C5: a submission must decide every card still the person's: an admin who approved one of
  three cards sees "Submit 1 decision" disabled, and a forged submit is refused with a readable
  message and writes nothing; cards left to others (a member's delete) stay a partial submission.
* A double-clicked Submit: the second click is a no-op (no error banner), and no waiting note
  is left under the finished turn once a reviewer completes the review.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from hitl_app.ui import review_text
from hitl_app.ui.state.desk_actions import UNDONE_NOTE
from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.paths import ROOT
from tests.helpers.ws_client import SESSION, WsClient

pytestmark = pytest.mark.app
DESK = f"{SESSION}.hitl_app___ui___state___desk____desk_state"
TEAM = (ROOT / "examples" / "policies" / "team.toml").read_text(encoding="utf-8")
POLICY = TEAM.replace('description = "Send an email to {to}: {subject}"\n',
                      'description = "Send an email to {to}: {subject}"\nundo_seconds = 120\n').replace(
    'description = "Pay {amount} to {to}"\n', 'description = "Pay {amount} to {to}"\nundo_seconds = 120\n')
ASK = "email ee@example.com about ee: hi and delete notes/new2.txt"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    assert POLICY != TEAM
    data = tmp_path_factory.mktemp("ws-submit")
    policy = data / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    s = AppServer(data / "app", env={"HITL_POLICY": str(policy)}, frontend=False)
    s.start()
    yield s
    s.stop()


def desk(c: WsClient) -> dict:
    return c.state.get(DESK) or {}


async def _member_then_reviewer(server: AppServer, mo: WsClient, rex: WsClient, tid: str) -> None:
    """Mo approves his email (partial), Rex approves the delete: the review is complete, the window opens."""
    await mo.load_thread(tid)
    await mo.send(ASK)
    assert [c["tool_name"] for c in await mo.wait_review(2)] == ["send_email", "delete_file"]
    await mo.call("ReviewState.choose", index=0, kind="approve")
    await mo.call("ReviewState.submit")
    await mo.wait_for(lambda c: c.review["cards"][0]["standing"] == "complete", what="Mo's approval in")
    await mo.settle()  # no reviewer acted yet: "a reviewer", not "another"
    assert mo.review["summary"] == "1 of 2 decided · 1 waiting for a reviewer"
    assert mo.review["composer_line"] == "Your decisions are in; waiting for 1 more approval from a reviewer."
    await rex.load_thread(tid)
    await rex.wait_review(2)
    await rex.call("ReviewState.choose", index=1, kind="approve")
    await rex.call("ReviewState.submit")
    await rex.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the undo window in Rex's tab")
    await mo.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the undo window in Mo's tab")


async def test_only_the_submitter_may_undo_and_other_tabs_follow_live(server):
    tid, mo_key, rex_key = (str(uuid.uuid4()) for _ in range(3))
    await server.asign_in(rex_key, role="reviewer", name="Rex")
    async with WsClient(server.url, browser_id=mo_key) as mo, WsClient(server.url, browser_id=rex_key) as rex:
        await _member_then_reviewer(server, mo, rex, tid)
        assert desk(rex)["can_undo"] is True and desk(mo)["can_undo"] is False  # the Undo shows only to Rex
        assert desk(mo)["undo_by"] == "Rex"
        # the composer says the agent goes on when the window ends (the page counts the seconds)
        assert mo.review["composer_line"] == rex.review["composer_line"] == review_text.UNDO_LINE
        assert rex.review["review_note"] == ""
        await mo.call("ReviewState.undo")  # forged: Mo's page has no Undo
        await mo.wait_for(lambda c: desk(c).get("undo_error"), what="the refusal")
        assert desk(mo)["undo_error"] == "Only Rex, whose submission started this, or an admin may undo it."
        await rex.settle()
        assert desk(rex)["undo_ms"] > 0 and desk(mo)["undo_ms"] > 0  # nothing was undone
        assert [r["decision_type"] for r in app_db.audit_rows(server.data_dir, tid)] == ["approve", "approve"]
        await rex.call("ReviewState.undo")
        await rex.wait_for(lambda c: desk(c).get("undo_ms") == 0, what="undone in Rex's tab")
        await rex.wait_for(lambda c: c.review["cards"][1]["choice"] == "approve", what="Rex's choice back")
        assert rex.review["review_note"] == UNDONE_NOTE and rex.review["summary"] == "2 of 2 decided"
        assert rex.review["composer_line"] == review_text.DECIDE_ALL
        # Mo's tab follows without a reload: the window is gone, the delete waits for a reviewer again
        await mo.wait_for(lambda c: desk(c).get("undo_ms") == 0, what="the undo shown live in Mo's tab")
        await mo.wait_for(lambda c: c.review["cards"][1]["standing"] != "complete", what="the delete open again")
        assert mo.review["cards"][0]["standing"] == "complete"  # Mo's own approval stays
        await mo.wait_for(lambda c: c.review["composer_line"] != review_text.UNDO_LINE, what="Mo's line after the undo")
        assert mo.review["composer_line"] == "Your decisions are in; waiting for 1 more approval from a reviewer."
    assert app_db.audit_rows(server.data_dir, tid) == []


async def test_an_admin_may_undo_and_the_submitters_tab_follows_live(server):
    tid, mo_key, rex_key, ada_key = (str(uuid.uuid4()) for _ in range(4))
    await server.asign_in(rex_key, role="reviewer", name="Rex")
    await server.asign_in(ada_key, role="admin", name="Ada")
    async with WsClient(server.url, browser_id=mo_key) as mo, WsClient(server.url, browser_id=rex_key) as rex:
        await _member_then_reviewer(server, mo, rex, tid)
        async with WsClient(server.url, browser_id=ada_key) as ada:
            await ada.load_thread(tid)
            await ada.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the window in Ada's tab")
            assert desk(ada)["can_undo"] is True
            await ada.call("ReviewState.undo")
            await ada.wait_for(lambda c: desk(c).get("undo_ms") == 0, what="undone by Ada")
        await rex.wait_for(lambda c: desk(c).get("undo_ms") == 0, what="the undo shown live in Rex's tab")
        await mo.wait_for(lambda c: desk(c).get("undo_ms") == 0, what="the undo shown live in Mo's tab")
        await rex.wait_for(lambda c: c.review["cards"][1]["standing"] == "open", what="the delete Rex's to decide again")
    assert app_db.audit_rows(server.data_dir, tid) == []


async def test_a_partial_set_of_ones_own_cards_is_refused_and_writes_nothing(server):
    tid, ada_key = str(uuid.uuid4()), str(uuid.uuid4())
    await server.asign_in(ada_key, role="admin", name="Ada")
    async with WsClient(server.url, browser_id=ada_key) as ada:
        await ada.load_thread(tid)
        await ada.send("email a@example.com about a: b and email c@example.com about c: d and write notes/p.txt: pp")
        assert [c["tool_name"] for c in await ada.wait_review(3)] == ["send_email", "send_email", "write_file"]
        assert ada.review["submit_label"] == "Submit"  # nothing chosen yet
        await ada.call("ReviewState.choose", index=0, kind="approve")
        await ada.wait_for(lambda c: c.review["cards"][0]["choice"] == "approve", what="the pick")
        assert ada.review["submit_label"] == "Submit 1 decision" and ada.review["all_decided"] is False
        assert ada.review["summary"] == "1 of 3 decided"
        await ada.call("ReviewState.submit")  # forged: the button is disabled
        await ada.wait_for(lambda c: c.review.get("review_error"), what="the refusal")
        assert ada.review["review_error"] == (
            "Decide every card that is yours before submitting: 1 of 3 decided; card 2 (send_email) has no decision yet."
        )
        await ada.settle()
        assert ada.chat["status"] == "review" and [c["standing"] for c in ada.review["cards"]] == ["open"] * 3
    assert app_db.audit_rows(server.data_dir, tid) == []
    assert app_db.query(server.data_dir, "SELECT COUNT(*) FROM decision_drafts WHERE thread_id = ?", (tid,)) == [(0,)]


async def test_a_second_identical_submit_is_a_no_op_and_no_waiting_note_outlives_the_review(server):
    tid, mo_key, rex_key = (str(uuid.uuid4()) for _ in range(3))
    await server.asign_in(rex_key, role="reviewer", name="Rex")
    async with WsClient(server.url, browser_id=mo_key) as mo:
        await mo.load_thread(tid)
        await mo.send("write notes/dd.txt: dd and delete notes/old.txt")
        assert [c["tool_name"] for c in await mo.wait_review(2)] == ["write_file", "delete_file"]
        await mo.call("ReviewState.choose", index=0, kind="approve")
        await mo.call("ReviewState.submit")
        await mo.call("ReviewState.submit")  # the double-click: Reflex runs it after the first
        await mo.wait_for(lambda c: c.review["cards"][0]["standing"] == "complete", what="Mo's approval in")
        await mo.settle()
        assert mo.review["review_error"] == ""
        drafts = app_db.query(server.data_dir, "SELECT action_index FROM decision_drafts WHERE thread_id = ?", (tid,))
        assert drafts == [(0,)]  # written once
        async with WsClient(server.url, browser_id=rex_key) as rex:
            await rex.load_thread(tid)
            await rex.wait_review(2)
            await rex.call("ReviewState.choose", index=1, kind="approve")
            await rex.call("ReviewState.submit")
            await mo.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming")
                              and not c.review.get("cards"), timeout=30, what="the run ends in Mo's tab")
        await mo.settle()
        assert mo.review["review_error"] == "" and mo.review["review_note"] == ""
    assert [r["decision_type"] for r in app_db.audit_rows(server.data_dir, tid)] == ["approve", "approve"]


async def test_a_double_click_into_ones_own_undo_window_says_nothing_and_undo_leaves_no_stale_error(server):
    """QA: the second click of a double-clicked Submit landed in the undo window the first opened and
    showed "You already decided this review; nothing more was sent."; after Undo it came back in red
    beside "Undone: ... press Submit"."""
    tid, mo_key = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=mo_key) as mo:
        await mo.load_thread(tid)
        await mo.send("email ff@example.com about ff: hi")
        await mo.wait_review(1)
        await mo.call("ReviewState.choose", index=0, kind="approve")
        await mo.call("ReviewState.submit")
        await mo.call("ReviewState.submit")  # the double-click, run after the first: the window is open
        await mo.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the undo window in Mo's tab")
        await mo.settle()
        assert mo.review["review_error"] == ""
        await mo.call("ReviewState.undo")
        await mo.wait_for(lambda c: c.review.get("review_note") == UNDONE_NOTE, what="Mo's undo")
        await mo.settle()
        assert mo.review["review_error"] == "" and desk(mo).get("undo_ms", 0) == 0
        await mo.call("ReviewState.choose", index=0, kind="approve")
        await mo.call("ReviewState.submit")
        await mo.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the undo window again")
        await mo.settle()
        assert mo.review["review_error"] == ""
        await mo.call("ReviewState.undo")  # nothing left running for the module's next tests
        await mo.wait_for(lambda c: desk(c).get("undo_ms") == 0, what="undone again")


async def test_the_slower_reviewer_is_told_who_decided_first_and_that_nothing_was_sent(server):
    """QA: the slower of two reviewers lost her choices silently (the log said "belongs to someone else")."""
    tid, mo_key, rex_key, rita_key = (str(uuid.uuid4()) for _ in range(4))
    await server.asign_in(rex_key, role="reviewer", name="Rex")
    await server.asign_in(rita_key, role="reviewer", name="Rita")
    first = "Rex decided this review first; your choices were not sent."
    async with WsClient(server.url, browser_id=mo_key) as mo, WsClient(server.url, browser_id=rita_key) as rita:
        await mo.load_thread(tid)
        await mo.send(ASK)
        await mo.wait_review(2)
        await mo.call("ReviewState.choose", index=0, kind="approve")
        await mo.call("ReviewState.submit")
        await mo.wait_for(lambda c: c.review["cards"][0]["standing"] == "complete", what="Mo's approval in")
        await rita.load_thread(tid)
        await rita.wait_review(2)
        await rita.call("ReviewState.choose", index=1, kind="approve")  # Rita is slower: not submitted yet
        async with WsClient(server.url, browser_id=rex_key) as rex:
            await rex.load_thread(tid)
            await rex.wait_review(2)
            await rex.call("ReviewState.choose", index=1, kind="approve")
            await rex.call("ReviewState.submit")
            await rex.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the undo window in Rex's tab")
            await rex.settle()
            assert rex.review["review_error"] == "", "the submitter is not told he was overtaken"
        await rita.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the undo window in Rita's tab")
        await rita.wait_for(lambda c: c.review["review_error"] == first, what="Rita told her choice was not sent")
        await mo.settle()
        assert mo.review["review_error"] == "", "Mo had no choice left on the cards"
        await rita.call("ReviewState.submit")  # sent anyway (a tab that missed the push): the server refuses
        await rita.wait_for(lambda c: c.review["review_error"] != first, what="the server's refusal")
        assert rita.review["review_error"] == "Rex already decided this review; your choices were not sent."
        assert desk(rita)["undo_ms"] > 0 and desk(rita)["undo_by"] == "Rex"
    assert [r["decision_type"] for r in app_db.audit_rows(server.data_dir, tid)] == ["approve", "approve"]


def row_of(c: WsClient, tid: str) -> dict:
    return next((r for r in (c.state.get("ThreadListState") or {}).get("threads", []) if r["thread_id"] == tid), {})


async def test_the_sidebar_row_says_undo_window_while_the_decided_review_waits_and_review_after_undo(server):
    """QA shots 20, 23: during the undo window the row kept its "review" badge (the header is
    ``DeskState.undo_ms > 0``: "decided · undo window")."""
    tid, mo_key, rex_key = (str(uuid.uuid4()) for _ in range(3))
    await server.asign_in(rex_key, role="reviewer", name="Rex")
    async with WsClient(server.url, browser_id=mo_key) as mo, WsClient(server.url, browser_id=rex_key) as rex:
        await _member_then_reviewer(server, mo, rex, tid)
        await mo.wait_for(lambda c: row_of(c, tid).get("undo") is True, what="Mo's row in its undo window, live")
        assert mo.chat["status"] == "review" and desk(mo)["undo_ms"] > 0
        await rex.call("ReviewState.undo")
        await mo.wait_for(lambda c: row_of(c, tid).get("undo") is False, what="Mo's row back to review, live")
        assert row_of(mo, tid)["pending"] is True



async def test_the_undo_summary_names_every_approver_and_shows_what_an_approval_runs(server):
    """QA shots 71, 72: a two-approval payment named only the last approver ("submitted by Rita")
    and showed no arguments."""
    tid, max_key, rex_key, rita_key = (str(uuid.uuid4()) for _ in range(4))
    await server.asign_in(max_key, role="member", name="Max")
    await server.asign_in(rex_key, role="reviewer", name="Rex")
    await server.asign_in(rita_key, role="reviewer", name="Rita")
    async with WsClient(server.url, browser_id=max_key) as mx:
        await mx.load_thread(tid)
        await mx.send("pay 1500 to Bob")
        await mx.wait_review(1)
        for key in (rex_key, rita_key):
            async with WsClient(server.url, browser_id=key) as tab:
                await tab.load_thread(tid)
                await tab.wait_review(1)
                await tab.call("ReviewState.choose", index=0, kind="approve")
                await tab.call("ReviewState.submit")
                await tab.wait_for(lambda c: c.review["cards"][0]["standing"] != "open" or desk(c).get("undo_ms", 0) > 0,
                                   what="the approval in")
        await mx.wait_for(lambda c: desk(c).get("undo_ms", 0) > 0, what="the undo window in Max's tab")
        lines = [(x["tool"], x["verb"], x["by"], x["args"]) for x in desk(mx)["undo_lines"]]
        assert lines == [("transfer_funds", "approved", "Rex and Rita", "amount: 1500, to: Bob")]
        assert desk(mx)["undo_by"] == "Rita"
