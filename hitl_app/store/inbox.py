"""The review inbox: pending approval cards across threads, and which of them wait for a person.

Keyword-only functions taking an ``AsyncSession``; they only read.

A review is pending while its ``ReviewRequestRecord`` is not ``decided`` and its thread's index row
says a review is pending. Its cards come from ``ReviewRequestRecord.cards`` (written with the row,
see ``record_review_requested``), the decisions drafted so far from ``decision_drafts``, and who
may decide from the policy's review rights (``hitl_app.review.waiting.waits_for``), widened to
the escalation role of a review whose deadline escalated it (its ``review_expiries`` row,
``hitl_app.review.rights.rights_in_force``). The rights
depend on each card's arguments and drafts, so the last step is done here in Python. The inbox is
read in pages (``inbox_page``): SQL keeps the reviews that may wait for the person
(``hitl_app.store.inbox_query``), oldest first along a partial index, and the Python check runs on
one page's reviews at a time, never on all of them. A row an older version wrote without ``cards`` shows no
card until its thread is opened once (``record_review_requested`` fills them in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, false, func, true
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.rights import (
    Card,
    Person,
    RecordedDecision,
    ToolRights,
    rights_in_force,
)
from hitl_app.review.waiting import approvals_left, waits_for
from hitl_app.store import inbox_query
from hitl_app.store.accounts import Account
from hitl_app.store.desk_tables import ReviewExpiry
from hitl_app.store.tables import (
    DecisionDraft,
    ReviewRequestRecord,
    ThreadRecord,
    utcnow,
)

SCAN_LIMIT = 1000
"""Pending reviews read per query, at most (oldest first)."""
NO_ACCOUNT = "someone without an account"
"""Who asked, for a thread made before accounts existed (owned by a browser id)."""


@dataclass(frozen=True)
class PendingCard:
    """One open approval card of a pending review.

    Attributes:
        thread_id, thread_title: the thread (its sidebar title).
        interrupt_id: the pending interrupt; ``action_index`` the card's place in it (from 0).
        card: the card with its rule and the decisions drafted on it (``hitl_app.review.rights``).
        owner_id: the thread's owner (the person who asked) as text, ``""`` when unknown.
        asked_by: the owner's display name now (``NO_ACCOUNT`` for a browser-id owner).
        requested_at: when the review was first shown (aware UTC).
    """

    thread_id: str
    thread_title: str
    interrupt_id: str
    action_index: int
    card: Card
    owner_id: str
    asked_by: str
    requested_at: datetime


@dataclass(frozen=True)
class InboxItem:
    """One card waiting for the person who asked for the inbox.

    Attributes:
        pending: the card and its review (see ``PendingCard``).
        waited_seconds: seconds since the review was first shown, by the server's clock (>= 0).
        approvals_left: approvals the card still needs (e.g. 2 on a fresh two-person card).
        approvals_needed: approvals its rule needs in all.
    """

    pending: PendingCard
    waited_seconds: float
    approvals_left: int
    approvals_needed: int

    @property
    def tool_name(self) -> str:
        """The action request's tool name."""
        return self.pending.card.tool

    @property
    def args(self) -> Mapping[str, Any]:
        """The action request's arguments as proposed."""
        return self.pending.card.args


async def pending_cards(
    *,
    session: AsyncSession,
    rights: Mapping[str, ToolRights],
    requested_before: datetime | None = None,
    scan: int = SCAN_LIMIT,
) -> list[PendingCard]:
    """Every open card of every pending review, oldest review first, then in card order.

    Args:
        session: an open session on the app database (only read).
        rights: tool name -> review rights from the policy (a tool not named: the owner decides).
        requested_before: only reviews first shown before this time (aware UTC), e.g. for reminders.
        scan: pending reviews read, at most.
    """
    stmt = (
        select(ReviewRequestRecord, ThreadRecord)
        .join(ThreadRecord, col(ThreadRecord.thread_id) == col(ReviewRequestRecord.thread_id))
        .where(col(ReviewRequestRecord.decided) == false(), col(ThreadRecord.pending_review) == true())
        .order_by(col(ReviewRequestRecord.requested_at), col(ReviewRequestRecord.interrupt_id))
        .limit(scan)
    )
    if requested_before is not None:
        stmt = stmt.where(col(ReviewRequestRecord.requested_at) < requested_before)
    rows = list((await session.exec(stmt)).all())
    by_review = await _pending(session, rights, rows)
    return [card for request, _ in rows for card in by_review.get(request.interrupt_id, [])]


