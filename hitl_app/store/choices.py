"""Each person's unsubmitted choices on the cards of a pending review (``card_choices``).

A choice is what a person picked on one card before Submit (approve; reject with its reason; a
checked edit with its arguments; respond with its answer), kept so that a reload, another tab of
the same account or a restart shows it again. It is NOT a decision: nobody else reads it, it
never counts toward a card's approvals or the resume (those are ``decision_drafts``, written at
Submit), and the server checks it again at Submit like any other choice.

Keyword-only functions taking an ``AsyncSession``; the writers commit. One row per
``(interrupt_id, action_index, account_id)``: rows of one review never apply to another (a new
interrupt has a new id). Submit marks a person's rows ``submitted`` (they are no longer shown);
an Undo of that submission makes them open again (``reopen_choices``). Only an Undo does: a save
that comes after Submit consumed the row (a late debounced save, another tab of the same account),
or after the review was decided (its claim written, also while an undo window runs), changes
nothing, so a choice is never put back on a decided review.
"""

# Tested by: tests/integration/store/test_store_choices.py

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel, col, delete, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.reviews import is_claimed
from hitl_app.store.tables import UTCDateTime, table_of, utcnow


class CardChoice(SQLModel, table=True):
    """One person's choice on one card of one pending interrupt (see the module).

    ``choice`` is the kept payload, ``{"choice": "reject", "reason": "..."}`` and the like
    (``hitl_app.review.draft.kept_choice``); ``submitted`` is True once Submit consumed it.
    """

    __tablename__ = "card_choices"
    __table_args__ = (UniqueConstraint("interrupt_id", "action_index", "account_id", name="uq_card_choice"),)

    id: int | None = Field(default=None, primary_key=True)
    thread_id: str = Field(index=True, max_length=64)
    interrupt_id: str = Field(index=True, max_length=64)
    action_index: int
    account_id: str = Field(index=True, max_length=100)
    choice: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    submitted: bool = Field(default=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


CHOICE_TABLES = [table_of(CardChoice)]
"""The tables of this module (created with the others by ``hitl_app.store.db.create_schema``)."""


async def save_choice(
    *, session: AsyncSession, thread_id: str, interrupt_id: str, action_index: int, account_id: str,
    choice: dict[str, Any] | None,
) -> bool:
    """Keep ``account_id``'s choice on card ``action_index`` of ``interrupt_id``; ``None``
    forgets it. The person's rows on other interrupts of the thread go (a new review makes them
    stale). Nothing changes on that card once Submit consumed its row (only ``reopen_choices``
    opens it again) or once the review is decided (claimed). Commits.

    Args:
        session: the app database session (committed here).
        thread_id: the review's thread.
        interrupt_id: the pending review.
        action_index: the card (0-based).
        account_id: whose choice (the account id as text).
        choice: the kept payload (a small JSON object), or None.

    Returns:
        True when the row was written (or forgotten), False when nothing changed: consumed, or the
        review is decided.
    """
    who = account_id[:100]
    for _attempt in range(2):  # an insert that raced another tab's becomes an update
        # the delete comes first: on SQLite it takes the write lock (waiting its turn) before the
        # checks read, so they see every commit made before this write (no stale read, no upgrade)
        await session.exec(delete(CardChoice).where(
            col(CardChoice.thread_id) == thread_id, col(CardChoice.account_id) == who,
            col(CardChoice.interrupt_id) != interrupt_id,
        ))
        stmt = select(CardChoice).where(
            CardChoice.interrupt_id == interrupt_id, CardChoice.action_index == action_index, CardChoice.account_id == who,
        )
        row = (await session.exec(stmt)).first()
        if (row is not None and row.submitted) or await is_claimed(session=session, interrupt_id=interrupt_id):
            await session.commit()  # the stale rows of other reviews still go
            return False
        if row is None and choice is None:
            await session.commit()
            return True
        if row is None:
            row = CardChoice(thread_id=thread_id, interrupt_id=interrupt_id, action_index=action_index, account_id=who)
        elif choice is None:
            await session.delete(row)
            await session.commit()
            return True
        row.choice, row.updated_at = dict(choice or {}), utcnow()
        session.add(row)
        try:
            await session.commit()
            return True
        except IntegrityError:
            await session.rollback()
    raise RuntimeError(f"card choice not saved interrupt={interrupt_id} card={action_index}")


async def read_choices(*, session: AsyncSession, interrupt_id: str, account_id: str) -> dict[int, dict[str, Any]]:
    """``account_id``'s open (not submitted) choices on ``interrupt_id``: card index -> payload
    (``{}`` once the review is decided: claimed, also while an undo window runs)."""
    if await is_claimed(session=session, interrupt_id=interrupt_id):
        return {}
    stmt = select(CardChoice).where(
        CardChoice.interrupt_id == interrupt_id, CardChoice.account_id == account_id[:100],
        col(CardChoice.submitted).is_(False),
    )
    return {r.action_index: dict(r.choice or {}) for r in (await session.exec(stmt)).all()}


async def consume_choices(*, session: AsyncSession, interrupt_id: str, account_id: str) -> int:
    """Submit took ``account_id``'s choices on ``interrupt_id``: mark them submitted (no longer
    shown); commits. Returns how many rows were marked."""
    return await _mark(session, interrupt_id, account_id, submitted=True)


async def reopen_choices(*, session: AsyncSession, interrupt_id: str, account_id: str) -> int:
    """An Undo put the review back: ``account_id``'s submitted choices on ``interrupt_id`` are
    open again (shown on their cards); commits. Returns how many rows were reopened."""
    return await _mark(session, interrupt_id, account_id, submitted=False)


async def _mark(session: AsyncSession, interrupt_id: str, account_id: str, *, submitted: bool) -> int:
    stmt = (
        update(CardChoice)
        .where(
            col(CardChoice.interrupt_id) == interrupt_id, col(CardChoice.account_id) == account_id[:100],
            col(CardChoice.submitted).is_(not submitted),
        )
        .values(submitted=submitted, updated_at=utcnow())
    )
    result = await session.exec(stmt)
    await session.commit()
    return int(result.rowcount or 0)
