"""The decision API over real HTTP against the running app (``examples/policies/team.toml``), on SQLite
(one worker) and on PostgreSQL (two workers on Redis: the API call and the page's Submit may land on
different processes).

A member's payment card needs a reviewer. Each test makes its own thread through a tab (``WsClient``)
and personal tokens with the app's own function, then calls ``/api/v1`` with ``httpx``: rights as on
the page, stale arguments refused, an idempotent retry, bad tokens and bad bodies refused with a
problem document and nothing changed, the API and the page deciding at once decide once, the per-token
rate limit, the OpenAPI document.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from hitl_app.agent.payments import payments
from hitl_app.store.owners import owner_space
from tests.helpers import accounts
from tests.helpers.app_server import AppServer
from tests.helpers.paths import ROOT
from tests.helpers.postgres import fresh_database
from tests.helpers.redis_server import require_redis
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app
TEAM = ROOT / "examples" / "policies" / "team.toml"
PER_MINUTE = 40
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    data = tmp_path_factory.mktemp(f"api-{request.param}")
    env = {"HITL_POLICY": str(TEAM), "HITL_API_REQUESTS_PER_MINUTE": str(PER_MINUTE)}
    if request.param == "sqlite":
        with AppServer(data, env=env, frontend=False) as s:
            yield s
        return
    redis_url = require_redis().rsplit("/", 1)[0]
    with fresh_database() as url, AppServer(data, env={
        **env, "DATABASE_URL": url, "REFLEX_REDIS_URL": redis_url, "GUNICORN_CMD_ARGS": "--workers 2 --graceful-timeout 5",
    }, frontend=False) as s:
        yield s


def sql(server: AppServer, statement: str, **params: Any) -> list[tuple[Any, ...]]:
    """Rows of one statement on the server's database (SQLite or PostgreSQL); commits."""
    return accounts.run_sql(server.env, statement, **params)


async def token_for(server: AppServer, key: str, role: str, scopes: tuple[str, ...] = ("read", "decide")) -> str:
    who = await server.asign_in(key, role=role, name=key.title())
    return await accounts.make_api_token(server.env, who.account_id, scopes=scopes)


@pytest.fixture
async def api(server: AppServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        yield client


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


async def payment_review(owner: WsClient, amount: int = 500) -> str:
    """A new thread of ``owner`` waiting on one payment card; returns its id."""
    tid = str(uuid.uuid4())
    await owner.load_thread(tid)
    await owner.send(f"pay {amount} to Bob")
    await owner.wait_review(1)
    return tid


def decision(review: dict[str, Any], kind: str = "approve", **extra: Any) -> dict[str, Any]:
    card = review["cards"][0]
    return {"review_id": review["review_id"], "card": 0, "args_hash": card["args_hash"], "decision": {"type": kind}, **extra}


def paid(server: AppServer, tid: str) -> tuple[int, list[tuple[Any, ...]]]:
    """(payments the thread made, in its owner's ledger; its audit rows as (decision, reviewer id))."""
    [(owner,)] = sql(server, "SELECT owner FROM threads WHERE thread_id = :t", t=tid)
    ledger = owner_space(files_root=server.data_dir / "files", demo_db_path=server.data_dir / "demo_records.sqlite",
                         owner=owner).demo_db
    made = [p for p in payments(ledger) if p.tool_call_id.startswith(f"{tid}:")] if ledger.exists() else []
    return len(made), sql(server, "SELECT decision_type, reviewer_id FROM audit_records WHERE thread_id = :t", t=tid)


async def wait_paid(server: AppServer, tid: str, effects: int) -> tuple[int, list[tuple[Any, ...]]]:
    """``paid`` once ``effects`` payments are made (60 s at most: the resumed run pays)."""
    deadline = asyncio.get_running_loop().time() + 60
    while (now := await asyncio.to_thread(paid, server, tid))[0] < effects:
        assert asyncio.get_running_loop().time() < deadline, f"the payment was not made: {now}"
        await asyncio.sleep(0.2)
    return now


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM), response.headers
    body = response.json()
    assert body["status"] == status and body["code"] == code and body["detail"], body
    return body


