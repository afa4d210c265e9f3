"""The review desk at the server: grants made with a submission, the undo window, what cards show.

``ReviewDesk`` belongs to one ``ThreadService`` (``service.desk``): it gets a session factory,
the policy's rights, a ``resume`` callable (``ReviewClaims.resume``) and the review signal. The
policy's desk settings (``hitl_app.review.desk_policy``) say, per tool, the deadline, whether grants
are allowed and how long the undo window is.

- Grants: ``desk.grants`` (``hitl_app.desk.grant_desk.GrantDesk``) checks the grants a submission
  asks for; ``record_decisions`` writes them with the person's decisions, in the same commit, also
  when other cards or people still have to decide.
- Undo: with an undo window, ``resume_or_wait`` writes a ``ScheduledResume`` instead of starting
  the run (the sweeper, ``hitl_app.desk.sweeper``, starts it when the window ends, in whichever
  worker takes it first); ``undo`` releases the claim, so the review is answerable again: the
  decisions of the undone submission and the grants made with them go (grants made with earlier,
  partial submissions stay, as those approvals do), and the submitter's kept card choices
  (``store.choices``) come back. Only the submitter or an admin may
  undo. Both are review events (``store.desk``) beside the audit.
- ``desk_rows`` + ``with_desk`` add the ``DeskView`` to a thread view (deadline, escalation, undo window
  with each card's decision in words, ``review.decided``, grants); ``ThreadService.load`` reads the
  rows beside the cards.
"""

# Tested by: tests/integration/desk/test_review_desk.py

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.desk.cards import cards_for, is_admin, may_view
from hitl_app.desk.decide import FirstRead
from hitl_app.desk.desk_view import DeskView
from hitl_app.desk.grant_check import InterruptGrants
from hitl_app.desk.grant_desk import GrantDesk
from hitl_app.desk.requalify import requalify
from hitl_app.errors import ThreadError
from hitl_app.review.decided import decided_lines
from hitl_app.review.desk_policy import DEFAULT_DESK, ToolDesk, review_deadline, undo_window
from hitl_app.review.rights import Card, Person, ToolRights, rights_in_force
from hitl_app.review.risk_policy import ToolRisk
from hitl_app.review.types import AnyDecision, PendingReview, decision_payload
from hitl_app.review.validate import ReviewError, already_decided_text
from hitl_app.store import choices, reviews
from hitl_app.store import desk as desk_store
from hitl_app.store import drafts as drafts_store
from hitl_app.store.desk_tables import ReviewEvent, ReviewExpiry, ScheduledResume
from hitl_app.store.tables import ReviewRequestRecord, utcnow
from hitl_app.threads.views import ThreadView

log = logging.getLogger("hitl_app.desk")


Resume = Callable[[PendingReview, list[AnyDecision], str], Awaitable[str]]
"""Start the run that resumes a claimed review with its decisions for its owner; the run id
(``ReviewClaims.resume``; it releases the claim on any failure)."""

DeskRows = tuple[ReviewExpiry | None, ScheduledResume | None, str, dict[int, str]]
"""A pending review's desk rows (``ReviewDesk.desk_rows``): its expiry row, its undo window row, the owner's name,
and who decided each card (card index -> names; read only while an undo window is open)."""


