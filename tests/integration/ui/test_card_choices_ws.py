"""Card choices kept on the server until Submit, through the real websocket (prod app; a policy
like examples/policies/team.toml plus an undo window on ``slow_task``).

* Mo rejects card 1 with a reason and answers card 2, then his tab goes (a reload is a new tab
  token): the new tab shows both choices again, and Submit resumes with exactly those.
* Rex (reviewer) picks Approve on a two-person payment but does not submit: Ria's tab shows no
  decision of his, her approval is "1 of 2" (his pick never counts), and his reloaded tab still
  shows his pick.
* Mo submits inside an undo window, reloads, and presses Undo: the cards come back as submitted
  (before: blank).
* A checked edit comes back checked and is sent as edited.
* A pick survives the server being killed and started again.
* "Reject and stop" picked on the card comes back after a reload and is what Submit sends.
* A kept choice the rights do not allow (written straight into the table, as a forged one would
  be) is not shown, and cannot be submitted either.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.paths import ROOT
from tests.helpers.ws_client import SESSION, WsClient

pytestmark = pytest.mark.app
DESK = f"{SESSION}.hitl_app___ui___state___desk____desk_state"
TEAM = (ROOT / "examples" / "policies" / "team.toml").read_text(encoding="utf-8")
POLICY = TEAM.replace('description = "Wait {seconds} seconds"\n', 'description = "Wait {seconds} seconds"\nundo_seconds = 120\n')


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    data = tmp_path_factory.mktemp("ws-choices")
    policy = data / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    s = AppServer(data / "app", env={"HITL_POLICY": str(policy)}, frontend=False)
    s.start()
    yield s
    s.stop()


def picks(cards: list[dict]) -> list[tuple[str, str, str]]:
    return [(c["choice"], c["reason"], c["answer"]) for c in cards]


async def test_a_reject_with_its_reason_survives_a_reload_and_submit_resumes_with_it(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    to = f"bob-{tid[:8]}@example.com"  # this test's own address: the module's server has one outbox
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send(f"email {to} about plans: hi and ask me which colour")
        assert [c["tool_name"] for c in await tab.wait_review(2)] == ["send_email", "ask_user"]
        await tab.call("ReviewState.choose", index=0, kind="reject")
        await tab.call("ReviewState.set_reason", index=0, text="wrong address")
        await tab.call("ReviewState.set_answer", index=1, text="blue")
        await tab.settle()
    async with WsClient(server.url, browser_id=mo) as tab:  # the reload: a new tab, same account
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: picks(c.review.get("cards") or [])[:1] == [("reject", "wrong address", "")],
                           what="the kept choices shown again")
        assert picks(tab.review["cards"]) == [("reject", "wrong address", ""), ("respond", "", "blue")]
        assert tab.review["summary"] == "2 of 2 decided" and tab.review["all_decided"]
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the run ends")
        # the reason box's debounced change arrives after Submit (QA: "That card does not exist (the
        # review may have changed); reload the page." under a review that went through, also after a reload)
        await tab.call("ReviewState.set_reason", index=0, text="wrong address!")
        await tab.settle()
        assert tab.review["review_error"] == ""
    rows = app_db.audit_rows(server.data_dir, tid)
    assert [(r["decision_type"], r["message"]) for r in rows] == [("reject", "wrong address"), ("respond", "blue")]
    assert to not in app_db.outbox(server.data_dir)  # the rejected email was not sent


async def test_an_unsubmitted_pick_is_no_decision_for_anyone_else(server):
    tid, may, rex, ria = (str(uuid.uuid4()) for _ in range(4))
    await server.asign_in(rex, role="reviewer", name="Rex")
    await server.asign_in(ria, role="reviewer", name="Ria")
    async with WsClient(server.url, browser_id=may) as member:
        await member.load_thread(tid)
        await member.send("pay 1500 to Bob")
        await member.wait_review(1)
    async with WsClient(server.url, browser_id=rex) as tab:
        await tab.load_thread(tid)
        await tab.wait_review(1)
        await tab.call("ReviewState.choose", index=0, kind="approve")
        await tab.wait_for(lambda c: c.review["cards"][0]["choice"] == "approve", what="Rex's pick")
    async with WsClient(server.url, browser_id=ria) as tab:
        await tab.load_thread(tid)
        [card] = await tab.wait_review(1)
        assert card["choice"] == "" and card["progress"] == "0 of 2 approvals"  # nothing of Rex's
        await tab.call("ReviewState.choose", index=0, kind="approve")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.review["cards"][0]["progress"] == "1 of 2 approvals: Ria", what="Ria's approval")
        assert tab.chat["status"] == "review"  # Rex's pick did not count toward the resume
    async with WsClient(server.url, browser_id=rex) as tab:
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: (c.review.get("cards") or [{}])[0].get("choice") == "approve", what="Rex's pick kept")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the payment runs")
    [row] = app_db.audit_rows(server.data_dir, tid)
    assert row["decision_type"] == "approve" and row["reviewer"] == "Ria and Rex"


async def test_undo_after_a_reload_brings_back_the_submitted_choices(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("email bob@example.com about plans: hi and wait 0 seconds")
        assert [c["tool_name"] for c in await tab.wait_review(2)] == ["send_email", "slow_task"]
        await tab.call("ReviewState.choose", index=0, kind="reject")
        await tab.call("ReviewState.set_reason", index=0, text="not today")
        await tab.call("ReviewState.choose", index=1, kind="approve")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("undo_ms", 0) > 0, what="the undo window")
    async with WsClient(server.url, browser_id=mo) as tab:  # the reload, inside the window
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("undo_ms", 0) > 0, what="the undo window again")
        lines = [(x["tool"], x["verb"], x["detail"]) for x in tab.state[DESK]["undo_lines"]]  # the server's word
        assert lines == [("send_email", "rejected", "not today"), ("slow_task", "approved", "")]
        await tab.call("ReviewState.undo")
        await tab.wait_for(lambda c: c.state[DESK].get("undo_ms") == 0, what="undone")
        assert tab.state[DESK]["undo_lines"] == []
        await tab.wait_for(lambda c: picks(c.review.get("cards") or [])[:1] == [("reject", "not today", "")],
                           what="the submitted choices back on the cards")
        assert picks(tab.review["cards"]) == [("reject", "not today", ""), ("approve", "", "")]
        assert tab.review["submit_label"] == "Submit 2 decisions" and tab.review["all_decided"]
    assert app_db.audit_rows(server.data_dir, tid) == []  # the claim went with the undo


async def test_a_checked_edit_survives_a_reload_and_is_sent_as_edited(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    edited = '{"to": "alice@example.com", "subject": "plans", "body": "hi"}'
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("email bob@example.com about plans: hi")
        await tab.wait_review(1)
        await tab.call("ReviewState.choose", index=0, kind="edit")
        await tab.wait_for(lambda c: c.review["cards"][0]["editing"], what="the editor open")
        assert tab.review["chips"][0] == ["editing: not checked", "open"] and tab.review["decided_count"] == 0
        await tab.call("ReviewState.save_edit", index=0, text='{"to": "alice@example.com", "subject": "plans"')  # QA shot 57
        await tab.wait_for(lambda c: c.review["cards"][0]["edit_error"], what="the check failed")
        assert tab.review["chips"][0] == ["edit: check failed", "open"] and tab.review["decided_count"] == 0
        await tab.call("ReviewState.save_edit", index=0, text=edited)
        await tab.wait_for(lambda c: c.review["cards"][0]["choice"] == "edit" and not c.review["cards"][0]["editing"],
                           what="the edit checked")
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: (c.review.get("cards") or [{}])[0].get("choice") == "edit", what="the edit kept")
        card = tab.review["cards"][0]
        assert not card["editing"] and "alice@example.com" in card["args_json"] and card["diff"]
        assert tab.review["chips"][0] == ["edit", "done"] and tab.review["decided_count"] == 1
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the run ends")
    [row] = app_db.audit_rows(server.data_dir, tid)
    assert row["decision_type"] == "edit" and '"alice@example.com"' in row["args_executed"]


async def test_cancel_on_a_reopened_checked_edit_keeps_that_edit(server):
    """QA (issue 21): a checked edit, Edit again, bad JSON typed, Cancel edit: the checked edit stands
    (it was dropped with the draft, the card undecided), also after a reload and in what is sent."""
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    to = f"bob-{tid[:8]}@example.com"
    checked = json.dumps({"to": to, "subject": "plans", "body": "the checked text"})
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send(f"email {to} about plans: hi")
        await tab.wait_review(1)
        await tab.call("ReviewState.save_edit", index=0, text=checked)
        await tab.wait_for(lambda c: c.review["cards"][0]["choice"] == "edit" and not c.review["cards"][0]["editing"],
                           what="the edit checked")
        await tab.call("ReviewState.choose", index=0, kind="edit")  # open it again
        await tab.wait_for(lambda c: c.review["cards"][0]["editing"], what="the editor open again")
        await tab.call("ReviewState.save_edit", index=0, text='{"to": ')
        await tab.wait_for(lambda c: c.review["cards"][0]["edit_error"], what="the bad JSON refused")
        await tab.call("ReviewState.cancel_edit", index=0)
        await tab.wait_for(lambda c: not c.review["cards"][0]["editing"], what="the editor closed")
        card = tab.review["cards"][0]
        assert card["choice"] == "edit" and "the checked text" in card["args_json"] and card["diff"]
        assert tab.review["decided_count"] == 1
    async with WsClient(server.url, browser_id=mo) as tab:  # a reload: the checked edit is kept
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: (c.review.get("cards") or [{}])[0].get("choice") == "edit", what="the edit kept")
        assert "the checked text" in tab.review["cards"][0]["args_json"]
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the run ends")
    [row] = app_db.audit_rows(server.data_dir, tid)
    assert row["decision_type"] == "edit" and "the checked text" in row["args_executed"]


async def test_a_write_file_preview_follows_the_checked_edit_also_after_a_reload(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    edited = '{"path": "notes/p.txt", "content": "edited content"}'

    def preview(c: WsClient) -> str:
        return (c.review.get("cards") or [{}])[0].get("preview_body", "")

    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("write notes/p.txt: pp")
        await tab.wait_review(1)
        await tab.wait_for(lambda c: "+pp" in preview(c), what="the proposed call's diff")
        await tab.call("ReviewState.save_edit", index=0, text=edited)
        await tab.wait_for(lambda c: "+edited content" in preview(c), what="the diff of the checked edit (before: +pp)")
        assert "+pp" not in preview(tab)
    async with WsClient(server.url, browser_id=mo) as tab:  # a reload shows the kept edit's diff
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: "+edited content" in preview(c), what="the kept edit's diff")
        await tab.call("ReviewState.choose", index=0, kind="approve")  # the edit dropped: the proposal's diff again
        await tab.wait_for(lambda c: "+pp" in preview(c), what="the proposed call's diff again")


async def test_reject_and_stop_picked_on_the_card_survives_a_reload_and_ends_the_run(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    to = f"bob-{tid[:8]}@example.com"  # this test's own address: the module's server has one outbox
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send(f"email {to} about plans: hi")
        [card] = await tab.wait_review(1)
        assert card["reject_stop"] is False  # the policy's default: reject and tell
        await tab.call("ReviewState.choose", index=0, kind="reject")
        await tab.call("ReviewState.set_reject_stop", index=0, stop=True)
        await tab.settle()
    async with WsClient(server.url, browser_id=mo) as tab:  # the reload
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: [x["choice"] for x in c.review.get("cards") or []] == ["reject"],
                           what="the kept reject shown again")
        assert tab.review["cards"][0]["reject_stop"] is True
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the run ends")
        last = [m for m in tab.chat["messages"] if m.get("role") == "assistant"][-1]
        assert last["text"].startswith("Stopped: the reviewer rejected send_email and stopped the run")
    assert to not in app_db.outbox(server.data_dir)
    assert [r["decision_type"] for r in app_db.audit_rows(server.data_dir, tid)] == ["reject"]


async def test_a_kept_choice_the_rights_refuse_is_not_shown(server):
    tid, may = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=may) as tab:
        await tab.load_thread(tid)
        await tab.send("pay 1500 to Bob")
        [card] = await tab.wait_review(1)
        assert card["allowed"] == ["reject"]  # a member's payment needs a reviewer
        interrupt_id, account = tab.review["interrupt_id"], str(tab.account_id)
    con = sqlite3.connect(server.data_dir / "hitl.sqlite", timeout=10)
    with con:
        con.execute(
            "INSERT INTO card_choices (thread_id, interrupt_id, action_index, account_id, choice, submitted, updated_at)"
            " VALUES (?, ?, 0, ?, ?, 0, '2026-01-01 00:00:00')",
            (tid, interrupt_id, account, json.dumps({"choice": "approve"})),
        )
    con.close()
    async with WsClient(server.url, browser_id=may) as tab:
        await tab.load_thread(tid)
        [card] = await tab.wait_review(1)
        await tab.settle()
        assert tab.review["cards"][0]["choice"] == ""
        assert tab.review["summary"] == "0 of 1 decided · 1 waiting for a reviewer"
        await tab.call("ReviewState.submit")  # nothing chosen: nothing is sent
        await tab.settle()
        assert tab.chat["status"] == "review"
    assert app_db.audit_rows(server.data_dir, tid) == [] and app_db.tool_effects(server.data_dir, "transfer_funds") == 0


@pytest.mark.slow
async def test_a_pick_survives_a_server_restart(tmp_path: Path):
    data, tid, mo = tmp_path / "app", str(uuid.uuid4()), str(uuid.uuid4())
    first = AppServer(data, frontend=False).start()
    try:
        async with WsClient(first.url, browser_id=mo) as tab:
            await tab.load_thread(tid)
            await tab.send("email bob@example.com about plans: hi and delete notes/old.txt")
            await tab.wait_review(2)
            await tab.call("ReviewState.choose", index=1, kind="reject")
            await tab.call("ReviewState.set_reason", index=1, text="keep it")
            await tab.settle()
    finally:
        first.stop(signal.SIGKILL)
    second = AppServer(data, frontend=False).start()
    try:
        async with WsClient(second.url, browser_id=mo) as tab:
            await tab.load_thread(tid)
            await tab.wait_for(lambda c: picks(c.review.get("cards") or [])[1:] == [("reject", "keep it", "")],
                               what="the pick back after the restart")
            assert picks(tab.review["cards"])[0] == ("", "", "")
    finally:
        second.stop()
