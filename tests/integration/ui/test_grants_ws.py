"""Grants through the real websocket, on SQLite and PostgreSQL (the prod app, as tabs drive it).

1. Team policy (built-in agent): Mo approves his email with "this tool in this thread" while the
   delete in the same batch waits for a reviewer. His grant is saved with his Submit (before: only
   when the last card was decided, so it was lost here); Rita's decision later does not add one,
   and Mo's next mail in the thread runs without a card.
2. ``HITL_AGENT=tests.fixtures.grants_agent:make_agent`` (a developer's agent, no ``GrantGate``):
   after a thread grant on ``refund_payment``, the next refund runs without a card, "approved by
   grant: ..." under it (before: a card every time); a batch of a refund and a close shows the
   refund's card decided by the grant, not editable, and the close waits for the person.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from hitl_app.store.db import make_engines
from tests.fixtures.grants_agent import effects
from tests.helpers import accounts
from tests.helpers.app_server import AppServer
from tests.helpers.paths import ROOT
from tests.helpers.postgres import fresh_database
from tests.helpers.ws_client import SESSION, WsClient

pytestmark = pytest.mark.app
TEAM = ROOT / "examples" / "policies" / "team.toml"
DESK = f"{SESSION}.hitl_app___ui___state___desk____desk_state"
"""``DeskState``'s full name (the grant choice per card)."""


def start(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Iterator[AppServer]:
    data = tmp_path_factory.mktemp(f"grants-ws-{request.param}")
    if request.param == "sqlite":
        with AppServer(data, env=env, frontend=False) as s:
            yield s
        return
    with fresh_database() as url, AppServer(data, env={**env, "DATABASE_URL": url}, frontend=False) as s:
        yield s


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def team_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    yield from start(request, tmp_path_factory, {"HITL_POLICY": str(TEAM)})


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def agent_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    yield from start(request, tmp_path_factory, {"HITL_AGENT": "tests.fixtures.grants_agent:make_agent"})


def sql(server: AppServer, statement: str, **params) -> list[tuple]:
    """Rows of one SELECT on the server's database (SQLite or PostgreSQL)."""
    engines = make_engines(accounts.database_url(server.env))
    try:
        with engines.sync.begin() as conn:
            return [tuple(r) for r in conn.execute(text(statement), params)]
    finally:
        engines.sync.dispose()
        engines.async_.sync_engine.dispose()


async def approve_with_thread_grant(tab: WsClient, index: int, n: int) -> None:
    """Choose approve on card ``index`` of ``n`` with "this tool in this thread (1 day)"."""
    await tab.call("ReviewState.choose", index=index, kind="approve")
    await tab.call("ReviewState.set_grant", index=index, value="thread:24")
    want = ["thread:24" if i == index else "none" for i in range(n)]
    await tab.wait_for(lambda c: c.state.get(DESK, {}).get("grant_choice") == want, what="the grant chosen")


def tool_rows(tab: WsClient) -> list[dict]:
    return [m for m in tab.chat.get("messages") or [] if m.get("role") == "tool"]


async def test_a_grant_is_saved_with_a_partial_submit_and_covers_the_next_call(team_server):
    server, tid = team_server, str(uuid.uuid4())
    rita = await server.asign_in("rita-" + tid, role="reviewer", name="Rita")
    async with WsClient(server.url) as mo:
        await mo.load_thread(tid)
        await mo.send("email bob@example.com about grants: hi and delete notes.txt")
        cards = await mo.wait_review(2)
        assert [c["standing"] for c in cards] == ["open", "waiting"]
        await approve_with_thread_grant(mo, 0, 2)
        await mo.call("ReviewState.submit")
        await mo.wait_for(lambda c: [x["standing"] for x in c.review["cards"]] == ["complete", "waiting"],
                          what="Mo's card decided, the delete waiting")
        assert sql(server, "SELECT tool, scope, uses FROM grants") == [("send_email", "thread", 0)], (
            "the grant is saved with Mo's approval, while the review still waits for a reviewer"
        )
        async with WsClient(server.url, session=rita.token) as tab:
            await tab.load_thread(tid)
            await tab.wait_review(2)
            await tab.call("ReviewState.choose", index=1, kind="reject")
            await tab.wait_for(lambda c: c.review.get("all_decided"), what="Rita's card chosen")
            await tab.call("ReviewState.submit")
            await tab.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                               what="the run ends")
        await mo.wait_for(lambda c: c.chat.get("status") == "idle" and not c.review.get("cards"), timeout=30,
                          what="Mo sees the run end")
        assert len(sql(server, "SELECT id FROM grants")) == 1
        mark = mo.mark()
        await mo.send("email carol@example.com about again: covered")
        await mo.wait_for(lambda c: c.seen_since(mark, "ChatState", "status", lambda s: s == "running"), what="run")
        await mo.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming")
                          and len(tool_rows(c)) == 3, timeout=30, what="the covered mail sent")
        assert not mo.seen_since(mark, "ReviewState", "cards", lambda cards: bool(cards)), "no card for a covered call"
        assert tool_rows(mo)[-1]["audit"].startswith("approved by grant: this tool in this thread, by ")
    assert sql(server, "SELECT uses FROM grants") == [(1,)]