class ReviewDesk:
    """Deadlines, grants and undo for one thread service (see the module).

    Args:
        session: opens an ``AsyncSession`` on the app database.
        rights: tool name -> review rights from the policy (a tool not named: the owner decides).
        resume: starts the run that resumes a claimed review (``Resume``).
        announce: tells every inbox that reviews changed (the bus's review signal).
        desks: tool name -> its desk settings (a tool not named: none of them).
        risks: tool name -> its risk (a high-risk tool takes no grant).

    Attributes:
        interrupt_grants: the grant check on a review as it arrives, from any agent (the run
            driver's ``on_interrupt``; ``hitl_app.desk.grant_check.InterruptGrants``).
    """

    def __init__(
        self, *, session: Callable[[], AsyncSession], rights: Mapping[str, ToolRights], resume: Resume,
        announce: Callable[[], Awaitable[None]], desks: Mapping[str, ToolDesk] | None = None,
        risks: Mapping[str, ToolRisk] | None = None,
    ) -> None:
        self._session = session
        self.rights = rights
        self._resume = resume
        self._announce = announce
        self.desks = dict(desks or {})
        self.risks = dict(risks or {})
        self.grants = GrantDesk(session=session, rights=rights, desk=self.desk, risks=self.risks, cards_now=self.cards_now)
        self.interrupt_grants = InterruptGrants(
            session=session, grant_refusal=self.grants.grant_refusal, rights_for=self.rights_for
        )

    def desk(self, tool: str) -> ToolDesk:
        """The tool's desk settings."""
        return self.desks.get(tool, DEFAULT_DESK)

    # ---------------------------------------------------------------- rights after an escalation
    async def rights_for(self, review: PendingReview | None) -> dict[str, ToolRights]:
        """The review rights in force for ``review``: the policy's, widened to the escalation role
        once its deadline escalated it."""
        if review is None:
            return dict(self.rights)
        async with self._session() as session:
            expiry = await desk_store.get_expiry(session=session, interrupt_id=review.interrupt_id)
        return self.rights_with(review, expiry)

    def rights_with(self, review: PendingReview, expiry: ReviewExpiry | None) -> dict[str, ToolRights]:
        """``rights_for`` with the review's expiry row as read by the caller (``store.desk.get_expiry``)."""
        rights = dict(self.rights)
        if expiry is None or expiry.status != "escalated" or not expiry.escalate_to:
            return rights
        for action in review.action_requests:
            rights[action.name] = rights_in_force(self.rights, action.name, expiry.escalate_to)
        return rights

    async def cards_now(
        self, review: PendingReview, owner_id: str, rights: Mapping[str, ToolRights] | None = None
    ) -> tuple[list[Card], dict[int, list[str]]]:
        """The review's cards with the drafted decisions that still count (``requalify``), and why
        the others do not (card index -> sentences); ``rights`` (``rights_for``) read here, beside
        the drafts, unless given."""

        async def drafted() -> list[Any]:
            async with self._session() as session:
                return await drafts_store.read_drafts(session=session, interrupt_id=review.interrupt_id)

        rights_now = self.rights_for(review) if rights is None else asyncio.sleep(0, dict(rights))
        drafts, in_force = await asyncio.gather(drafted(), rights_now)
        counted = await requalify(session=self._session, review=review, owner_id=owner_id, rights=in_force, drafts=drafts)
        return cards_for(review, owner_id, in_force, counted.drafts), counted.dropped

    async def may_read(self, thread_id: str, pending: PendingReview | None, viewer: Person, thread_owner: str) -> bool:
        """May ``viewer`` (not the owner) read the thread: an admin, someone who may decide a card of
        its ``pending`` review, or who decided (or was asked to decide) one of its cards before."""
        if may_view((await self.cards_now(pending, thread_owner))[0] if pending else [], viewer, thread_owner):
            return True
        who = str(viewer.account_id)
        async with self._session() as session:
            return await drafts_store.has_decided(session=session, thread_id=thread_id, account_id=who) or (
                await reviews.was_asked(session=session, thread_id=thread_id, role=str(viewer.role), email=viewer.email)
            )

    async def first_reads(self, interrupt_id: str) -> tuple[ReviewExpiry | None, FirstRead | None]:
        """The rows a submission needs of review ``interrupt_id`` (its expiry, its drafts and when it
        was first shown), in one session; ``(None, None)`` for an id that is not text."""
        if not isinstance(interrupt_id, str):
            return None, None
        async with self._session() as session:
            expiry = await desk_store.get_expiry(session=session, interrupt_id=interrupt_id)
            drafted = await drafts_store.read_drafts(session=session, interrupt_id=interrupt_id)
            request = await session.get(ReviewRequestRecord, interrupt_id)
        return expiry, FirstRead(drafted, request.requested_at if request is not None else None)

    # ---------------------------------------------------------------- submit and undo
    async def resume_or_wait(
        self, review: PendingReview, decisions: list[AnyDecision], owner_id: str, person: Person
    ) -> str | None:
        """Resume at once (the run id) or open the undo window (None)."""
        seconds = undo_window([a.name for a in review.action_requests], self.desks)
        if seconds <= 0:
            return await self._resume(review, decisions, owner_id)
        now = utcnow()
        row = ScheduledResume(
            interrupt_id=review.interrupt_id, thread_id=review.thread_id, owner_id=owner_id,
            decisions=[decision_payload(d) for d in decisions], due_at=now + timedelta(seconds=seconds),
            by_id=str(person.account_id)[:100], by_name=person.display_name[:100],
        )
        async with self._session() as session:
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
        async with self._session() as session:
            row = await desk_store.get_resume(session=session, interrupt_id=str(interrupt_id))
        if row is None or row.thread_id != thread_id:
            raise ThreadError("There is no submission to undo.", code="too_late")
        who = str(person.account_id)
        if not self.may_undo(row.by_id, person):
            raise ThreadError(f"Only {row.by_name or 'the person who submitted'}, whose submission started this, "
                              "or an admin may undo it.", code="forbidden")
        async with self._session() as session:
            if not await desk_store.undo_resume(session=session, interrupt_id=row.interrupt_id, now=utcnow()):
                raise ThreadError("Too late to undo: the agent has already gone on.", code="too_late")
            await reviews.release_claim(session=session, interrupt_id=row.interrupt_id)  # and its grants
            await choices.reopen_choices(session=session, interrupt_id=row.interrupt_id, account_id=row.by_id)
            await desk_store.add_event(session=session, event=ReviewEvent(
                thread_id=thread_id, interrupt_id=row.interrupt_id, kind="undone", account_id=who[:100],
                display_name=person.display_name[:100], role=str(person.role)[:20], note="submission undone",
            ))
        await self._announce()  # answerable again: every inbox re-reads

    @staticmethod
    def may_undo(submitted_by: str, person: Person) -> bool:
        """True when ``person`` may undo a submission made by account ``submitted_by`` (that
        person, or an admin)."""
        return str(person.account_id) == submitted_by or is_admin(person)

    async def refuse_if_decided(self, interrupt_id: str, person: Person) -> None:
        """Refuse a submission on a review whose claim is written (e.g. waiting out its undo window).

        Raises ReviewError(code="already_decided"), naming who submitted (or who decided each card).
        """
        async with self._session() as session:
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
        async with self._session() as session:
            row = await desk_store.get_resume(session=session, interrupt_id=interrupt_id)
        return row is not None and row.status in ("pending", "running")

    # ---------------------------------------------------------------- what the cards show
    async def desk_rows(self, review: PendingReview, owner_id: str) -> DeskRows:
        """What ``with_desk`` reads of ``review`` (``DeskRows``)."""

        async def rows() -> tuple[ReviewExpiry | None, ScheduledResume | None, dict[int, str]]:
            async with self._session() as session:
                expiry = await desk_store.get_expiry(session=session, interrupt_id=review.interrupt_id)
                resume = await desk_store.get_resume(session=session, interrupt_id=review.interrupt_id)
                by = await reviews.reviewers_by_card(session=session, interrupt_id=review.interrupt_id) if resume else {}
                return expiry, resume, by

        (expiry, resume, by), owner_name = await asyncio.gather(rows(), self.grants.owner_name(owner_id))
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
            scopes, note = self.grants.grant_scopes(card, person, owner_id)
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
