"""The server is right when the browser is wrong: raw websocket events against the real app.

Each test drives the running app (prod mode, ``AppServer``) with ``WsClient``, a Socket.IO client
that speaks the same protocol as the page, and sends what a forged, stale, duplicated or broken
page could send. Every refusal must be visible (a message in the state the page renders), must run
nothing (outbox, files and audit rows unchanged) and must leave the review answerable: each test
ends by deciding the review correctly and checking that the right effect happened exactly once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from tests.helpers import app_db
from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import STATE_PATHS, WsClient

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app for this module (demo model without pacing) with its own data folder.

    ``delete_file`` allows only approve/reject (the default policy).
    """
    s = AppServer(tmp_path_factory.mktemp("ws-trust"), frontend=False)
    s.start()
    yield s
    s.stop()


def new_tid() -> str:
    return str(uuid.uuid4())


async def open_thread(server: AppServer, **kw) -> tuple[WsClient, str]:
    """A connected client on a fresh thread."""
    c = await WsClient(server.url, **kw).connect()
    tid = new_tid()
    await c.load_thread(tid)
    return c, tid


async def start_review(c: WsClient, text: str, n: int = 1) -> list[dict]:
    """Send ``text`` and wait for ``n`` approval cards."""
    await c.send(text)
    return await c.wait_review(n)


async def submit_and_finish(c: WsClient, timeout: float = 30) -> None:
    """Submit the cards as decided and wait until the resumed run wrote its tool rows."""
    before = sum(1 for m in c.chat.get("messages") or [] if m["role"] == "tool")
    await c.call("ReviewState.submit")
    await c.wait_for(
        lambda c: sum(1 for m in c.chat.get("messages") or [] if m["role"] == "tool") > before
        and c.chat.get("streaming") is False
        and c.chat.get("status") == "idle",
        timeout=timeout,
        what="resumed run finished",
    )


def test_state_paths_are_the_apps_state_names():
    from hitl_app.ui.state.chat import ChatState
    from hitl_app.ui.state.inbox import InboxState
    from hitl_app.ui.state.menu import MenuState
    from hitl_app.ui.state.review import ReviewState
    from hitl_app.ui.state.session import SessionState
    from hitl_app.ui.state.thread_list import ThreadListState

    for cls in (SessionState, ThreadListState, ChatState, ReviewState, MenuState, InboxState):
        assert STATE_PATHS[cls.__name__] == cls.get_full_name()


async def test_decision_type_the_policy_does_not_allow_is_refused(server: AppServer):
    c, tid = await open_thread(server)
    try:
        cards = await start_review(c, "delete notes/old.txt")
        target = app_db.sandbox(server.data_dir, str(c.account_id)) / "notes" / "old.txt"
        assert target.exists()
        assert cards[0]["allowed"] == ["approve", "reject"]

        await c.call("ReviewState.choose", index=0, kind="edit")
        await c.wait_for(lambda c: "Edit is not allowed for delete_file" in c.review["cards"][0]["error"])
        assert c.review["cards"][0]["choice"] == ""
        await c.call("ReviewState.choose", index=0, kind="respond")
        await c.wait_for(lambda c: "Respond is not allowed for delete_file" in c.review["cards"][0]["error"])
        # an edit sent straight to the editor's handler, bypassing the missing Edit button
        await c.call("ReviewState.save_edit", index=0, text='{"path": "notes/x.txt"}')
        await c.wait_for(lambda c: "Edit is not allowed" in c.review["cards"][0]["error"])
        assert c.review["cards"][0]["choice"] == ""
        # submitting with nothing decided is refused by the server (count check)
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: "0 of 1 decided" in c.review.get("review_error", ""))
        await c.settle()
        assert target.exists() and (target.parent / "x.txt").exists()
        assert app_db.audit_rows(server.data_dir, tid) == []
        assert c.chat["status"] == "review"

        # still answerable: reject works and the file stays
        await c.call("ReviewState.choose", index=0, kind="reject")
        await c.call("ReviewState.set_reason", index=0, text="not now")
        await submit_and_finish(c)
        tool = [m for m in c.chat["messages"] if m["role"] == "tool"]
        assert tool[-1]["outcome"] == "rejected"
        assert target.exists()
        rows = app_db.audit_rows(server.data_dir, tid)
        assert [(r["tool_name"], r["decision_type"], r["message"]) for r in rows] == [("delete_file", "reject", "not now")]
    finally:
        await c.close()