async def test_a_token_has_its_owners_rights_and_a_retry_decides_once(server, api):
    member, rex = f"m-{uuid.uuid4().hex[:6]}", f"rex-{uuid.uuid4().hex[:6]}"
    await server.asign_in(member, role="member")
    member_token, rex_token = await token_for(server, member, "member"), await token_for(server, rex, "reviewer")
    async with WsClient(server.url, browser_id=member) as owner:
        tid = await payment_review(owner)
        before = 0
        waiting = (await api.get("/api/v1/reviews", headers=bearer(rex_token))).json()["items"]
        [item] = [i for i in waiting if i["thread_id"] == tid]
        assert item["tool"] == "transfer_funds" and item["args"] == {"amount": 500, "to": "Bob"}
        review = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))).json()
        assert review["cards"][0]["you_may"] == ["approve", "reject"] and review["cards"][0]["args_hash"] == item["args_hash"]
        # the page's warning travels too: the policy's risk badge and note (no MCP server behind this tool)
        card = review["cards"][0]
        assert (card["risk"], card["risk_note"]) == ("high", "Moves money out of the company account")
        assert (card["mcp_server"], card["hints"]) == ("", [])
        # the member's own token: exactly the member's rights, the page's sentence
        mine = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(member_token))).json()
        assert mine["cards"][0]["you_may"] == ["reject"]
        refused = await api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review), headers=bearer(member_token))
        assert "needs a reviewer; you are a member" in assert_problem(refused, 403, "forbidden")["detail"]
        keyed = bearer(rex_token, **{"Idempotency-Key": "pay-1"})
        first = await api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review), headers=keyed)
        assert first.status_code == 200 and first.json()["state"] == "resumed", first.text
        again = await api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review), headers=keyed)
        assert again.status_code == 200 and again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
        other = await api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review, "reject"),
                               headers=bearer(rex_token, **{"Idempotency-Key": "pay-1"}))
        assert_problem(other, 422, "idempotency_key_reused")
        after, rows = await wait_paid(server, tid, before + 1)
    assert after == before + 1 and rows == [("approve", str((await server.asign_in(rex)).account_id))]
    assert sql(server, "SELECT via FROM audit_records WHERE thread_id = :t", t=tid) == [("api",)]  # how it arrived
    gone = await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))
    assert_problem(gone, 404, "no_review")


async def test_stale_arguments_and_replaced_reviews_are_refused(server, api):
    rex_token = await token_for(server, f"rex-{uuid.uuid4().hex[:6]}", "reviewer")
    async with WsClient(server.url) as owner:
        tid = await payment_review(owner)
        review = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))).json()
        shown_other = {**decision(review), "args_hash": "0" * 64}
        body = assert_problem(await api.post(f"/api/v1/reviews/{tid}/decisions", json=shown_other, headers=bearer(rex_token)),
                              409, "stale_args")
        assert "read the review again" in body["detail"]
        old_review = {**decision(review), "review_id": uuid.uuid4().hex}
        replaced = await api.post(f"/api/v1/reviews/{tid}/decisions", json=old_review, headers=bearer(rex_token))
        assert_problem(replaced, 409, "stale")
        still = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))).json()
        assert still["review_id"] == review["review_id"] and still["cards"][0]["deciders"] == []
        assert owner.chat["status"] == "review"
    assert paid(server, tid)[1] == []


