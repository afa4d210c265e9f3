"""Who opened a pending review, and the exactly-once claim on its reminder mail.

Keyword-only functions taking an ``AsyncSession``; the writers commit.

One ``ReviewReminder`` row per (interrupt, account), unique. ``note_opened`` writes ``opened`` when
the person opens the thread while the review waits; ``claim_mail`` writes ``sending`` and only the
worker whose insert commits sends the mail (then ``mark_mailed``, or ``release_mail`` when the
send failed, so a later sweep tries again). A person with any row is never mailed again for that
review, so each reviewer gets at most one mail per review, however many workers sweep.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select, update
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.accounts import Account
from hitl_app.store.tables import ReviewReminder, utcnow

OPENED, SENDING, MAILED = "opened", "sending", "mailed"
"""``ReviewReminder.state`` values."""


async def _insert(session: AsyncSession, interrupt_id: str, account_id: str, state: str) -> bool:
    """Insert the row; False (nothing written) when the person already has one for the review."""
    session.add(ReviewReminder(interrupt_id=interrupt_id, account_id=account_id[:100], state=state, at=utcnow()))
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        return False
    return True


async def note_opened(*, session: AsyncSession, interrupt_id: str, account_id: str) -> bool:
    """Record that ``account_id`` opened the pending review ``interrupt_id``; commits.

    Returns True when recorded now, False when they already opened or were mailed about it.
    """
    return await _insert(session, interrupt_id, account_id, OPENED)


async def claim_mail(*, session: AsyncSession, interrupt_id: str, account_id: str) -> bool:
    """Claim the one reminder mail to ``account_id`` about ``interrupt_id``; commits.

    Returns True for the one caller that may send it; False when the person opened the review, was
    mailed, or another worker claimed it first.
    """
    return await _insert(session, interrupt_id, account_id, SENDING)


async def mark_mailed(*, session: AsyncSession, interrupt_id: str, account_id: str) -> None:
    """The claimed mail was handed to the SMTP server; commits."""
    stmt = (
        update(ReviewReminder)
        .where(col(ReviewReminder.interrupt_id) == interrupt_id, col(ReviewReminder.account_id) == account_id)
        .values(state=MAILED, at=utcnow())
    )
    await session.exec(stmt)
    await session.commit()


async def release_mail(*, session: AsyncSession, interrupt_id: str, account_id: str) -> None:
    """Undo a claim whose mail was not sent (a later sweep may claim it again); commits."""
    stmt = delete(ReviewReminder).where(
        col(ReviewReminder.interrupt_id) == interrupt_id,
        col(ReviewReminder.account_id) == account_id,
        col(ReviewReminder.state) == SENDING,
    )
    await session.exec(stmt)
    await session.commit()


async def noticed(*, session: AsyncSession, interrupt_ids: Iterable[str]) -> set[tuple[str, str]]:
    """``(interrupt_id, account_id)`` pairs that opened or were mailed (or are being mailed)."""
    ids = list(dict.fromkeys(interrupt_ids))
    if not ids:
        return set()
    stmt = select(ReviewReminder.interrupt_id, ReviewReminder.account_id).where(col(ReviewReminder.interrupt_id).in_(ids))
    return {(i, a) for i, a in (await session.exec(stmt)).all()}


async def reachable_accounts(*, session: AsyncSession) -> list[Account]:
    """Enabled accounts with an email address (those a reminder could reach), by id."""
    stmt = select(Account).where(col(Account.disabled).is_(False), col(Account.email) != "").order_by(col(Account.id))
    return list((await session.exec(stmt)).all())