BAD_PAYLOADS = [
    ("ReviewState.choose", {"index": "zero", "kind": "approve"}),
    ("ReviewState.choose", {"index": 7, "kind": "approve"}),
    ("ReviewState.choose", {"index": -1, "kind": "approve"}),
    ("ReviewState.choose", {"index": True, "kind": "approve"}),
    ("ReviewState.choose", {"index": 0, "kind": "obliterate"}),
    ("ReviewState.choose", {"index": 0, "kind": ["approve"]}),
    ("ReviewState.choose", {"index": 0, "kind": None}),
    ("ReviewState.choose", {}),
    ("ReviewState.choose", {"index": 0}),
    ("ReviewState.save_edit", {"index": 0, "text": 123}),
    ("ReviewState.save_edit", {"index": 0, "text": None}),
    ("ReviewState.save_edit", {"index": {"a": 1}, "text": "{}"}),
    ("ReviewState.set_reason", {"index": 0, "text": ["x"]}),
    ("ReviewState.set_reason", {"index": 0, "text": "r" * 50_000}),
    ("ReviewState.set_answer", {"index": 0, "text": {"x": 1}}),
    ("ReviewState.cancel_edit", {"index": "0; drop"}),
    ("ReviewState.setvar", {"var_name": "interrupt_id", "value": "forged"}),
    ("ReviewState.setvar", {"var_name": "cards", "value": []}),
    ("ChatState.setvar", {"var_name": "tid", "value": str(uuid.uuid4())}),
    ("ReviewState.show", {"review": {"interrupt_id": "forged"}}),
    ("ReviewState._show", {"review": None}),
    ("ReviewState.nonexistent_handler", {}),
    ("ChatState.send", {"form_data": "not a dict"}),
    ("ChatState.send", {"form_data": {"__reflex_form_data__": [["text", 5]]}}),
    ("ChatState.send", {"form_data": {"__reflex_form_data__": [["text", "x" * 1_100_000]]}}),
    ("ChatState.send", {}),
    ("SessionState.save_reviewer", {"form_data": {"__reflex_form_data__": [["reviewer", "x" * 5000]]}}),
]


async def test_malformed_payloads_change_nothing_and_the_review_stays_answerable(server: AppServer):
    c, tid = await open_thread(server)
    try:
        await start_review(c, "email bob@example.com about lunch: at noon")
        interrupt_id = c.review["interrupt_id"]
        for handler, payload in BAD_PAYLOADS:
            await c.call(handler, **payload)
        # messages that are not events at all
        for raw in ("garbage", 42, None, {"name": 5}, {"payload": {}}, {"name": "x" * 10_000, "payload": []}):
            await c.emit_raw(raw)
        await c.call("ChatState.send", form_data={"__reflex_form_data__": [["text", "actually never mind"]]})
        await c.wait_for(lambda c: "Decide the pending review first" in c.chat.get("composer_error", ""))
        await c.settle()

        assert c.connected, "the server dropped the websocket"
        cards = c.review["cards"]
        assert len(cards) == 1 and cards[0]["tool_name"] == "send_email"
        assert cards[0]["choice"] in ("", "approve") and cards[0]["reason"] == ""
        assert c.review["interrupt_id"] == interrupt_id
        assert c.chat["tid"] == tid and c.chat["status"] == "review"
        assert c.session.get("reviewer", "") == ""
        assert app_db.outbox(server.data_dir).count("bob@example.com") == 0
        assert app_db.audit_rows(server.data_dir, tid) == []

        await c.call("ReviewState.choose", index=0, kind="approve")
        await submit_and_finish(c)
        assert app_db.outbox(server.data_dir).count("bob@example.com") == 1
        assert len(app_db.audit_rows(server.data_dir, tid)) == 1
    finally:
        await c.close()


