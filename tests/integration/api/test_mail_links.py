"""Deciding from a reminder mail, against the running app (``examples/policies/team.toml``, on SQLite and
on PostgreSQL) and a real SMTP server on loopback (aiosmtpd).

A member asks to delete a file (a reviewer's card, not high-risk): the reviewer's reminder mail
carries one-time approve and reject links. Opening a link (as a mail scanner does, no cookie) only
shows a confirmation page and uses nothing; a confirming post signed out, or signed in as someone
else (a forwarded mail), is refused; the reviewer's own post decides once, through the page's door
(the audit row names them); the same link again, the other link after the decision, and an expired
link are refused. A payment card (high-risk) gets no decision links, only the link to the card.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.helpers.accounts import PASSWORD, run_sql
from tests.helpers.app_server import AppServer, free_port
from tests.helpers.paths import ROOT
from tests.helpers.postgres import fresh_database
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app
TEAM = ROOT / "examples" / "policies" / "team.toml"
LINK = re.compile(r"(?P<kind>Approve|Reject) \(asks you to confirm; works once\): (?P<url>http://\S+/mail/[A-Za-z0-9_-]+)")


class Collect:
    """aiosmtpd handler keeping every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content)))
        return "250 OK"


@pytest.fixture(scope="module")
def smtp() -> Iterator[tuple[Collect, int]]:
    handler, port = Collect(), free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, smtp: tuple[Collect, int]
           ) -> Iterator[AppServer]:
    port = free_port()
    env = {"HITL_POLICY": str(TEAM), "HITL_SMTP_HOST": "127.0.0.1", "HITL_SMTP_PORT": str(smtp[1]),
           "HITL_SMTP_FROM": "hitl@example.com", "HITL_REVIEW_REMINDER_MINUTES": "0.01",
           "HITL_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    data = tmp_path_factory.mktemp(f"mail-links-{request.param}")
    if request.param == "sqlite":
        with AppServer(data, env=env, port=port, frontend=False) as s:
            yield s
        return
    with fresh_database() as url, AppServer(data, env={**env, "DATABASE_URL": url}, port=port, frontend=False) as s:
        yield s


async def mail_to(smtp: tuple[Collect, int], email: str, thread_id: str) -> str:
    """The body of the reminder mail to ``email`` about ``thread_id`` (waits up to 60 s for the sweep)."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        for to, message in smtp[0].messages:
            body = message.get_payload(decode=True).decode()  # type: ignore[union-attr]
            if email in to and f"/thread/{thread_id}" in body:
                return body
        assert asyncio.get_running_loop().time() < deadline, f"no reminder to {email} about {thread_id}"
        await asyncio.sleep(0.5)


def links(body: str) -> dict[str, str]:
    return {m["kind"].lower(): m["url"] for m in LINK.finditer(body)}


async def test_a_mail_link_decides_once_for_its_reviewer_only(server: AppServer, smtp):
    rex = await server.asign_in(f"rex-{uuid.uuid4().hex[:6]}", role="reviewer", name="Rex Mail")
    rita = await server.asign_in(f"rita-{uuid.uuid4().hex[:6]}", role="reviewer", name="Rita Mail")
    async with WsClient(server.url) as owner, httpx.AsyncClient(timeout=60) as web:
        tid = str(uuid.uuid4())
        await owner.load_thread(tid)
        await owner.send("delete notes/old.txt")
        await owner.wait_review(1)
        mailed = links(await mail_to(smtp, rex.email, tid))
        assert set(mailed) == {"approve", "reject"}, mailed
        approve = mailed["approve"]
        # a scanner opens every link: a page that asks, nothing used, nothing decided
        for url in (approve, mailed["reject"], approve):
            page = await web.get(url)
            assert page.status_code == 200 and "Nothing is decided until you press the button" in page.text
        assert "notes/old.txt" in page.text and "delete_file" in page.text
        same_site = {"Origin": server.url}
        signed_out = await web.post(approve, headers=same_site)
        assert signed_out.status_code == 401 and 'name="next" value="/mail/' in signed_out.text
        path = "/mail/" + approve.rsplit("/mail/", 1)[1]  # its sign-in form comes back to the link's page
        back = await web.post(f"{server.url}/auth/sign-in", data={"email": rex.email, "password": PASSWORD, "next": path},
                              headers=same_site)
        assert back.status_code == 303 and back.headers["location"] == path
        forwarded = await web.post(approve, headers={**same_site, "Cookie": f"hitl_session={rita.token}"})
        assert forwarded.status_code == 403 and "sent to someone else" in forwarded.text
        cross_site = await web.post(approve, headers={"Origin": "http://evil.example", "Cookie": f"hitl_session={rex.token}"})
        assert cross_site.status_code == 403
        await owner.settle()
        assert owner.chat["status"] == "review"
        decided = await web.post(approve, headers={**same_site, "Cookie": f"hitl_session={rex.token}"})
        assert decided.status_code == 200 and "Approved: delete_file. The agent goes on." in decided.text, decided.text
        await owner.wait_for(lambda c: c.chat.get("status") == "idle" and not c.chat.get("streaming"), timeout=60,
                             what="the run after the mail decision")
        again = await web.post(approve, headers={**same_site, "Cookie": f"hitl_session={rex.token}"})
        assert again.status_code == 410 and "already used or has expired" in again.text
        late = await web.get(mailed["reject"])
        assert late.status_code == 409 and "no longer works" in late.text
    assert run_sql(server.env, "SELECT decision_type, reviewer_id, via FROM audit_records WHERE thread_id = :t", t=tid) == [
        ("approve", str(rex.account_id), "mail")  # the audit says how it arrived
    ]


async def test_high_risk_cards_only_link_to_the_card_and_expired_links_are_refused(server: AppServer, smtp):
    rex = await server.asign_in(f"rex-{uuid.uuid4().hex[:6]}", role="reviewer", name="Rex Risk")
    async with WsClient(server.url) as owner, httpx.AsyncClient(timeout=60) as web:
        pay, delete = str(uuid.uuid4()), str(uuid.uuid4())
        await owner.load_thread(pay)
        await owner.send("pay 500 to Bob")
        await owner.wait_review(1)
        body = await mail_to(smtp, rex.email, pay)
        assert links(body) == {} and "/mail/" not in body and f"/thread/{pay}" in body
        await owner.load_thread(delete)
        await owner.send("delete notes/old.txt")
        await owner.wait_review(1)
        approve = links(await mail_to(smtp, rex.email, delete))["approve"]
        run_sql(server.env, "UPDATE mail_links SET expires_at = :t WHERE thread_id = :d", t="2020-01-01 00:00:00", d=delete)
        assert (await web.get(approve)).status_code == 410
        expired = await web.post(approve, headers={"Origin": server.url, "Cookie": f"hitl_session={rex.token}"})
        assert expired.status_code == 410
        await owner.settle()
        assert owner.chat["status"] == "review"
