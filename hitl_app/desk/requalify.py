"""Approvals re-checked against the deciders' accounts, and the grants, as they are now.

An approval drafted on a card counts toward its rule only while the person who gave it still may
decide the card: their account active, their current role (or email) among the rule's reviewers
(or they are the asker where the rule names the owner). ``requalify`` drops the drafted approvals
that no longer qualify, e.g. a reviewer demoted to member between the first and the second
approval of a two-person rule, so the card reads "1 of 2 approvals" again and the completing
person is told why. The drafts stay stored; they are just not counted (a person promoted back
counts again). Rejections and answers are not re-checked: they run nothing.

An approval a grant drafted (decider ``grant:<id>``, ``hitl_app.desk.grant_check.InterruptGrants``)
counts only while that grant is active (not revoked, not expired) and its maker, as their account is
now, could still approve that call alone (``review.grants.stands_in_for``).
"""

# Tested by: tests/integration/desk/test_rights_now.py - a demoted reviewer's approval
# Tested by: tests/integration/desk/test_final_decisions.py - a revoked grant, a grant whose maker may not approve

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.desk.people import PersonNow, current_people
from hitl_app.review.grants import grant_of, stands_in_for
from hitl_app.review.rights import APPROVING, DEFAULT_RIGHTS, ToolRights, is_listed
from hitl_app.review.types import PendingReview
from hitl_app.store import grants as grant_store
from hitl_app.store.desk_tables import GrantRecord
from hitl_app.store.tables import DecisionDraft, utcnow


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


def why_not_granted(draft: DecisionDraft, grant: GrantRecord | None, maker: PersonNow | None, review: PendingReview,
                    owner_id: str, rights: Mapping[str, ToolRights], now: datetime) -> str:
    """Why the approval ``grant`` drafted on a card no longer counts; ``""`` when it does.

    ``maker``: the grant's maker as their account is now (None: no account; the grant's record is
    taken as it stands)."""
    prefix = "the grant's approval no longer counts"
    if grant is None:
        return f"{prefix}: the grant is gone"
    if grant.revoked_at is not None:
        return f"{prefix}: the grant was revoked"
    if now >= grant.expires_at:
        return f"{prefix}: the grant expired"
    maker = maker or PersonNow(grant.granted_by_id, grant.granted_by_name, "", grant.granted_by_role)
    if not maker.active:
        return f"{prefix}: {maker.display_name}'s account is disabled"
    action, config = review.action_requests[draft.action_index], review.review_configs[draft.action_index]
    if stands_in_for(maker, tool=action.name, args=action.args, allowed_decisions=config.allowed_decisions,
                     owner_id=owner_id, rights=rights.get(action.name, DEFAULT_RIGHTS)):
        return ""
    role = str(maker.role)
    return f"{prefix}: {maker.display_name} is now {'an' if role[:1] in 'aeiou' else 'a'} {role}"


async def requalify(
    *, session: Callable[[], AsyncSession], review: PendingReview, owner_id: str, rights: Mapping[str, ToolRights],
    drafts: Sequence[DecisionDraft], now: datetime | None = None,
) -> Requalified:
    """``drafts`` without the approvals whose deciders (or grants) no longer qualify at ``now``
    (aware UTC; default: now), see the module. An id with no account row keeps its draft
    (``hitl_app.desk.people``)."""
    approving = [d for d in drafts if d.decision_type in APPROVING and 0 <= d.action_index < len(review.action_requests)]
    if not approving:
        return Requalified(list(drafts))
    now = now or utcnow()
    grant_ids = sorted({g for d in approving if (g := grant_of(d.account_id)) is not None})
    async with session() as s:
        found = {g: await grant_store.get_grant(session=s, grant_id=g) for g in grant_ids}
        makers = [g.granted_by_id for g in found.values() if g is not None]
        people = await current_people(session=s, account_ids=[d.account_id for d in approving] + makers)
    kept: list[DecisionDraft] = []
    dropped: dict[int, list[str]] = {}
    checked = {id(d) for d in approving}
    for draft in drafts:
        reason = ""
        if id(draft) in checked and (gid := grant_of(draft.account_id)) is not None:
            grant = found.get(gid)
            maker = people.get(grant.granted_by_id) if grant is not None else None
            reason = why_not_granted(draft, grant, maker, review, owner_id, rights, now)
        elif id(draft) in checked and (person := people.get(draft.account_id)) is not None:
            reason = why_not(draft, person, review, owner_id, rights)
        if reason:
            dropped.setdefault(draft.action_index, []).append(reason)
        else:
            kept.append(draft)
    return Requalified(kept, dropped)
