"""What else comes back of a person's cards until Submit, through the real websocket (prod app;
examples/policies/team.toml plus an undo window on ``slow_task``): the "always allow" scope beside
an approval, and an edit still open in the JSON editor.

* Mo approves his mail with "this tool in this thread": a new tab of his shows the approval with
  that scope (before: "just this once"), and its Submit makes that grant.
* Mo approves ``slow_task`` with "all my threads for 1 hour" and submits inside the undo window;
  a new tab's Undo puts the approval back with that scope, and the next Submit makes the grant.
* Mo types into the JSON editor of his mail without checking: a new tab shows the editor open on
  exactly that text, unchecked; after a Submit and Undo his new open draft comes back the same way.
* A kept scope the server no longer offers (a payment: ``grantable = false``) is not shown again,
  while the approval is.
* A save after Submit consumed the choices changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator

import pytest

from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient
from tests.integration.ui.test_card_choices_ws import DESK, POLICY

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    data = tmp_path_factory.mktemp("ws-kept-grants")
    policy = data / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    s = AppServer(data / "app", env={"HITL_POLICY": str(policy)}, frontend=False)
    s.start()
    yield s
    s.stop()


def rows(server: AppServer, statement: str, *params: object) -> list[tuple]:
    """Rows of ``statement`` on the server's database (``app_db.query``)."""
    return [tuple(r) for r in app_db.query(server.data_dir, statement, params)]


def grants_of(c: WsClient) -> list[str]:
    return list((c.state.get(DESK) or {}).get("grant_choice") or [])


def first(c: WsClient) -> dict:
    return (c.review.get("cards") or [{}])[0]


async def test_a_grant_scope_comes_back_in_a_new_tab_and_its_submit_makes_the_grant(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("email bob@example.com about plans: hi")
        await tab.wait_review(1)
        await tab.call("ReviewState.choose", index=0, kind="approve")
        await tab.call("ReviewState.set_grant", index=0, value="thread:24")
        await tab.wait_for(lambda c: grants_of(c) == ["thread:24"], what="the scope picked")
        await tab.settle()
    async with WsClient(server.url, browser_id=mo) as tab:  # a new tab, same account
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: first(c).get("choice") == "approve", what="the approval kept")
        await tab.wait_for(lambda c: grants_of(c) == ["thread:24"], what="the scope kept (before: none)")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the run ends")
    assert rows(server, "SELECT tool, scope FROM grants WHERE thread_id = ?", tid) == [("send_email", "thread")]


async def test_undo_puts_the_approval_back_with_its_grant_scope(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("wait 0 seconds")
        await tab.wait_review(1)
        await tab.call("ReviewState.choose", index=0, kind="approve")
        await tab.call("ReviewState.set_grant", index=0, value="person:1")
        await tab.wait_for(lambda c: grants_of(c) == ["person:1"], what="the scope picked")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("undo_ms", 0) > 0, what="the undo window")
        await tab.call("ReviewState.set_grant", index=0, value="thread:24")  # a late pick: the review is decided
        await tab.settle()
    assert rows(server, "SELECT choice, submitted FROM card_choices WHERE thread_id = ?", tid) == [
        (json.dumps({"choice": "approve", "grant": "person:1"}), 1)
    ], "consumed by the Submit, and not reopened by the late pick"
    async with WsClient(server.url, browser_id=mo) as tab:  # a new tab inside the window
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("undo_ms", 0) > 0, what="the undo window again")
        assert first(tab)["choice"] == ""  # nothing is put back on a decided review
        await tab.call("ReviewState.undo")
        await tab.wait_for(lambda c: c.state[DESK].get("undo_ms") == 0, what="undone")
        await tab.wait_for(lambda c: first(c).get("choice") == "approve", what="the approval back")
        await tab.wait_for(lambda c: grants_of(c) == ["person:1"], what="its scope back (before: none)")
        interrupt_id = tab.review["interrupt_id"]
        assert rows(server, "SELECT id FROM grants WHERE interrupt_id = ?", interrupt_id) == []  # the undo took it back
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("undo_ms", 0) > 0, what="the second undo window")
    assert rows(server, "SELECT tool, scope FROM grants WHERE interrupt_id = ?", interrupt_id) == [("slow_task", "person")]


async def test_the_editors_mode_comes_back_in_a_new_tab_before_anything_is_typed(server):
    """QA: an editor switched to JSON, nothing typed, came back in the form after a reload."""
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("email bob@example.com about modes: hi")
        await tab.wait_review(1)
        await tab.call("ReviewState.choose", index=0, kind="edit")
        await tab.wait_for(lambda c: first(c).get("editing") is True and first(c).get("mode") == "form", what="the form")
        await tab.call("ReviewState.set_edit_mode", index=0, mode="json")
        await tab.wait_for(lambda c: first(c).get("mode") == "json", what="the JSON editor")
        await tab.settle()
    async with WsClient(server.url, browser_id=mo) as tab:  # a new tab
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: first(c).get("editing") is True, what="the editor open again")
        assert first(tab)["mode"] == "json"


