"""One-time decision links of the reminder mails: the table and keyword-only data functions.

``MailLink`` is one link: only the SHA-256 of its token is stored, with whom it was sent to
(``account_id``), the card it decides (``thread_id``, ``interrupt_id``, ``action_index``), the hash
of the arguments the mail showed (``args_hash``), the decision it offers (``approve`` or ``reject``),
its end (``expires_at``) and when it was used (``used_at``). ``use_link`` is the claim: a conditional
UPDATE, so of two posts of the same link exactly one goes on; ``release_link`` gives it back when
the decision was refused (nothing changed). Functions take an open ``AsyncSession``; the writers commit.
"""

# Tested by: tests/integration/api/test_mail_links.py

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel, col, select, update
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.tables import UTCDateTime, table_of, utcnow


class MailLink(SQLModel, table=True):
    """A one-time decision link of a reminder mail (the token itself is never kept)."""

    __tablename__ = "mail_links"

    token_hash: str = Field(primary_key=True, max_length=64)
    account_id: int = Field(index=True)
    thread_id: str = Field(max_length=64)
    interrupt_id: str = Field(max_length=200)
    action_index: int
    args_hash: str = Field(max_length=64)
    decision: str = Field(max_length=10)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


MAIL_TABLES = [table_of(MailLink)]
"""The tables of this module (``create_schema`` adds them to the app's)."""


async def add_links(*, session: AsyncSession, links: list[MailLink]) -> None:
    """Insert new links; commits."""
    session.add_all(links)
    await session.commit()


async def find_link(*, session: AsyncSession, token_hash: str) -> MailLink | None:
    """The link with that token hash, or None."""
    return (await session.exec(select(MailLink).where(col(MailLink.token_hash) == token_hash))).first()


async def use_link(*, session: AsyncSession, token_hash: str, now: datetime) -> bool:
    """Claim the link for one decision: True for the one caller that marked it used (it was unused and
    had not expired); commits."""
    stmt = (
        update(MailLink)
        .where(col(MailLink.token_hash) == token_hash, col(MailLink.used_at).is_(None), col(MailLink.expires_at) > now)
        .values(used_at=now)
    )
    done = bool((await session.exec(stmt)).rowcount)
    await session.commit()
    return done


async def release_link(*, session: AsyncSession, token_hash: str) -> None:
    """Give a claimed link back (its decision was refused and changed nothing); commits."""
    await session.exec(update(MailLink).where(col(MailLink.token_hash) == token_hash).values(used_at=None))
    await session.commit()
