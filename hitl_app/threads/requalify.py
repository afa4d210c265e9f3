"""Approvals re-checked against the deciders' accounts as they are now.

An approval drafted on a card counts toward its rule only while the person who gave it still may
decide the card: their account active, their current role (or email) among the rule's reviewers
(or they are the asker where the rule names the owner). ``requalify`` drops the drafted approvals
that no longer qualify, e.g. a reviewer demoted to member between the first and the second
approval of a two-person rule, so the card reads "1 of 2 approvals" again and the completing
person is told why. The drafts stay stored; they are just not counted (a person promoted back
counts again). Rejections and answers are not re-checked: they run nothing.
"""

# Tested by: tests/integration/threads/test_rights_now.py - a demoted reviewer's approval

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.rights import APPROVING, DEFAULT_RIGHTS, ToolRights, is_listed
from hitl_app.review.types import PendingReview
from hitl_app.store.tables import DecisionDraft
from hitl_app.threads.people import PersonNow, current_people


@dataclass(frozen=True)
class Requalified:
    """The drafts that still count, and why the others do not.

    Attributes:
        drafts: the drafts to count, in their order.
        dropped: card index -> one sentence per dropped approval ("Rita's approval no longer
            counts: Rita is now a member").
    """

    drafts: list[DecisionDraft]
    dropped: dict[int, list[str]] = field(default_factory=dict)


def why_not(draft: DecisionDraft, now: PersonNow, review: PendingReview, owner_id: str,
            rights: Mapping[str, ToolRights]) -> str:
    """Why ``draft`` (an approval) no longer counts with its decider ``now``; ``""`` when it does."""
    name = draft.display_name
    if not now.active:
        return f"{name}'s approval no longer counts: their account is disabled"
    action = review.action_requests[draft.action_index]
    rule = rights.get(action.name, DEFAULT_RIGHTS).rule_for(action.args)
    if is_listed(rule, now, is_owner=bool(owner_id) and draft.account_id == owner_id):
        return ""
    role = str(now.role)
    return f"{name}'s approval no longer counts: {name} is now {'an' if role[:1] in 'aeiou' else 'a'} {role}"


async def requalify(
    *, session: Callable[[], AsyncSession], review: PendingReview, owner_id: str, rights: Mapping[str, ToolRights],
    drafts: Sequence[DecisionDraft],
) -> Requalified:
    """``drafts`` without the approvals whose deciders no longer qualify (see the module). An id
    with no account row keeps its draft (``hitl_app.threads.people``)."""
    approving = [d for d in drafts if d.decision_type in APPROVING and 0 <= d.action_index < len(review.action_requests)]
    if not approving:
        return Requalified(list(drafts))
    async with session() as s:
        people = await current_people(session=s, account_ids=[d.account_id for d in approving])
    kept: list[DecisionDraft] = []
    dropped: dict[int, list[str]] = {}
    checked = {id(d) for d in approving}
    for draft in drafts:
        now = people.get(draft.account_id) if id(draft) in checked else None
        reason = why_not(draft, now, review, owner_id, rights) if now is not None else ""
        if reason:
            dropped.setdefault(draft.action_index, []).append(reason)
        else:
            kept.append(draft)
    return Requalified(kept, dropped)