async def test_unknown_revoked_expired_and_narrow_tokens_are_refused(server, api):
    key = f"rex-{uuid.uuid4().hex[:6]}"
    reader = await token_for(server, key, "reviewer", scopes=("read",))
    assert (await api.get("/api/v1/reviews", headers=bearer(reader))).status_code == 200
    async with WsClient(server.url) as owner:
        tid = await payment_review(owner)
        review = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(reader))).json()
        decider = await token_for(server, key, "reviewer", scopes=("decide",))  # README: decide reads what read reads
        assert (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(decider))).json()["review_id"] == review["review_id"]
        assert (await api.get("/api/v1/reviews", headers=bearer(decider))).status_code == 200
        assert "decide scope" in assert_problem(
            await api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review), headers=bearer(reader)), 403, "scope"
        )["detail"]
        revoked, expired = await token_for(server, key, "reviewer"), await token_for(server, key, "reviewer")
        sql(server, "UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP WHERE token_hash = :h", h=_hash(revoked))
        sql(server, "UPDATE api_tokens SET expires_at = :t WHERE token_hash = :h", t="2020-01-01 00:00:00", h=_hash(expired))
        # the token has its owner's rights as they are now: demoted to member, the thread is not theirs to see
        demoted = await token_for(server, key, "reviewer")
        sql(server, "UPDATE accounts SET role = 'member' WHERE email = :e", e=accounts.email_for(key))
        refused = await api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review), headers=bearer(demoted))
        assert assert_problem(refused, 403, "forbidden")["detail"] == "This thread belongs to someone else."
        for token, words in ((revoked, "revoked"), (expired, "expired"), ("hitl_pat_" + "x" * 43, "not known"), ("", "Send")):
            answer = await api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review),
                                    headers=bearer(token) if token else {})
            assert words in assert_problem(answer, 401, "unauthorized")["detail"]
        assert owner.chat["status"] == "review"
    assert paid(server, tid)[1] == []


def _hash(token: str) -> str:
    from hitl_app.auth.tokens import hash_token

    return hash_token(token)


async def test_bad_json_huge_bodies_and_wrong_types_change_nothing(server, api):
    rex_token = await token_for(server, f"rex-{uuid.uuid4().hex[:6]}", "reviewer")
    async with WsClient(server.url) as owner:
        tid = await payment_review(owner)
        review = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))).json()
        url, json_type = f"/api/v1/reviews/{tid}/decisions", {"Content-Type": "application/json"}
        assert_problem(await api.post(url, content=b'{"review_id": ', headers=bearer(rex_token, **json_type)), 400, "bad_json")
        assert_problem(await api.post(url, content=b"[" * 70_000, headers=bearer(rex_token, **json_type)), 413, "too_large")

        async def chunked():  # no Content-Length: the cap counts the bytes as they come
            for _ in range(100):
                yield b" " * 1024

        assert_problem(await api.post(url, content=chunked(), headers=bearer(rex_token, **json_type)), 413, "too_large")
        for wrong in ({**decision(review), "card": "first"}, {**decision(review), "decision": {"type": "approve", "x": 1}},
                      {**decision(review), "decision": {"type": "delete"}}, {**decision(review), "card": -1}, {"card": 0},
                      {**decision(review), "extra": True}, {**decision(review), "args_hash": 5}):
            assert_problem(await api.post(url, json=wrong, headers=bearer(rex_token)), 422, "invalid")
        still = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))).json()
        assert still["cards"][0]["deciders"] == [] and owner.chat["status"] == "review"
    assert paid(server, tid)[1] == []


