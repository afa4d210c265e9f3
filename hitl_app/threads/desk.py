"""The review desk at the server: grants made with a submission, the undo window, what cards show.

``ReviewDesk`` belongs to one ``ThreadService`` (``service.desk``) and uses its database session,
thread locks and resume path. The policy's desk settings (``hitl_app.review.desk_policy``) say,
per tool, the deadline, whether grants are allowed and how long the undo window is.

- Grants: ``check_grants`` turns the browser's per-card grant requests into ``NewGrant`` s after
  checking them (the policy's ``grantable``, one-approval rules only, an approval by this person,
  ``person`` scope only for the owner or an admin); a refusal is a ``ReviewError`` on its card and
  nothing is written. ``record_decisions`` writes them with the person's decisions, in the same
  commit, also when other cards or people still have to decide.
- Undo: with an undo window, ``resume_or_wait`` writes a ``ScheduledResume`` instead of starting
  the run (the sweeper, ``hitl_app.threads.sweeper``, starts it when the window ends, in whichever
  worker takes it first); ``undo`` releases the claim, so the review is answerable again: the
  decisions of the undone submission and the grants made with them go (grants made with earlier,
  partial submissions stay, as those approvals do), and the submitter's kept card choices
  (``store.choices``) come back. Only the submitter or an admin may
  undo. Both are review events (``store.desk``) beside the audit.
- ``desk_rows`` + ``with_desk`` add the ``DeskView`` to a thread view (deadline, escalation, undo window
  with each card's decision in words, ``review.decided``, grants); ``ThreadService.load`` reads the
  rows beside the cards.
"""

# Tested by: tests/integration/threads/test_review_desk.py

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hitl_app.review.decided import decided_lines
from hitl_app.review.desk_policy import DEFAULT_DESK, ToolDesk, review_deadline, undo_window
from hitl_app.review.grants import GRANT_SCOPES, GrantError, GrantRequest, check_grant, grant_refusal, scope_text
from hitl_app.review.rights import Card, Person, ToolRights, check_decision, rights_in_force
from hitl_app.review.rights_policy import DEFAULT_RIGHTS
from hitl_app.review.risk_policy import NO_RISK, ToolRisk
from hitl_app.review.types import AnyDecision, PendingReview, decision_payload
from hitl_app.review.validate import ReviewError, already_decided_text
from hitl_app.store import choices, reviews
from hitl_app.store import desk as desk_store
from hitl_app.store import grants as grant_store
from hitl_app.store.desk_tables import ReviewEvent, ReviewExpiry, ScheduledResume
from hitl_app.store.tables import utcnow
from hitl_app.threads.decide import is_admin
from hitl_app.threads.desk_view import DeskView, GrantRow
from hitl_app.threads.grant_check import InterruptGrants
from hitl_app.threads.people import current_people
from hitl_app.threads.types import ThreadError
from hitl_app.threads.views import ThreadView

if TYPE_CHECKING:
    from hitl_app.threads.service import ThreadService

log = logging.getLogger("hitl_app.desk")


DeskRows = tuple[ReviewExpiry | None, ScheduledResume | None, str, dict[int, str]]
"""A pending review's desk rows (``ReviewDesk.desk_rows``): its expiry row, its undo window row, the owner's name,
and who decided each card (card index -> names; read only while an undo window is open)."""