async def _pending(
    session: AsyncSession, rights: Mapping[str, ToolRights], rows: Sequence[tuple[ReviewRequestRecord, ThreadRecord]],
    escalated: Mapping[str, str] | None = None,
) -> dict[str, list[PendingCard]]:
    """Interrupt id -> the open cards of that review (with drafts and the asker's name), in card
    order. ``escalated``: interrupt id -> role of the escalated reviews when already read (a
    superset of these rows' is fine), else they are read here."""
    if not rows:
        return {}
    drafted = await _drafts(session, [r.interrupt_id for r, _ in rows])
    if escalated is None:
        escalated = await _escalations(session, [r.interrupt_id for r, _ in rows])
    names = await _names(session, [t.owner or "" for _, t in rows])
    out: dict[str, list[PendingCard]] = {}
    for request, thread in rows:
        owner = thread.owner or ""
        cards = out.setdefault(request.interrupt_id, [])
        for index, raw in enumerate(request.cards or []):
            card = _card(raw, owner, rights, drafted.get((request.interrupt_id, index), []),
                         escalated.get(request.interrupt_id))
            cards.append(PendingCard(
                thread_id=thread.thread_id, thread_title=thread.title, interrupt_id=request.interrupt_id,
                action_index=index, card=card, owner_id=owner,
                asked_by=names.get(owner, NO_ACCOUNT), requested_at=request.requested_at,
            ))
    return out


@dataclass(frozen=True)
class InboxPage:
    """One page of the cards waiting for a person.

    Attributes:
        items: the cards, in page order (whole reviews: a page may run a few cards past its limit).
        total: cards waiting for them in all pages. Exact when this read began at the start and
            reached the end; otherwise an upper bound from SQL (``hitl_app.store.inbox_query``),
            less the cards this read found not waiting: it is exact unless a review has cards
            already completed by others, or a conditional rule narrows who is asked by arguments.
        next_after: the cursor for the next page (``""``: no more).
    """

    items: list[InboxItem]
    total: int
    next_after: str


PAGE_SIZE = 50
"""Cards per inbox page (the /reviews page and its "Load more")."""


async def inbox_page(
    *,
    session: AsyncSession,
    person: Person,
    rights: Mapping[str, ToolRights],
    after: str = "",
    limit: int = PAGE_SIZE,
    newest_first: bool = False,
    thread_id: str | None = None,
    count: bool = True,
    now: datetime | None = None,
    escalated: Mapping[str, str] | None = None,
) -> InboxPage:
    """The cards waiting for ``person``, one page: oldest review first (``newest_first``: newest
    first), from after the cursor ``after`` (``""``: the start), about ``limit`` cards.

    SQL keeps only pending reviews that may wait for them (their role, email or ownership, their
    own decisions; see ``hitl_app.store.inbox_query``) and reads them in batches along the partial
    index; each card is then checked in Python (``waits_for``, the authority) and batches are read
    until the page is full or nothing is left. ``thread_id`` keeps one thread only. ``count=False``
    skips the count query (``total`` is then the cards on this page when more follow). ``now``
    (aware UTC, default now) gives the waits. ``escalated``: ``escalations``' answer when the
    caller read it already (several pages in one session), else it is read here.

    Raises:
        ValueError: ``after`` is not a cursor this function returned.
    """
    now = now or utcnow()
    me = str(person.account_id)
    if escalated is None:
        escalated = await escalations(session=session)
    roles = inbox_query.escalated_roles(person)
    where = inbox_query.may_wait_for(person, rights, sorted(i for i, role in escalated.items() if role in roles))
    if thread_id is not None:
        where = and_(where, col(ReviewRequestRecord.thread_id) == thread_id)
    batch = max(limit, 10)
    cursor, dropped = after, 0
    items: list[InboxItem] = []
    while len(items) < limit:
        rows = await _candidates(session, where, me, cursor, batch, newest_first)
        if not rows:
            cursor = ""
            break
        pending = await _pending(session, rights, [(r, t) for r, t, _ in rows], escalated)
        used = 0
        for request, _thread, mine in rows:
            kept = [_item(p, now) for p in pending.get(request.interrupt_id, []) if waits_for(p.card, person)]
            items += kept
            dropped += max(0, request.action_count - mine - len(kept))
            cursor, used = inbox_query.cursor_of(request.requested_at, request.interrupt_id), used + 1
            if len(items) >= limit:
                break
        if len(rows) < batch and used == len(rows):  # the last candidate is on this page
            cursor = ""
            break
    if (not after and not cursor) or not count:
        total = len(items)
    else:
        total = max(len(items), await _count(session, where, me) - dropped)
    return InboxPage(items=items, total=total, next_after=cursor)


async def escalations(*, session: AsyncSession) -> dict[str, str]:
    """Interrupt id -> the role a deadline escalated it to, for every undecided escalated review
    (``inbox_query.escalated_reviews``; few)."""
    return {i: role for i, role in (await session.exec(inbox_query.escalated_reviews())).all() if role}