async def test_the_api_and_the_page_deciding_at_once_decide_once(server, api):
    rex = f"rex-{uuid.uuid4().hex[:6]}"
    rex_token = await token_for(server, rex, "reviewer")
    async with WsClient(server.url) as owner, WsClient(server.url, browser_id=rex) as page:
        tid = await payment_review(owner)
        before = 0
        review = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))).json()
        await page.load_thread(tid)
        await page.wait_review(1)
        await page.call("ReviewState.choose", index=0, kind="approve")
        await page.settle()
        answer, _ = await asyncio.gather(
            api.post(f"/api/v1/reviews/{tid}/decisions", json=decision(review), headers=bearer(rex_token)),
            page.call("ReviewState.submit"),
        )
        # the loser is told the review was already decided, by whom (never "belongs to someone else"); nothing runs twice
        if answer.status_code != 200:
            assert "already decided this review" in assert_problem(answer, 409, "already_decided")["detail"]
        await wait_paid(server, tid, before + 1)
        await page.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=60,
                            what="the run after the decision, on the page")
    effects, rows = paid(server, tid)
    assert effects == before + 1 and len(rows) == 1 and rows[0][0] == "approve"


async def test_each_token_has_its_own_rate_limit(server, api):
    key = f"rex-{uuid.uuid4().hex[:6]}"
    busy, calm = await token_for(server, key, "reviewer"), await token_for(server, key, "reviewer")
    answers = [await api.get("/api/v1/reviews?limit=1", headers=bearer(busy)) for _ in range(2 * PER_MINUTE + 1)]
    limited = [a for a in answers if a.status_code == 429]
    assert limited and sum(a.status_code == 200 for a in answers) >= PER_MINUTE
    assert int(assert_problem(limited[0], 429, "rate_limited") and limited[0].headers["retry-after"]) >= 1
    assert (await api.get("/api/v1/reviews?limit=1", headers=bearer(calm))).status_code == 200


async def test_unknown_routes_and_methods_are_problems_too(api):
    assert_problem(await api.get("/api/v1/nothing-here"), 404, "not_found")
    assert_problem(await api.put("/api/v1/reviews"), 405, "method_not_allowed")
    assert_problem(await api.delete(f"/api/v1/reviews/{uuid.uuid4()}/decisions"), 405, "method_not_allowed")


async def test_the_openapi_document_describes_the_routes(api):
    doc = (await api.get("/api/v1/openapi.json")).json()
    assert {"/api/v1/reviews", "/api/v1/reviews/{thread_id}", "/api/v1/reviews/{thread_id}/decisions"} <= set(doc["paths"])
    decide = doc["paths"]["/api/v1/reviews/{thread_id}/decisions"]["post"]
    assert "Idempotency-Key" in {p["name"] for p in decide["parameters"]} and "409" in decide["responses"]
    assert "DecisionIn" in doc["components"]["schemas"] and "HTTPBearer" in doc["components"]["securitySchemes"]


async def test_a_key_left_working_by_a_dead_worker_is_taken_over_and_a_fresh_one_is_not(server, api):
    rex_token = await token_for(server, f"rex-{uuid.uuid4().hex[:6]}", "reviewer")
    [(token_id,)] = sql(server, "SELECT id FROM api_tokens WHERE token_hash = :h", h=_hash(rex_token))
    for key, age in (("fresh", "2999-01-01 00:00:00"), ("abandoned", "2020-01-01 00:00:00")):
        sql(server, "INSERT INTO api_idempotency (token_id, key, request_hash, state, status, answer, created_at) "
                    "VALUES (:i, :k, :h, 'working', 0, '', :t)", i=token_id, k=key, h="0" * 64, t=age)
    async with WsClient(server.url) as owner:
        tid = await payment_review(owner)
        review = (await api.get(f"/api/v1/reviews/{tid}", headers=bearer(rex_token))).json()
        url = f"/api/v1/reviews/{tid}/decisions"
        busy = await api.post(url, json=decision(review), headers=bearer(rex_token, **{"Idempotency-Key": "fresh"}))
        assert_problem(busy, 422, "idempotency_key_reused")  # a young key of another request: never taken over
        taken = await api.post(url, json=decision(review), headers=bearer(rex_token, **{"Idempotency-Key": "abandoned"}))
        assert taken.status_code == 200 and taken.json()["state"] == "resumed", taken.text
        assert (await wait_paid(server, tid, 1))[1][0][0] == "approve"
