"""Grants at the review desk: the grants a submission asks for, checked; the scopes a card offers;
the Grants page's list and revoke.

``GrantDesk`` belongs to the ``ReviewDesk`` (``desk.grants``; the service exposes it as
``service.grants``). The rule that a grant stands in only for its maker, as their account is now,
is ``hitl_app.desk.grant_check``'s; whether a drafted grant approval still counts is
``hitl_app.desk.requalify``'s.
"""

# Tested by: tests/integration/desk/test_review_desk.py, tests/integration/desk/test_grants_on_review.py

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.desk.cards import is_admin
from hitl_app.desk.desk_view import GrantRow
from hitl_app.desk.people import current_people
from hitl_app.errors import ThreadError
from hitl_app.review.desk_policy import ToolDesk
from hitl_app.review.grants import GRANT_SCOPES, GrantError, GrantRequest, check_grant, grant_refusal, scope_text
from hitl_app.review.rights import Card, Person, ToolRights, check_decision
from hitl_app.review.rights_policy import DEFAULT_RIGHTS
from hitl_app.review.risk_policy import NO_RISK, ToolRisk
from hitl_app.review.types import AnyDecision, PendingReview
from hitl_app.review.validate import ReviewError
from hitl_app.store import grants as grant_store
from hitl_app.store.tables import utcnow

log = logging.getLogger("hitl_app.desk")

CardsNow = Callable[[PendingReview, str, Mapping[str, ToolRights]], Any]
"""The review's cards with the drafts that count (``ReviewDesk.cards_now``)."""