async def pending_reviews(
    *,
    session: AsyncSession,
    person: Person,
    rights: Mapping[str, ToolRights],
    now: datetime | None = None,
    limit: int = 100,
) -> list[InboxItem]:
    """The cards waiting for ``person`` across every thread, oldest review first (about ``limit``:
    whole reviews, see ``inbox_page``, whose first page this is).

    A card waits for them when the policy asks them, it is open, they may decide it and have not
    yet (``hitl_app.review.waiting.waits_for``). ``now`` (aware UTC, default now) gives the waits.
    """
    page = await inbox_page(session=session, person=person, rights=rights, limit=limit, now=now)
    return page.items


def _item(pending: PendingCard, now: datetime) -> InboxItem:
    return InboxItem(
        pending=pending,
        waited_seconds=max(0.0, (now - pending.requested_at).total_seconds()),
        approvals_left=approvals_left(pending.card),
        approvals_needed=pending.card.rule.approvals,
    )


async def _candidates(
    session: AsyncSession, where: Any, me: str, after: str, batch: int, newest_first: bool
) -> list[tuple[ReviewRequestRecord, ThreadRecord, int]]:
    """The next ``batch`` candidate reviews after ``after``, with how many cards the person decided."""
    r_at, r_id = col(ReviewRequestRecord.requested_at), col(ReviewRequestRecord.interrupt_id)
    order = (r_at.desc(), r_id.desc()) if newest_first else (r_at, r_id)
    stmt = (
        select(ReviewRequestRecord, ThreadRecord, inbox_query.my_decided_cards(me).label("mine"))
        .join(ThreadRecord, col(ThreadRecord.thread_id) == col(ReviewRequestRecord.thread_id))
        .where(where, inbox_query.after_cursor(after, newest_first=newest_first))
        .order_by(*order)
        .limit(batch)
    )
    return [(r, t, int(m or 0)) for r, t, m in (await session.exec(stmt)).all()]


async def _count(session: AsyncSession, where: Any, me: str) -> int:
    """Cards of the candidate reviews the person has not decided yet (SQL's upper bound)."""
    left = col(ReviewRequestRecord.action_count) - inbox_query.my_decided_cards(me)
    stmt = (
        select(func.coalesce(func.sum(left), 0))
        .select_from(ReviewRequestRecord)
        .join(ThreadRecord, col(ThreadRecord.thread_id) == col(ReviewRequestRecord.thread_id))
        .where(where)
    )
    return int((await session.exec(stmt)).one() or 0)


def _card(
    raw: Any, owner: str, rights: Mapping[str, ToolRights], recorded: Sequence[RecordedDecision],
    escalated_to: str | None = None,
) -> Card:
    """A ``Card`` from one stored ``{"name", "args", "allowed_decisions"}`` entry (``escalated_to``:
    the role its review was escalated to, if it was)."""
    raw = raw if isinstance(raw, dict) else {}
    name = str(raw.get("name", ""))
    args = raw.get("args") if isinstance(raw.get("args"), dict) else {}
    allowed = [str(t) for t in raw.get("allowed_decisions") or []]
    return Card.for_request(
        {"name": name, "args": args}, allowed, owner_id=owner, rights=rights_in_force(rights, name, escalated_to),
        recorded=recorded,
    )


async def _drafts(session: AsyncSession, interrupt_ids: list[str]) -> dict[tuple[str, int], list[RecordedDecision]]:
    """(interrupt id, card index) -> the decisions drafted on it, oldest first."""
    stmt = (
        select(DecisionDraft)
        .where(col(DecisionDraft.interrupt_id).in_(interrupt_ids))
        .order_by(col(DecisionDraft.interrupt_id), col(DecisionDraft.seq))
    )
    out: dict[tuple[str, int], list[RecordedDecision]] = {}
    for d in (await session.exec(stmt)).all():
        out.setdefault((d.interrupt_id, d.action_index), []).append(
            RecordedDecision(d.account_id, d.display_name, d.decision_type, d.role or "")
        )
    return out


async def _escalations(session: AsyncSession, interrupt_ids: list[str]) -> dict[str, str]:
    """Interrupt id -> the role its review was escalated to (reviews whose deadline escalated them)."""
    stmt = select(ReviewExpiry).where(
        col(ReviewExpiry.interrupt_id).in_(interrupt_ids), col(ReviewExpiry.status) == "escalated"
    )
    return {e.interrupt_id: e.escalate_to for e in (await session.exec(stmt)).all() if e.escalate_to}


async def _names(session: AsyncSession, owners: list[str]) -> dict[str, str]:
    """Owner string -> the account's display name now (owners that are account ids only)."""
    ids = {int(o) for o in owners if o.isdigit() and len(o) < 19}
    if not ids:
        return {}
    rows = (await session.exec(select(Account).where(col(Account.id).in_(ids)))).all()
    return {str(a.id): a.display_name for a in rows}