class ReviewDesk:
    """Deadlines, grants and undo for one thread service (see the module).

    Args:
        service: the thread service it belongs to.
        desks: tool name -> its desk settings (a tool not named: none of them).
        risks: tool name -> its risk (a high-risk tool takes no grant).

    Attributes:
        interrupt_grants: the grant check on a review as it arrives, from any agent (the run
            driver's ``on_interrupt``; ``hitl_app.threads.grant_check.InterruptGrants``).
    """

    def __init__(
        self, service: ThreadService, desks: Mapping[str, ToolDesk] | None = None,
        risks: Mapping[str, ToolRisk] | None = None,
    ) -> None:
        self.service = service
        self.desks = dict(desks or {})
        self.risks = dict(risks or {})
        self.interrupt_grants = InterruptGrants(service)

    def grant_refusal(self, tool: str) -> str:
        """Why no grant may cover ``tool`` (``review.grants.grant_refusal``), ``""`` when one may."""
        return grant_refusal(
            tool, grantable=self.desk(tool).grantable, rights=self.service.rights.get(tool, DEFAULT_RIGHTS),
            risk_high=self.risks.get(tool, NO_RISK).high,
        )

    def desk(self, tool: str) -> ToolDesk:
        """The tool's desk settings."""
        return self.desks.get(tool, DEFAULT_DESK)

    # ---------------------------------------------------------------- rights after an escalation
    async def rights_for(self, review: PendingReview | None) -> dict[str, ToolRights]:
        """The review rights in force for ``review``: the policy's, widened to the escalation role
        once its deadline escalated it."""
        if review is None:
            return dict(self.service.rights)
        async with self.service._session() as session:
            expiry = await desk_store.get_expiry(session=session, interrupt_id=review.interrupt_id)
        return self.rights_with(review, expiry)

    def rights_with(self, review: PendingReview, expiry: ReviewExpiry | None) -> dict[str, ToolRights]:
        """``rights_for`` with the review's expiry row as read by the caller (``store.desk.get_expiry``)."""
        rights = dict(self.service.rights)
        if expiry is None or expiry.status != "escalated" or not expiry.escalate_to:
            return rights
        for action in review.action_requests:
            rights[action.name] = rights_in_force(self.service.rights, action.name, expiry.escalate_to)
        return rights

    # ---------------------------------------------------------------- grants
    async def checked_grants(
        self, review: PendingReview, typed: Sequence[AnyDecision | None], raw: Any, person: Person, owner_id: str,
        rights: Mapping[str, ToolRights],
    ) -> list[grant_store.NewGrant]:
        """``check_grants`` for a submission; the cards and the owner's name (database reads) are
        read only when some entry of ``raw`` asks for a grant. Raises as ``check_grants``."""
        if not isinstance(raw, list) or all(entry is None for entry in raw):
            return self.check_grants(review, typed, raw, person, owner_id, [])
        cards = (await self.service._cards_now(review, owner_id, rights))[0]
        return self.check_grants(review, typed, raw, person, owner_id, cards, await self.owner_name(owner_id))

    def check_grants(
        self, review: PendingReview, typed: Sequence[AnyDecision | None], raw: Any, person: Person, owner_id: str,
        cards: Sequence[Card], owner_name: str = "",
    ) -> list[grant_store.NewGrant]:
        """The grants ``raw`` asks for (one entry per card, or None), checked; nothing is written.

        Raises:
            ReviewError: ``bad_request`` / ``not_grantable`` / ``forbidden`` on the card concerned.
        """
        if raw is None:
            return []
        if not isinstance(raw, list) or len(raw) != len(review.action_requests):
            raise ReviewError("Send one grant entry per card (or none).", code="bad_request")
        out = []
        for index, entry in enumerate(raw):
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
        async with self.service._session() as session:
            found = (await current_people(session=session, account_ids=[owner_id])).get(owner_id)
        return found.display_name if found is not None else ""

    async def list_grants(self, person: Person) -> list[GrantRow]:
        """The grants ``person`` made or that cover their threads (every grant for an admin), newest first."""
        async with self.service._session() as session:
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
        async with self.service._session() as session:
            grant = await grant_store.get_grant(session=session, grant_id=grant_id)
            if grant is None:
                raise ThreadError("No such grant.", code="not_found")
            if not self._may_revoke(grant, person):
                raise ThreadError("Only the person who made the grant, the owner or an admin may revoke it.", code="forbidden")
            if not await grant_store.revoke_grant(session=session, grant_id=grant_id, by=person.display_name):
                raise ThreadError("This grant was revoked already.", code="too_late")
        log.info("grant revoked id=%s by=%s", grant_id, person.account_id)

    # ---------------------------------------------------------------- submit and undo
    async def resume_or_wait(
        self, review: PendingReview, decisions: list[AnyDecision], owner_id: str, person: Person
    ) -> str | None:
        """Resume at once (the run id) or open the undo window (None)."""
        seconds = undo_window([a.name for a in review.action_requests], self.desks)
        if seconds <= 0:
            return await self.service._resume(review, decisions, owner_id)
        now = utcnow()
        row = ScheduledResume(
            interrupt_id=review.interrupt_id, thread_id=review.thread_id, owner_id=owner_id,
            decisions=[decision_payload(d) for d in decisions], due_at=now + timedelta(seconds=seconds),
            by_id=str(person.account_id)[:100], by_name=person.display_name[:100],
        )
        async with self.service._session() as session:
            await desk_store.schedule_resume(session=session, row=row)
            await desk_store.add_event(
                session=session, event=self._event(review, "submitted", person, f"runs in {seconds} s unless undone")
            )
        return None

    async def undo(self, thread_id: str, interrupt_id: str, person: Person) -> None:
        """Undo a submission in its window: the review is answerable again, as before the submit.

        Only the person whose submission opened the window, or an admin, may undo it: an undo
        withdraws that person's decisions, and another reviewer's approval is not a member's to
        take back (the owner included).

        Raises:
            ThreadError: ``forbidden`` (not the person who submitted, nor an admin),
                ``too_late`` (the window ended, or it was undone already).
        """
        async with self.service._session() as session:
            row = await desk_store.get_resume(session=session, interrupt_id=str(interrupt_id))
        if row is None or row.thread_id != thread_id:
            raise ThreadError("There is no submission to undo.", code="too_late")
        who = str(person.account_id)
        if not self.may_undo(row.by_id, person):
            raise ThreadError(f"Only {row.by_name or 'the person who submitted'}, whose submission started this, "
                              "or an admin may undo it.", code="forbidden")
        async with self.service._session() as session:
            if not await desk_store.undo_resume(session=session, interrupt_id=row.interrupt_id, now=utcnow()):
                raise ThreadError("Too late to undo: the agent has already gone on.", code="too_late")
            await reviews.release_claim(session=session, interrupt_id=row.interrupt_id)  # and its grants
            await choices.reopen_choices(session=session, interrupt_id=row.interrupt_id, account_id=row.by_id)
            await desk_store.add_event(session=session, event=ReviewEvent(
                thread_id=thread_id, interrupt_id=row.interrupt_id, kind="undone", account_id=who[:100],
                display_name=person.display_name[:100], role=str(person.role)[:20], note="submission undone",
            ))
        await self.service.bus.reviews.announce()  # answerable again: every inbox re-reads

    @staticmethod
    def may_undo(submitted_by: str, person: Person) -> bool:
        """True when ``person`` may undo a submission made by account ``submitted_by`` (that
        person, or an admin)."""
        return str(person.account_id) == submitted_by or is_admin(person)

    async def refuse_if_decided(self, interrupt_id: str, person: Person) -> None:
        """Refuse a submission on a review whose claim is written (e.g. waiting out its undo window).

        Raises ReviewError(code="already_decided"), naming who submitted (or who decided each card).
        """
        async with self.service._session() as session:
            names = await reviews.claimed_by(session=session, interrupt_id=interrupt_id)
            if names is None:
                return
            row = await desk_store.get_resume(session=session, interrupt_id=interrupt_id)
        who = row.by_name if row is not None and row.status == "pending" and row.by_name else " and ".join(names)
        if row is not None and row.by_id == str(person.account_id):
            who = "You"
        raise ReviewError(already_decided_text(who), code="already_decided")

    async def holds(self, interrupt_id: str) -> bool:
        """True while the review waits out an undo window (its claim must not be released)."""
        async with self.service._session() as session:
            row = await desk_store.get_resume(session=session, interrupt_id=interrupt_id)
        return row is not None and row.status in ("pending", "running")

    # ---------------------------------------------------------------- what the cards show
    async def desk_rows(self, review: PendingReview, owner_id: str) -> DeskRows:
        """What ``with_desk`` reads of ``review`` (``DeskRows``)."""

        async def rows() -> tuple[ReviewExpiry | None, ScheduledResume | None, dict[int, str]]:
            async with self.service._session() as session:
                expiry = await desk_store.get_expiry(session=session, interrupt_id=review.interrupt_id)
                resume = await desk_store.get_resume(session=session, interrupt_id=review.interrupt_id)
                by = await reviews.reviewers_by_card(session=session, interrupt_id=review.interrupt_id) if resume else {}
                return expiry, resume, by

        (expiry, resume, by), owner_name = await asyncio.gather(rows(), self.owner_name(owner_id))
        return expiry, resume, owner_name, by

    def with_desk(
        self, view: ThreadView, cards: Sequence[Card], person: Person, owner_id: str, rows: DeskRows,
        requested_at: datetime | None,
    ) -> ThreadView:
        """``view`` (a review pending) with its ``DeskView`` from ``rows`` (``desk_rows``) and when the
        review was first shown (``requested_at``, aware UTC; None: not recorded)."""
        review = view.pending
        assert review is not None
        expiry, resume, owner_name, by = rows
        desk = DeskView(
            server_now=utcnow(), requested_at=requested_at, owner_name=owner_name,
            viewer_is_owner=str(person.account_id) == owner_id,
        )
        if requested_at is not None:
            deadline = review_deadline(requested_at, [a.name for a in review.action_requests], self.desks)
            if deadline is not None:
                desk.deadline_at, desk.deadline_tool = deadline.due_at, deadline.tool
                desk.on_timeout, desk.escalate_to = deadline.desk.on_timeout, deadline.desk.escalate_to
        if expiry is not None and expiry.status == "escalated":
            desk.escalated_to = expiry.escalate_to or ""
        if resume is not None and resume.status == "pending":
            desk.undo_until, desk.undo_by = resume.due_at, resume.by_name
            desk.viewer_may_undo = self.may_undo(resume.by_id, person)
            desk.overtaken_by = "" if resume.by_id == str(person.account_id) else resume.by_name
            desk.decided = decided_lines(review, resume.decisions or [], by)
        for card in cards:
            scopes, note = self.grant_scopes(card, person, owner_id)
            desk.grant_scopes.append(scopes)
            desk.grant_notes.append(note)
        return view.model_copy(update={"desk": desk})

    @staticmethod
    def _event(review: PendingReview, kind: str, person: Person | None, note: str) -> ReviewEvent:
        return ReviewEvent(
            thread_id=review.thread_id, interrupt_id=review.interrupt_id, kind=kind,
            account_id=str(person.account_id)[:100] if person else "",
            display_name=person.display_name[:100] if person else "policy",
            role=str(person.role)[:20] if person else "policy", note=note[:500],
        )