class GrantDesk:
    """Grants made with submissions, and the grants pages (see the module).

    Args:
        session: opens an ``AsyncSession`` on the app database.
        rights: tool name -> review rights from the policy.
        desk: the tool's desk settings (``ReviewDesk.desk``).
        risks: tool name -> its risk (a high-risk tool takes no grant).
        cards_now: the review's cards as they count now (``ReviewDesk.cards_now``).
    """

    def __init__(
        self, *, session: Callable[[], AsyncSession], rights: Mapping[str, ToolRights], desk: Callable[[str], ToolDesk],
        risks: Mapping[str, ToolRisk], cards_now: CardsNow,
    ) -> None:
        self._session = session
        self.rights = rights
        self.desk = desk
        self.risks = risks
        self._cards_now = cards_now

    def grant_refusal(self, tool: str) -> str:
        """Why no grant may cover ``tool`` (``review.grants.grant_refusal``), ``""`` when one may."""
        return grant_refusal(
            tool, grantable=self.desk(tool).grantable, rights=self.rights.get(tool, DEFAULT_RIGHTS),
            risk_high=self.risks.get(tool, NO_RISK).high,
        )

    async def checked_grants(
        self, review: PendingReview, typed: Sequence[AnyDecision | None], requests: Sequence[GrantRequest | None],
        person: Person, owner_id: str, rights: Mapping[str, ToolRights],
    ) -> list[grant_store.NewGrant]:
        """``check_grants`` for a submission; the cards and the owner's name (database reads) are
        read only when some entry of ``requests`` asks for a grant. Raises as ``check_grants``."""
        if all(entry is None for entry in requests):
            return self.check_grants(review, typed, requests, person, owner_id, [])
        cards = (await self._cards_now(review, owner_id, rights))[0]
        return self.check_grants(review, typed, requests, person, owner_id, cards, await self.owner_name(owner_id))

    def check_grants(
        self, review: PendingReview, typed: Sequence[AnyDecision | None], requests: Sequence[GrantRequest | None],
        person: Person, owner_id: str, cards: Sequence[Card], owner_name: str = "",
    ) -> list[grant_store.NewGrant]:
        """The grants ``requests`` asks for (none, or one entry per card: a request or None),
        checked; nothing is written.

        Raises:
            ReviewError: ``bad_request`` / ``not_grantable`` / ``forbidden`` on the card concerned.
        """
        if not requests:
            return []
        if len(requests) != len(review.action_requests):
            raise ReviewError("Send one grant entry per card (or none).", code="bad_request")
        out = []
        for index, entry in enumerate(requests):
            action = review.action_requests[index]
            try:
                request = GrantRequest.parse(entry)
                if request is None:
                    continue
                decision = typed[index] if index < len(typed) else None
                check_grant(
                    request, tool=action.name, grantable=self.desk(action.name).grantable,
                    decision_type=decision.type if decision is not None else "", approvals=cards[index].rule.approvals,
                    person_is_owner=str(person.account_id) == owner_id, person_is_admin=is_admin(person),
                    refusal=self.grant_refusal(action.name),
                )
                if not check_decision(cards[index], person, "approve").allowed:
                    raise GrantError("Only a person who may approve this card may grant it.", "forbidden")
            except GrantError as exc:
                raise ReviewError(f"Card {index + 1} ({action.name}): {exc}", card_index=index, code=exc.code) from None
            out.append(grant_store.NewGrant(
                request=request, tool=action.name, args=action.args, thread_id=review.thread_id, owner_id=owner_id,
                owner_name=owner_name, by_id=str(person.account_id), by_name=person.display_name,
                by_role=str(person.role), interrupt_id=review.interrupt_id,
            ))
        return out

    def grant_scopes(self, card: Card, person: Person, owner_id: str) -> tuple[list[str], str]:
        """The scopes ``person`` may grant on ``card`` with an approval, and why none (``""``)."""
        if "approve" not in card.allowed_decisions:
            return [], ""
        if refusal := self.grant_refusal(card.tool):
            return [], refusal
        if card.rule.approvals > 1:
            return [], f"{card.tool} needs {card.rule.approvals} approvals: no grants."
        if not check_decision(card, person, "approve").allowed:
            return [], ""
        mine = str(person.account_id) == owner_id or is_admin(person)
        return [s for s in GRANT_SCOPES if s != "person" or mine], ""

    async def owner_name(self, owner_id: str) -> str:
        """The display name of the account ``owner_id`` now (``""`` when it is no account)."""
        async with self._session() as session:
            found = (await current_people(session=session, account_ids=[owner_id])).get(owner_id)
        return found.display_name if found is not None else ""

    async def list_grants(self, person: Person) -> list[GrantRow]:
        """The grants ``person`` made or that cover their threads (every grant for an admin), newest first."""
        async with self._session() as session:
            records = await grant_store.list_grants(
                session=session, account_id=None if is_admin(person) else str(person.account_id)
            )
        now, out = utcnow(), []
        for g in records:
            status = "revoked" if g.revoked_at else "active" if now < g.expires_at else "expired"
            out.append(GrantRow(
                id=g.id or 0, granted_by=g.granted_by_name, scope=scope_text(g.scope, g.owner_name), tool=g.tool,
                thread_id=g.thread_id or "", args=json.dumps(g.args, ensure_ascii=False) if g.args else "",
                made=g.created_at, ends=g.expires_at, revoked_at=g.revoked_at, revoked_by=g.revoked_by or "",
                uses=g.uses, last_used=g.last_used_at, status=status,
                can_revoke=status == "active" and self._may_revoke(g, person),
            ))
        return out

    @staticmethod
    def _may_revoke(grant: Any, person: Person) -> bool:
        who = str(person.account_id)
        return is_admin(person) or who in (grant.granted_by_id, grant.owner_id)

    async def revoke(self, grant_id: Any, person: Person) -> None:
        """Revoke a grant: the very next matching call asks again.

        Raises:
            ThreadError: ``not_found`` (no such grant), ``forbidden`` (not its maker, the owner of
                the threads it covers, or an admin), ``too_late`` (revoked already).
        """
        if isinstance(grant_id, bool) or not isinstance(grant_id, int):
            raise ThreadError("No such grant.", code="not_found")
        async with self._session() as session:
            grant = await grant_store.get_grant(session=session, grant_id=grant_id)
            if grant is None:
                raise ThreadError("No such grant.", code="not_found")
            if not self._may_revoke(grant, person):
                raise ThreadError("Only the person who made the grant, the owner or an admin may revoke it.", code="forbidden")
            if not await grant_store.revoke_grant(session=session, grant_id=grant_id, by=person.display_name):
                raise ThreadError("This grant was revoked already.", code="too_late")
        log.info("grant revoked id=%s by=%s", grant_id, person.account_id)