async def test_a_late_send_from_a_replaced_form_input_changes_nothing(server):
    """CI (e2e, under load): a form field's typing-pause send (800 ms) fired after the field was left,
    the editor switched to JSON and the text changed there, and put the old value back."""
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("email bob@example.com about late: hi")
        await tab.wait_review(1)
        await tab.call("ReviewState.choose", index=0, kind="edit")
        await tab.wait_for(lambda c: first(c).get("editing") is True, what="the form")
        drawn = first(tab)["revision"]
        await tab.call("ReviewState.set_field", index=0, path="to", value="carol@example.com", revision=drawn)  # on blur
        await tab.wait_for(lambda c: "carol@example.com" in first(c).get("draft_json", ""), what="Carol in")
        await tab.call("ReviewState.set_edit_mode", index=0, mode="json")
        dan = '{"to": "dan@example.com", "subject": "late", "body": "hi"}'
        await tab.call("ReviewState.set_json", index=0, text=dan)
        await tab.wait_for(lambda c: first(c).get("draft_json") == dan, what="Dan typed")
        await tab.call("ReviewState.set_edit_mode", index=0, mode="form")
        await tab.call("ReviewState.set_field", index=0, path="to", value="carol@example.com", revision=drawn)  # the late one
        await tab.settle()
        assert "dan@example.com" in first(tab)["draft_json"] and "carol" not in first(tab)["draft_json"]
        now = first(tab)["revision"]
        assert now != drawn
        await tab.call("ReviewState.set_field", index=0, path="to", value="eve@example.com", revision=now)  # the new inputs
        await tab.wait_for(lambda c: "eve@example.com" in first(c).get("draft_json", ""), what="a current send applies")


async def test_an_open_edit_comes_back_open_with_its_text_also_after_an_undo(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    typed = '{"to": "alice@example.com",\n "subject": "plans", "body": "draft one"}'
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.send("email bob@example.com about plans: hi and wait 0 seconds")
        await tab.wait_review(2)
        await tab.call("ReviewState.choose", index=0, kind="edit")
        await tab.call("ReviewState.set_edit_mode", index=0, mode="json")
        await tab.call("ReviewState.set_json", index=0, text=typed)  # what the editor sends once typing pauses
        await tab.wait_for(lambda c: first(c).get("draft_json") == typed, what="the draft typed")
        await tab.call("ReviewState.keep_draft", index=0)  # ... and once it paused 800 ms (or on blur)
        await tab.settle()
    async with WsClient(server.url, browser_id=mo) as tab:  # a new tab
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: first(c).get("editing") is True, what="the editor open again (before: closed)")
        card = first(tab)
        assert (card["choice"], card["mode"], card["draft_json"]) == ("edit", "json", typed)
        assert "alice@example.com" in json.dumps(card["diff"]) and not tab.review["all_decided"]  # not checked
        await tab.call("ReviewState.save_edit", index=0, text=typed)  # "Check edit"
        await tab.call("ReviewState.choose", index=1, kind="approve")
        await tab.wait_for(lambda c: c.review.get("all_decided"), what="both decided")
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: (c.state.get(DESK) or {}).get("undo_ms", 0) > 0, what="the undo window")
        await tab.call("ReviewState.undo")
        await tab.wait_for(lambda c: c.state[DESK].get("undo_ms") == 0, what="undone")
        await tab.wait_for(lambda c: first(c).get("choice") == "edit" and not first(c).get("editing"), what="the edit back")
        again = typed.replace("draft one", "draft two")
        await tab.call("ReviewState.choose", index=0, kind="edit")  # opened again after the Undo, and changed
        await tab.call("ReviewState.set_json", index=0, text=again)
        await tab.call("ReviewState.keep_draft", index=0)
        await tab.wait_for(lambda c: first(c).get("draft_json") == again, what="the new draft typed")
        await tab.settle()
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: first(c).get("editing") is True, what="the new draft open again")
        card = first(tab)
        assert (card["choice"], card["draft_json"]) == ("edit", again) and not tab.review["all_decided"]
        assert tab.review["cards"][1]["choice"] == "approve"


async def test_a_kept_scope_no_longer_offered_is_not_shown_again(server):
    tid, may, rex = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    signed = await server.asign_in(rex, role="reviewer", name="Rex")
    async with WsClient(server.url, browser_id=may) as tab:
        await tab.load_thread(tid)
        await tab.send("pay 500 to Bob")
        await tab.wait_review(1)
        interrupt_id = tab.review["interrupt_id"]
    con = sqlite3.connect(server.data_dir / "hitl.sqlite", timeout=10)
    with con:  # kept when payments were still grantable (or written as a forged one would be)
        con.execute(
            "INSERT INTO card_choices (thread_id, interrupt_id, action_index, account_id, choice, submitted, updated_at)"
            " VALUES (?, ?, 0, ?, ?, 0, '2026-01-01 00:00:00')",
            (tid, interrupt_id, str(signed.account_id), json.dumps({"choice": "approve", "grant": "thread:24"})),
        )
    con.close()
    async with WsClient(server.url, browser_id=rex) as tab:
        await tab.load_thread(tid)
        await tab.wait_for(lambda c: first(c).get("choice") == "approve", what="the approval kept")
        await tab.settle()
        assert grants_of(tab) == ["none"] and (tab.state[DESK].get("grant_options") or [[]])[0] == []
        await tab.call("ReviewState.submit")
        await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the payment runs")
    assert rows(server, "SELECT id FROM grants WHERE thread_id = ?", tid) == []
