"""Finding the reviewer: the review inbox of a person, and the reminder mail sweep.

``ReviewInbox`` answers "which cards wait for me" (``hitl_app.store.inbox``, with the policy's
review rights) and records that a person opened a waiting review. Tabs learn that the answer may
have changed from the run bus's review signal (``bus.reviews``), announced by the thread service.

``ReviewReminders`` (only with SMTP settings) sweeps every ``interval_s`` seconds in every worker:
each person a pending card waits for, who has not opened its review within ``after_s`` seconds,
gets ONE mail with a link to the thread. Each card that is not high-risk (the policy's ``risk``)
also gets one-time links to approve or reject it (the decisions that person may make on it now),
bound to the person, the card and the hash of the arguments the mail shows (``store.mail_links``);
opening one only shows a confirmation page, and the decision is made by its confirming post
(``hitl_app.api.mail_links``). A high-risk card's mail only links to the card. The claim that makes
it one mail, across workers, is a unique row (``hitl_app.store.reminders``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.bus.review_signal import ReviewSignal
from hitl_app.review.args_hash import args_hash
from hitl_app.review.rights import Person, ToolRights, may_decide
from hitl_app.review.risk_policy import ToolRisk
from hitl_app.review.shown import shown_controls
from hitl_app.review.waiting import waits_for
from hitl_app.reviewers.mailer import SmtpConfig, build_message, one_line, send_mail
from hitl_app.store import inbox as inbox_store
from hitl_app.store import mail_links, reminders
from hitl_app.store.accounts import Account
from hitl_app.store.db import Engines
from hitl_app.store.inbox import InboxItem, InboxPage, PendingCard
from hitl_app.store.tables import utcnow

MAIL_LINK_DECISIONS = ("approve", "reject")
"""The decisions a reminder mail offers as one-time links (edit and respond need the page)."""

log = logging.getLogger("hitl_app.reviews")


@dataclass(frozen=True)
class InboxView:
    """One read of what an open inbox shows (``ReviewInbox.first_pages``).

    Attributes:
        page: the first pages (items, total, cursor).
        newest: the newest cards when the pages do not reach them (else empty).
        here: the card of the thread on screen, if one waits (at most one).
    """

    page: InboxPage
    newest: list[InboxItem]
    here: list[InboxItem]


class ReviewInbox:
    """The cards waiting for a person, across threads.

    Args:
        engines: the app database; ``rights``: tool name -> review rights (the policy's);
        signal: the review signal tabs wait on (``bus.reviews``).
    """

    def __init__(self, engines: Engines, rights: Mapping[str, ToolRights], signal: ReviewSignal) -> None:
        self.engines, self.rights, self.signal = engines, dict(rights), signal

    def _session(self) -> AsyncSession:
        return AsyncSession(self.engines.async_, expire_on_commit=False)

    async def items_for(self, person: Person, *, limit: int = 100) -> list[InboxItem]:
        """The cards waiting for ``person``, oldest review first (see ``store.inbox.pending_reviews``)."""
        async with self._session() as session:
            return await inbox_store.pending_reviews(session=session, person=person, rights=self.rights, limit=limit)

    async def page_for(
        self, person: Person, *, after: str = "", limit: int = inbox_store.PAGE_SIZE, newest_first: bool = False,
        thread_id: str | None = None, count: bool = True,
    ) -> InboxPage:
        """One page of the cards waiting for ``person`` (see ``store.inbox.inbox_page``; raises
        ValueError for a cursor it did not make)."""
        async with self._session() as session:
            return await inbox_store.inbox_page(
                session=session, person=person, rights=self.rights, after=after, limit=limit,
                newest_first=newest_first, thread_id=thread_id, count=count,
            )

    async def first_pages(
        self, person: Person, *, limit: int = inbox_store.PAGE_SIZE, newest: int = 0, thread_id: str = "",
    ) -> InboxView:
        """What an open inbox shows, read in one database session: the first ``limit`` cards and
        the total (``store.inbox.inbox_page``), the ``newest`` newest cards when not all are on
        those pages, and a card of ``thread_id`` (the thread on screen, ``""``: none). The
        escalated reviews are read once for the three."""
        async with self._session() as session:
            escalated = await inbox_store.escalations(session=session)

            async def read(**kw: Any) -> InboxPage:
                return await inbox_store.inbox_page(session=session, person=person, rights=self.rights,
                                                    escalated=escalated, **kw)

            page = await read(limit=limit)
            latest = (await read(newest_first=True, limit=newest, count=False)).items if newest and page.next_after else []
            here = [i for i in page.items if i.pending.thread_id == thread_id] if thread_id else []
            if thread_id and not here and page.next_after:
                here = (await read(thread_id=thread_id, limit=1, count=False)).items
        return InboxView(page, latest, here[:1])

    async def note_opened(self, interrupt_id: str, person: Person) -> None:
        """``person`` opened the thread while review ``interrupt_id`` waited: no reminder for it.
        Never raises (a failure is logged; at worst a reminder is sent)."""
        try:
            async with self._session() as session:
                await reminders.note_opened(session=session, interrupt_id=interrupt_id, account_id=str(person.account_id))
        except Exception:
            log.exception("could not record an opened review interrupt=%s", interrupt_id)


@dataclass(frozen=True)
class _AccountPerson:
    """An ``Account`` row as a ``Person`` (the review rules' view of someone)."""

    account_id: str
    display_name: str
    email: str
    role: str

    @classmethod
    def of(cls, account: Account) -> _AccountPerson:
        return cls(str(account.id), account.display_name, account.email, account.role)


def waited_words(seconds: float) -> str:
    """``seconds`` in words for a person: ``"3 minutes"``, ``"2 hours"``, ``"1 day"``."""
    minutes = int(seconds // 60)
    for size, unit in ((1440, "day"), (60, "hour"), (1, "minute")):
        if minutes >= size:
            n = minutes // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return "less than a minute"


def reminder_text(
    cards: list[PendingCard], person: _AccountPerson, link: str, now: datetime, decide: dict[int, dict[str, str]] | None = None,
) -> tuple[str, str]:
    """(subject, body) of the reminder to ``person`` about the cards of one review; ``decide``: card
    index -> decision -> its one-time link (none for a high-risk card)."""
    first = cards[0]
    tools = ", ".join(dict.fromkeys(c.card.tool for c in cards))
    subject = f"Review waiting for you: {tools} ({first.asked_by})"
    lines = [f"Hello {one_line(person.display_name, 100)},", "",
             f"{one_line(first.asked_by, 100)} asked the agent for an action that waits for your decision,",
             f"in the thread \"{one_line(first.thread_title, 80)}\", "
             f"for {waited_words((now - first.requested_at).total_seconds())} now:", ""]
    for c in cards:
        args = ", ".join(f"{k}: {one_line(shown_controls(str(v)), 60)}" for k, v in list(c.card.args.items())[:6])
        lines.append(f"  - {c.card.tool}({one_line(args, 300)})")
        for kind, url in (decide or {}).get(c.action_index, {}).items():
            lines.append(f"      {kind.capitalize()} (asks you to confirm; works once): {url}")
    lines += ["", "Open the review (sign in if asked) and decide there:", link, "",
              "This link only opens the thread; nothing is approved until you decide in the app." if not decide else
              "This link only opens the thread. A decision link opens a page that asks you to confirm;"
              " nothing is decided until you confirm it there."]
    return subject, "\n".join(lines) + "\n"


def new_link_token() -> str:
    """A fresh mail-link token (256 random bits, URL-safe); the database keeps its SHA-256."""
    return secrets.token_urlsafe(32)


class ReviewReminders:
    """The reminder mail sweep (see the module docstring).

    Args:
        engines, rights: as for ``ReviewInbox``; ``smtp``: where to send;
        after_s: seconds a review may wait unopened before its reviewers are mailed;
        public_url: the app's address as people open it (``HITL_PUBLIC_URL``), for the link;
        interval_s: seconds between sweeps (default: a quarter of ``after_s``, 5 to 60 s);
        risks: tool name -> ``ToolRisk`` (a high-risk card gets no decision links);
        link_hours: how long a decision link works at most (it also stops when its review is decided).
    """

    def __init__(
        self, engines: Engines, rights: Mapping[str, ToolRights], smtp: SmtpConfig, *, after_s: float,
        public_url: str, interval_s: float | None = None, risks: Mapping[str, ToolRisk] | None = None,
        link_hours: float = 72.0,
    ) -> None:
        self.engines, self.rights, self.smtp, self.after_s = engines, dict(rights), smtp, after_s
        self.risks, self.link_hours = dict(risks or {}), link_hours
        self.public_url = public_url.rstrip("/")
        self.interval_s = interval_s if interval_s is not None else min(60.0, max(5.0, after_s / 4))

    def _session(self) -> AsyncSession:
        return AsyncSession(self.engines.async_, expire_on_commit=False)

    async def run(self) -> None:
        """Sweep until cancelled; a failed sweep is logged and the next one tries again."""
        while True:
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("review reminder sweep failed")
            await asyncio.sleep(self.interval_s)

    async def sweep(self, now: datetime | None = None) -> int:
        """Mail every person due a reminder now; returns how many mails this worker sent."""
        now = now or utcnow()
        async with self._session() as session:
            due = await inbox_store.pending_cards(
                session=session, rights=self.rights, requested_before=now - timedelta(seconds=self.after_s)
            )
            if not due:
                return 0
            people = [_AccountPerson.of(a) for a in await reminders.reachable_accounts(session=session)]
            done = await reminders.noticed(session=session, interrupt_ids=[c.interrupt_id for c in due])
        plan: dict[tuple[str, str], tuple[_AccountPerson, list[PendingCard]]] = {}
        for card in due:
            for person in people:
                key = (card.interrupt_id, person.account_id)
                if key not in done and waits_for(card.card, person):
                    plan.setdefault(key, (person, []))[1].append(card)
        sent = 0
        for (interrupt_id, _account_id), (person, cards) in plan.items():
            sent += await self._mail_one(interrupt_id, person, cards, now)
        return sent

    async def _decision_links(self, person: _AccountPerson, cards: list[PendingCard], now: datetime) -> dict[int, dict[str, str]]:
        """Card index -> decision -> a new one-time link, for the cards that are not high-risk and
        the decisions ``person`` may make on them now (``MAIL_LINK_DECISIONS``); the links are stored."""
        links: dict[int, dict[str, str]] = {}
        rows: list[mail_links.MailLink] = []
        for c in cards:
            risk = self.risks.get(c.card.tool)
            if risk is not None and risk.high:
                continue
            for kind in (k for k in MAIL_LINK_DECISIONS if k in may_decide(c.card, person).allowed):
                token = new_link_token()
                rows.append(mail_links.MailLink(
                    token_hash=hashlib.sha256(token.encode()).hexdigest(), account_id=int(person.account_id),
                    thread_id=c.thread_id, interrupt_id=c.interrupt_id, action_index=c.action_index,
                    args_hash=args_hash(c.card.tool, c.card.args), decision=kind, created_at=now,
                    expires_at=now + timedelta(hours=self.link_hours),
                ))
                links.setdefault(c.action_index, {})[kind] = f"{self.public_url}/mail/{token}"
        if rows:
            async with self._session() as session:
                await mail_links.add_links(session=session, links=rows)
        return links

    async def _mail_one(self, interrupt_id: str, person: _AccountPerson, cards: list[PendingCard], now: datetime) -> int:
        """Claim, send and record one reminder; 1 when this worker sent it, else 0."""
        async with self._session() as session:
            if not await reminders.claim_mail(session=session, interrupt_id=interrupt_id, account_id=person.account_id):
                return 0
        link = f"{self.public_url}/thread/{cards[0].thread_id}"
        subject, body = reminder_text(cards, person, link, now, await self._decision_links(person, cards, now))
        try:
            message = build_message(self.smtp, to=person.email, to_name=person.display_name, subject=subject, body=body)
            await send_mail(self.smtp, message)
        except Exception as exc:  # noqa: BLE001 - released: the next sweep tries again
            log.warning(
                "review reminder not sent account=%s interrupt=%s: %s: %s",
                person.account_id, interrupt_id, type(exc).__name__, exc,
            )
            async with self._session() as session:
                await reminders.release_mail(session=session, interrupt_id=interrupt_id, account_id=person.account_id)
            return 0
        async with self._session() as session:
            await reminders.mark_mailed(session=session, interrupt_id=interrupt_id, account_id=person.account_id)
        log.info("review reminder sent account=%s interrupt=%s", person.account_id, interrupt_id)
        return 1