async def test_edit_with_arguments_that_fail_the_schema_is_refused(server: AppServer):
    c, tid = await open_thread(server)
    try:
        await start_review(c, "email dave@example.com about plans: soon")
        await c.call("ReviewState.choose", index=0, kind="edit")
        cases = [
            ('{"to": 5, "subject": "s", "body": "b"}', "`to` must be a string"),
            ('{"subject": "s", "body": "b"}', "`to` is required"),
            ('{"to": "a@example.com", "subject": "s", "body": "b", "bcc": "x@example.com"}', "unknown field `bcc`"),
            ('{"to": "a@', "Not valid JSON"),
            ("[1, 2]", "must be a JSON object"),
            ('{"to": "' + "a" * 1_200_000 + '"}', "too large"),
        ]
        for text, expected in cases:
            await c.call("ReviewState.save_edit", index=0, text=text)
            await c.wait_for(lambda c, e=expected: e in c.review["cards"][0]["edit_error"], what=expected)
            assert c.review["cards"][0]["editing"] is True
        # a submit while the edit is invalid sends nothing
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: "0 of 1 decided" in c.review.get("review_error", ""))
        assert app_db.outbox(server.data_dir).count("dave@example.com") == 0
        assert app_db.audit_rows(server.data_dir, tid) == []
        assert c.connected

        await c.call("ReviewState.save_edit", index=0, text='{"to": "erin@example.com", "subject": "plans", "body": "soon"}')
        await c.wait_for(lambda c: c.review["cards"][0]["choice"] == "edit" and not c.review["cards"][0]["editing"])
        await submit_and_finish(c)
        box = app_db.outbox(server.data_dir)
        assert box.count("erin@example.com") == 1 and "dave@example.com" not in box
        (row,) = app_db.audit_rows(server.data_dir, tid)
        assert row["decision_type"] == "edit"
    finally:
        await c.close()


async def test_too_few_decisions_are_refused_and_nothing_runs(server: AppServer):
    c, tid = await open_thread(server)
    try:
        await start_review(c, "email fay@example.com about a: b and email gus@example.com about c: d", n=2)
        await c.call("ReviewState.choose", index=1, kind="approve")
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: "1 of 2 decided" in c.review.get("review_error", ""))
        await c.settle()
        box = app_db.outbox(server.data_dir)
        assert "fay@example.com" not in box and "gus@example.com" not in box
        assert app_db.audit_rows(server.data_dir, tid) == []

        await c.call("ReviewState.choose", index=0, kind="reject")
        await submit_and_finish(c)
        box = app_db.outbox(server.data_dir)
        assert box.count("gus@example.com") == 1 and "fay@example.com" not in box
        rows = app_db.audit_rows(server.data_dir, tid)
        assert [(r["action_index"], r["decision_type"]) for r in rows] == [(0, "reject"), (1, "approve")]
    finally:
        await c.close()


async def test_stale_review_from_a_second_tab_gets_already_decided(server: AppServer):
    bid = str(uuid.uuid4())
    a, tid = await open_thread(server, browser_id=bid)
    b = await WsClient(server.url, browser_id=bid).connect()
    try:
        await start_review(a, "email hal@example.com about x: y")
        await b.load_thread(tid)
        await b.wait_review(1)
        await a.call("ReviewState.choose", index=0, kind="approve")
        await submit_and_finish(a)
        await asyncio.sleep(0.3)
        # tab B still shows the old card (its watcher may have refreshed it; decide on what it has)
        await b.call("ReviewState.choose", index=0, kind="approve")
        await b.call("ReviewState.submit")
        await b.wait_for(
            lambda c: "already decided" in c.review.get("review_error", "") or (
                not c.review.get("cards") and c.chat.get("status") == "idle"
            ),
            what="stale submission refused / card refreshed",
        )
        await b.settle()
        assert not b.review.get("cards"), "the stale card must be replaced by the thread's real state"
        assert app_db.outbox(server.data_dir).count("hal@example.com") == 1
        assert len(app_db.audit_rows(server.data_dir, tid)) == 1
    finally:
        await a.close()
        await b.close()


