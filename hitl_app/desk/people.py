"""The people behind recorded decisions and grants, as their accounts are NOW.

A decision or a grant records who made it and with which role at the time. Rights that act later
(a grant approving a new call, an approval counted when the last card of a review is decided) are
checked against the account as it is now: a person demoted or disabled since no longer counts.
``current_people`` reads those accounts in one query.

An id that is not an account id (a number) or has no account row is left out of the answer: the
app records decisions and grants of signed-in accounts only, and accounts are never deleted
(only disabled), so such ids come from code running without accounts (scripts, the service used
as a library); the caller then keeps what was recorded.
"""

# Tested by: tests/integration/desk/test_rights_now.py

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store import accounts


@dataclass(frozen=True)
class PersonNow:
    """One account as it is now; fits ``hitl_app.review.rights.Person``.

    Attributes:
        account_id: the account id as text.
        display_name: the name shown now.
        email: the email address now.
        role: the role now (``member``/``reviewer``/``admin``).
        active: False when the account is disabled.
    """

    account_id: str
    display_name: str
    email: str
    role: str
    active: bool = True


async def current_people(*, session: AsyncSession, account_ids: Iterable[str]) -> dict[str, PersonNow]:
    """Account id (text) -> ``PersonNow`` for the ids that are accounts (see the module)."""
    numbers = sorted({int(i) for i in account_ids if str(i).isdigit()})
    rows = await accounts.accounts_by_id(session=session, account_ids=numbers)
    return {
        str(a.id): PersonNow(str(a.id), a.display_name, a.email, a.role, not a.disabled)
        for a in rows if a.id is not None
    }
