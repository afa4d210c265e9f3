"""Finding the reviewer, at the thread service, on SQLite and PostgreSQL, under the team policy:
the inbox of each person as a real run raises and reviewers decide, the review signal that tells
tabs to re-read it, and the reminder mail through a real SMTP server (aiosmtpd on loopback):
exactly one mail per reviewer per review even with two workers sweeping at once, none to who
opened it, none to who asked, a link to the thread and no way to approve from the mail."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message

import pytest
from aiosmtpd.controller import Controller
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.errors import ThreadError
from hitl_app.review.risk_policy import ToolRisk
from hitl_app.reviewers.inbox import ReviewInbox, ReviewReminders
from hitl_app.reviewers.mailer import SmtpConfig
from hitl_app.store.accounts import Account
from tests.integration.desk.test_review_rights import (  # noqa: F401
    ADA,
    APPROVE,
    DANA,
    LEE,
    MIA,
    RAY,
    ask,
    service,
)

PUBLIC = "https://hitl.example.org"


class Collect:
    """aiosmtpd handler keeping every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content)))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp() -> Iterator[tuple[Collect, int]]:
    """A real SMTP server on loopback (aiosmtpd), its handler and port."""
    handler, port = Collect(), free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


async def add_accounts(svc) -> None:
    async with AsyncSession(svc.engines.async_) as s:
        for p in (MIA, LEE, DANA, RAY, ADA):
            s.add(Account(id=p.account_id, email=p.email, email_key=p.email, display_name=p.display_name, role=p.role.value))
        await s.commit()


def inbox_of(svc) -> ReviewInbox:
    return ReviewInbox(svc.engines, svc.rights, svc.bus.reviews)


async def test_a_new_review_signals_and_waits_in_the_right_inboxes_until_decided(service):  # noqa: F811 - the fixture above
    inbox = inbox_of(service)
    version = await service.bus.reviews.version()
    woke = asyncio.create_task(service.bus.reviews.wait(version, timeout=10))
    t, _ = await ask(service, "pay 500 to Bob")
    assert await asyncio.wait_for(woke, 5) is True  # a tab waiting on the signal re-reads now
    (item,) = await inbox.items_for(DANA)
    assert (item.pending.thread_id, item.tool_name, item.args, item.approvals_left) == (
        t, "transfer_funds", {"amount": 500, "to": "Bob"}, 1,
    )
    assert [i.pending.thread_id for i in await inbox.items_for(ADA)] == [t]
    assert await inbox.items_for(MIA) == [] and await inbox.items_for(LEE) == []
    version = await service.bus.reviews.version()
    await service.submit_review(t, item.pending.interrupt_id, APPROVE, person=DANA)
    assert await service.bus.reviews.wait(version, timeout=0.1) is True
    await service.wait(t)
    assert await inbox.items_for(DANA) == [] and await inbox.items_for(RAY) == []


async def test_two_person_rule_the_first_approval_moves_the_card_to_the_other_reviewers(service):  # noqa: F811 - the fixture above
    inbox = inbox_of(service)
    t, interrupt_id = await ask(service, "pay 5000 to Bob")
    assert [(i.approvals_left, i.approvals_needed) for i in await inbox.items_for(RAY)] == [(2, 2)]
    assert await service.submit_review(t, interrupt_id, APPROVE, person=DANA) is None
    assert await inbox.items_for(DANA) == []
    assert [(i.approvals_left, i.approvals_needed) for i in await inbox.items_for(RAY)] == [(1, 2)]


async def test_reviewers_who_decided_may_still_read_the_thread_after_the_run_and_others_may_not(service):  # noqa: F811
    t, interrupt_id = await ask(service, "pay 5000 to Bob")
    assert await service.submit_review(t, interrupt_id, APPROVE, person=DANA) is None
    assert await service.submit_review(t, interrupt_id, APPROVE, person=RAY)
    await service.wait(t)
    for reviewer in (DANA, RAY):  # they released the run: they see how it ended, read-only
        view = await service.load(t, viewer=reviewer)
        assert view.read_only and view.pending is None and view.messages[-1].text == "Paid 5000 to Bob."
    with pytest.raises(ThreadError) as info:  # a member who never decided on it: still refused
        await service.load(t, viewer=LEE)
    assert info.value.code == "forbidden"


async def test_one_reminder_per_reviewer_even_with_two_workers_sweeping(service, smtp):  # noqa: F811 - the fixture above
    handler, port = smtp
    await add_accounts(service)
    t, interrupt_id = await ask(service, "pay 500 to Bob")
    await inbox_of(service).note_opened(interrupt_id, ADA)  # Ada opened it: no mail for her
    config = SmtpConfig(host="127.0.0.1", port=port, sender="hitl@example.org")
    # Not due yet: the same sweep with a reminder due only after an hour (no timing window a loaded
    # machine can miss), then two workers for which it is due now, sweeping at once.
    early = [ReviewReminders(service.engines, service.rights, config, after_s=3600, public_url=PUBLIC) for _ in range(2)]
    assert sum(await asyncio.gather(*(w.sweep() for w in early))) == 0
    assert handler.messages == []
    high = {"transfer_funds": ToolRisk(level="high")}  # a payment: its mail only links to the card
    workers = [ReviewReminders(service.engines, service.rights, config, after_s=0, public_url=PUBLIC, risks=high)
               for _ in range(2)]
    sent = await asyncio.gather(*(w.sweep() for w in workers for _ in range(3)))
    assert sum(sent) == 2
    assert sorted(to for tos, _ in handler.messages for to in tos) == ["dana@example.com", "ray@example.com"]
    _, mail = handler.messages[0]
    body = mail.get_payload(decode=True).decode()
    assert "transfer_funds" in mail["Subject"] and "Mia" in mail["Subject"]
    assert re.findall(r"https?://\S+", body) == [f"{PUBLIC}/thread/{t}"]  # the thread, never an approve link
    assert "amount: 500" in body and "nothing is approved until you decide in the app" in body
    assert sum(await asyncio.gather(*(w.sweep() for w in workers))) == 0  # never a second mail


async def test_a_reminder_that_could_not_be_sent_is_sent_by_a_later_sweep(service, smtp):  # noqa: F811 - the fixture above
    handler, port = smtp
    await add_accounts(service)
    await ask(service, "pay 500 to Bob")
    await asyncio.sleep(0.3)
    down = SmtpConfig(host="127.0.0.1", port=free_port(), sender="hitl@example.org", timeout_s=2)
    assert await ReviewReminders(service.engines, service.rights, down, after_s=0.2, public_url=PUBLIC).sweep() == 0
    up = SmtpConfig(host="127.0.0.1", port=port, sender="hitl@example.org")
    assert await ReviewReminders(service.engines, service.rights, up, after_s=0.2, public_url=PUBLIC).sweep() == 3
    assert sorted(to for tos, _ in handler.messages for to in tos) == ["ada@example.com", "dana@example.com", "ray@example.com"]
