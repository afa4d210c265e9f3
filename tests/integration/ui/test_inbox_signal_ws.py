"""Issue 12, the inbox signal, on the real app (2 workers, Redis, PostgreSQL, a team policy) over
real websockets: a new review reaches the open inbox of a reviewer it may wait for, on another
worker than the run's; the open inbox of a member it cannot concern does not re-read at all (no
``InboxState.total`` in a delta, which every inbox read sets); a decided review still leaves the
reviewer's inbox (that announcement names nobody, so every inbox reads); a tab whose session was
signed out is sent to sign-in by the next review it may concern, and never shows that review.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import accounts
from tests.helpers.app_server import ROOT, AppServer
from tests.helpers.postgres import fresh_database
from tests.helpers.redis_server import require_redis
from tests.helpers.ws_client import WsClient

pytestmark = [pytest.mark.app, pytest.mark.postgres]

POLICY = """
[tools.send_email]
allowed_decisions = ["approve", "edit", "reject"]
description = "Send an email to {to}: {subject}"
reviewers = ["owner", "reviewer"]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    root = tmp_path_factory.mktemp("inbox-signal")
    (root / "policy.toml").write_text(POLICY)
    redis_url = require_redis().rsplit("/", 1)[0]
    with fresh_database() as url:
        env = {"DATABASE_URL": url, "REFLEX_REDIS_URL": redis_url, "HITL_POLICY": str(root / "policy.toml"),
               "GUNICORN_CMD_ARGS": "--workers 2 --graceful-timeout 5", "HITL_DEMO_WPS": "200",
               # no periodic re-read during a test: every read counted here is one an announcement caused
               "HITL_INBOX_REFRESH_S": "3600"}
        s = AppServer(root / "data", env=env, frontend=False)
        s.start()
        yield s
        s.stop()


def worker(c: WsClient) -> str:
    return str(c.chat.get("worker_pid", "")).split(":")[0]


def inbox_rows(c: WsClient, tid: str) -> list[dict[str, Any]]:
    return [r for r in c.state.get("InboxState", {}).get("rows") or [] if r["thread_id"] == tid]


def reads(c: WsClient) -> int:
    """Inbox reads shown to this tab: each read sets ``InboxState.total``, and Reflex sends every
    var set (equal or not) in the delta."""
    return sum(1 for state, var, _ in c.log if (state, var) == ("InboxState", "total"))


async def open_tab(server: AppServer, token: str, avoid: str = "", tries: int = 20) -> WsClient:
    """A tab of ``token`` on a thread page of its own (an inbox watcher runs there), on another
    worker than ``avoid`` (a pid; "" any)."""
    for _ in range(tries):
        tab = await WsClient(server.url, session=token).connect()
        await tab.load_thread(str(uuid.uuid4()))
        await tab.wait_for(lambda c: c.state.get("InboxState", {}).get("loaded") is True, what="inbox read")
        if worker(tab) != avoid:
            return tab
        await tab.close()
    raise AssertionError(f"every connection landed on worker {avoid}")


async def test_a_new_review_reaches_its_reviewer_on_another_worker_and_skips_a_member_it_cannot_concern(server):
    key = uuid.uuid4().hex[:8]
    rita = await server.asign_in("rita-" + key, role="reviewer", name="Rita")
    max_ = await server.asign_in("max-" + key, role="member", name="Max")
    mia = await server.asign_in("mia-" + key, role="member", name="Mia")
    asker = await open_tab(server, mia.token)
    reviewer = await open_tab(server, rita.token, avoid=worker(asker))
    bystanders = [await open_tab(server, max_.token, avoid=worker(asker)), await open_tab(server, max_.token)]
    try:
        await asyncio.sleep(1)  # the watchers wait on the signal
        before = [reads(t) for t in bystanders]
        reviewer_before = reads(reviewer)
        tid = str(uuid.uuid4())
        await asker.load_thread(tid)
        await asker.send("email bob@example.com about the report: ready")
        await asker.wait_review(1)
        [row] = await reviewer.wait_for(lambda c: inbox_rows(c, tid), timeout=30, what="the review in Rita's inbox")
        assert row["tool"] == "send_email" and row["asked_by"] == "Mia"
        assert worker(reviewer) != worker(asker) and reads(reviewer) > reviewer_before
        await asyncio.sleep(1.5)  # a read the member's watcher started would have arrived by now
        assert [reads(t) for t in bystanders] == before, "a member the review cannot concern re-read the inbox"

        await asker.call("ReviewState.choose", index=0, kind="approve")  # decided: it leaves her inbox
        await asker.call("ReviewState.submit")
        await reviewer.wait_for(lambda c: not inbox_rows(c, tid), timeout=30, what="the decided review left the inbox")
    finally:
        for tab in (asker, reviewer, *bystanders):
            await tab.close()


def redirected_to_sign_in(c: WsClient) -> bool:
    return any(e.get("name") == "_redirect" and (e.get("payload") or {}).get("path") == "/sign-in" for e in c.events)


async def test_a_signed_out_inbox_is_sent_to_sign_in_by_the_next_review_and_never_shows_it(server):
    key = uuid.uuid4().hex[:8]
    rita = await server.asign_in("rita-out-" + key, role="reviewer", name="Rita")
    mia = await server.asign_in("mia-out-" + key, role="member", name="Mia")
    asker = await open_tab(server, mia.token)
    reviewer = await open_tab(server, rita.token, avoid=worker(asker))
    try:
        await asyncio.sleep(1)  # the watchers wait on the signal
        # signed out elsewhere (e.g. "sign out everywhere" on her laptop): nothing is announced
        status, answer, _ = await asyncio.to_thread(
            accounts.post_json, f"{server.url}/auth/sign-out", {}, f"hitl_session={rita.token}")
        assert (status, answer) == (200, {"ok": True})
        tid = str(uuid.uuid4())
        await asker.load_thread(tid)
        await asker.send("email bob@example.com about the budget: draft")
        await asker.wait_review(1)
        # the review may concern Rita, so her watcher reads; the session check comes with that
        # read (not only with the periodic one, 30 s later), and the review is not shown
        await reviewer.wait_for(redirected_to_sign_in, timeout=15, what="Rita's signed-out tab sent to sign-in")
        assert not inbox_rows(reviewer, tid)
    finally:
        for tab in (asker, reviewer):
            await tab.close()


async def test_a_person_disabled_from_the_command_line_is_sent_to_sign_in_at_once(server):
    """``python -m hitl_app users disable`` runs in a process of its own: with Redis it tells the
    app's workers, and the person's open tab goes to the sign-in page saying why, with no click
    and long before the periodic re-read (3,600 s here). Before, the tab kept its inbox until the
    person's next action."""
    key = uuid.uuid4().hex[:8]
    pat = await server.asign_in("pat-cli-" + key, role="reviewer", name="Pat")
    tab = await open_tab(server, pat.token)
    try:
        proc = await asyncio.create_subprocess_exec(
            str(ROOT / ".venv/bin/python"), "-m", "hitl_app", "users", "disable", pat.email,
            env={**os.environ, **server.env}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        assert "open tabs told" in out.decode()
        await tab.wait_for(
            lambda c: any(e.get("name") == "_redirect" and (e.get("payload") or {}).get("path") == "/sign-in?error=was_disabled"
                          for e in c.events),
            timeout=30, what="Pat's tab sent to sign-in, told she was disabled",
        )
    finally:
        await tab.close()