async def test_two_tabs_submitting_at_once_resume_exactly_once(server: AppServer):
    bid = str(uuid.uuid4())
    a, tid = await open_thread(server, browser_id=bid)
    b = await WsClient(server.url, browser_id=bid, reviewer="Bea").connect()
    try:
        await start_review(a, "email ivy@example.com about race: one of us wins")
        await b.load_thread(tid)
        await b.wait_review(1)
        await asyncio.gather(
            a.call("ReviewState.choose", index=0, kind="approve"), b.call("ReviewState.choose", index=0, kind="approve")
        )
        await asyncio.gather(
            a.wait_for(lambda c: c.review["cards"][0]["choice"] == "approve"),
            b.wait_for(lambda c: c.review["cards"][0]["choice"] == "approve")
        )
        await asyncio.gather(a.call("ReviewState.submit"), b.call("ReviewState.submit"))
        await asyncio.gather(
            a.wait_for(
                lambda c: any(
                    m["role"] == "tool" for m in c.chat.get("messages") or []
                ) and c.chat.get("status") == "idle" and not c.chat.get("streaming")
            ),
            b.wait_for(
                lambda c: any(
                    m["role"] == "tool" for m in c.chat.get("messages") or []
                ) and c.chat.get("status") == "idle" and not c.chat.get("streaming")
            ),
        )
        errors = [x.review.get("review_error", "") for x in (a, b)]
        assert sum("already decided" in e for e in errors) == 1, errors
        assert app_db.outbox(server.data_dir).count("ivy@example.com") == 1
        assert app_db.tool_effects(server.data_dir, "send_email") == len(app_db.outbox(server.data_dir))
        assert len(app_db.audit_rows(server.data_dir, tid)) == 1
    finally:
        await a.close()
        await b.close()


async def test_double_submit_from_one_tab_runs_the_tool_once(server: AppServer):
    c, tid = await open_thread(server)
    try:
        await start_review(c, "email jo@example.com about twice: click")
        await c.call("ReviewState.choose", index=0, kind="approve")
        await c.wait_for(lambda c: c.review["cards"][0]["choice"] == "approve")
        # double click + a retried websocket message
        for _ in range(3):
            await c.call("ReviewState.submit")
        # the extra clicks resume nothing (a click while the first submission runs says nothing;
        # one after it ended says the review was already decided)
        await c.wait_for(
            lambda c: any(
                m["role"] == "tool" for m in c.chat.get("messages") or []
            ) and c.chat.get("status") == "idle" and not c.chat.get("streaming")
        )
        await c.settle()
        assert app_db.outbox(server.data_dir).count("jo@example.com") == 1
        assert len(app_db.audit_rows(server.data_dir, tid)) == 1
    finally:
        await c.close()


async def test_thread_of_another_browser_is_refused(server: AppServer):
    owner, tid = await open_thread(server)
    intruder = await WsClient(server.url).connect()  # another browser id
    try:
        await start_review(owner, "email kim@example.com about secret: plans")
        await intruder.load_thread(tid)
        assert intruder.chat.get("load_error") == "This thread belongs to someone else."
        assert not intruder.review.get("cards") and not intruder.chat.get("messages")
        assert intruder.chat.get("tid") == ""
        # acting on it anyway: nothing happens to the owner's thread
        await intruder.send("hello")
        await intruder.call("ChatState.continue_run")
        await intruder.call("ChatState.stop")
        await intruder.call("ChatState.watch")
        await intruder.call("ReviewState.choose", index=0, kind="approve")
        await intruder.call("ReviewState.submit")
        await intruder.call("ReviewState.approve_all")
        await intruder.settle()
        assert intruder.connected
        assert not intruder.chat.get("messages")
        assert app_db.audit_rows(server.data_dir, tid) == []
        assert "kim@example.com" not in app_db.outbox(server.data_dir)

        # the owner's review is untouched and answerable
        await owner.call("ReviewState.choose", index=0, kind="approve")
        await submit_and_finish(owner)
        assert app_db.outbox(server.data_dir).count("kim@example.com") == 1
        await intruder.settle()
        assert not any("kim@example.com" in str(v) for v in intruder.chat.values()), "owner's text leaked to another browser"
    finally:
        await owner.close()
        await intruder.close()