async def test_grants_cover_a_developers_agent_wholly_or_card_by_card(agent_server):
    server, tid = agent_server, str(uuid.uuid4())
    async with WsClient(server.url) as mia:
        await mia.load_thread(tid)
        await mia.send("refund A-1 5")
        await mia.wait_review(1)
        await approve_with_thread_grant(mia, 0, 1)
        await mia.call("ReviewState.submit")
        await mia.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=30,
                           what="the first refund runs")
        # wholly covered: no card, the run goes on at once, the grant named under the call
        mark = mia.mark()
        await mia.send("refund A-2 6")
        await mia.wait_for(lambda c: c.seen_since(mark, "ChatState", "status", lambda s: s == "running"), what="run")
        await mia.wait_for(lambda c: c.chat.get("status") in ("idle", "review") and not c.chat.get("streaming")
                           and len(tool_rows(c)) == 2, timeout=30, what="the covered refund ran")
        assert not mia.seen_since(mark, "ReviewState", "cards", lambda cards: bool(cards)), "no card for a covered call"
        assert mia.chat["status"] == "idle"
        assert tool_rows(mia)[-1]["audit"].startswith("approved by grant: this tool in this thread, by ")
        # partly covered: the refund's card is decided by the grant, the close waits for Mia
        await mia.send("refund A-3 1; close T-1")
        cards = await mia.wait_review(2)
        assert [c["standing"] for c in cards] == ["complete", "open"]
        assert cards[0]["progress"].startswith("Approved by grant: this tool in this thread, by ")
        assert cards[0]["allowed"] == [] and cards[1]["allowed"] == ["approve", "reject"]
        assert mia.review["submit_label"] == "Submit"  # nothing chosen yet
        await mia.call("ReviewState.choose", index=1, kind="approve")
        await mia.wait_for(lambda c: c.review.get("all_decided"), what="the close chosen")
        await mia.call("ReviewState.submit")
        await mia.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming")
                           and len(tool_rows(c)) == 4, timeout=30, what="the batch ran")
    ran = effects(server.data_dir)
    assert sorted((e["tool"], e.get("order_id") or e.get("ticket_id")) for e in ran) == [
        ("close_ticket", "T-1"), ("refund_payment", "A-1"), ("refund_payment", "A-2"), ("refund_payment", "A-3")
    ]
    assert len({e["call_id"] for e in ran}) == 4, "each call ran once"
    assert sql(server, "SELECT uses FROM grants") == [(2,)]
    via = sql(server, "SELECT tool_name, via FROM audit_records WHERE thread_id = :t ORDER BY id", t=tid)
    assert [(name, (v or "").split(":")[0]) for name, v in via] == [
        ("refund_payment", "page"), ("refund_payment", "grant"), ("refund_payment", "grant"), ("close_ticket", "page")
    ]  # a person's decision says the door it came through (page); a grant's says which grant