async def test_second_send_while_a_run_streams_is_refused_visibly(server: AppServer):
    c, tid = await open_thread(server)
    try:
        await start_review(c, "wait 3 seconds")
        await c.call("ReviewState.choose", index=0, kind="approve")
        await c.call("ReviewState.submit")
        await c.wait_for(lambda c: c.chat.get("streaming") is True)
        await c.send("email lou@example.com about interleave: no")
        await c.wait_for(lambda c: "The agent is still answering" in c.chat.get("composer_error", ""))
        await c.call("ChatState.continue_run")
        await c.wait_for(lambda c: "still answering" in c.chat.get("run_error", ""))
        await c.wait_for(
            lambda c: any(
                m["role"] == "tool" for m in c.chat.get("messages") or []
            ) and c.chat.get("status") == "idle" and not c.chat.get("streaming"),
            timeout=30
        )
        texts = [m["text"] for m in c.chat["messages"] if m["role"] == "user"]
        assert texts == ["wait 3 seconds"], "the refused message must not be in the thread"
        assert "lou@example.com" not in app_db.outbox(server.data_dir)
        # the thread is usable afterwards
        await c.send("stream 5 words")
        await c.wait_for(
            lambda c: [
                m["role"] for m in c.chat.get("messages") or []
            ].count("user") == 2 and c.chat.get("status") == "idle" and not c.chat.get("streaming")
        )
    finally:
        await c.close()


async def test_reconnect_with_same_token_finds_the_thread_and_pending_review(server: AppServer):
    bid = str(uuid.uuid4())
    c, tid = await open_thread(server, browser_id=bid)
    token = c.token
    await start_review(c, "email max@example.com about reconnect: fine")
    interrupt_id = c.review["interrupt_id"]
    await c.close()
    await asyncio.sleep(3)  # the page is offline for a few seconds
    c2 = await WsClient(server.url, token=token, browser_id=bid).connect()
    try:
        await c2.load_thread(tid)
        cards = await c2.wait_review(1)
        assert cards[0]["tool_name"] == "send_email"
        assert c2.review["interrupt_id"] == interrupt_id
        await c2.call("ReviewState.choose", index=0, kind="approve")
        await submit_and_finish(c2)
        assert app_db.outbox(server.data_dir).count("max@example.com") == 1
    finally:
        await c2.close()


@pytest.mark.parametrize(
    "stored",
    ['=HYPERLINK("http://x.example","y")\n2099-01-01 INFO forged line ' + "x" * 3000, 5, ["Dana"], "\u202eanaD"],
    ids=["long-multiline-formula", "number", "list", "bidi"],
)
async def test_a_forged_stored_reviewer_name_is_checked_like_a_typed_one(server: AppServer, stored):
    """Review M7: a reviewer name arrives from the page's storage at hydration. Whatever the page
    sends, deciding works and the audit trail names the signed-in account (its display name, set
    by the server), never the forged text."""
    c = WsClient(server.url)
    c.reviewer = stored  # what a forged page puts in localStorage / the hydrate event
    await c.connect()
    tid = new_tid()
    to = f"ivy-{tid[:8]}@example.com"
    try:
        await c.load_thread(tid)
        await start_review(c, f"email {to} about names: checked")
        await c.call("ReviewState.choose", index=0, kind="approve")
        await submit_and_finish(c)
        [row] = app_db.audit_rows(server.data_dir, tid)
        assert row["reviewer"] == f"Tester {c.browser_id[:6]}" and row["reviewer_id"] == str(c.account_id)
        assert app_db.outbox(server.data_dir).count(to) == 1
    finally:
        await c.close()


async def test_oversized_stored_identity_is_not_kept_in_the_tab_state(server: AppServer):
    """Security review F10: the page's storage values arrive at hydration from any socket, signed
    in or not. A 2 MB "browser id" and a 100 kB reviewer name are not kept in the tab's state
    (so not in memory, not in the saved states, not echoed back): the id becomes a fresh UUID, the
    name anonymous, and the tab still works."""
    c = WsClient(server.url, session="", browser_id="b" * 2_000_000, reviewer="r" * 100_000)
    await c.connect()
    try:
        await c.hydrate("/sign-in")
        await c.round_trip()
        stored = c.session
        assert len(str(stored.get("browser_id", ""))) <= 36, len(str(stored.get("browser_id", "")))
        assert len(str(stored.get("reviewer", ""))) <= 40, len(str(stored.get("reviewer", "")))
        assert c.connected
    finally:
        await c.close()
