"""Recording one person's decisions on a pending review at the server.

``record_decisions`` reads the drafts, checks every decision of the acting person against the rights
of its card (``hitl_app.review.rights``, on the cards of ``hitl_app.desk.cards``), and writes them;
when they decide the last open card it writes the review's claim (audit rows) in the same
transaction, built by the one door (``hitl_app.desk.final.final_decisions``); the caller then resumes
the run. The grants the person asked for with their approvals are written in that transaction too,
whether or not it completes the review. A writer that raced another re-reads and re-checks
(``DraftConflict``), so two approvals sent at once from two sessions give one complete card and
one resume.
"""

# Tested by: tests/integration/desk/test_review_rights.py, tests/integration/desk/test_final_decisions.py

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.desk.final import final_decisions
from hitl_app.errors import ThreadError
from hitl_app.logsafe import one_log_line
from hitl_app.review import draft
from hitl_app.review.rights import Card, Person, ToolRights, check_decision, may_decide, progress
from hitl_app.review.types import AnyDecision, EditDecision, PendingReview, decision_payload
from hitl_app.review.validate import ReviewError
from hitl_app.review.via import PAGE, PersonVia
from hitl_app.store import drafts as drafts_store
from hitl_app.store import grants as grant_store
from hitl_app.store.tables import DecisionDraft, utcnow

log = logging.getLogger("hitl_app.review")

MAX_ATTEMPTS = 8
"""How often ``record_decisions`` re-reads after losing a race before giving up."""


@dataclass(frozen=True)
class FirstRead:
    """What the caller read for ``record_decisions``'s first attempt, beside the checkpoint, under
    the thread lock: the review's drafts (``store.drafts.read_drafts``) and when it was first shown
    (its "requested" row's time; None when it has none)."""

    drafts: list[DecisionDraft]
    requested_at: datetime | None


@dataclass
class Recorded:
    """What ``record_decisions`` did.

    Attributes:
        cards: the cards after the decisions, with every decision drafted so far.
        decisions: the review's decisions to resume with when these decided the last open card
            (the claim is written), else None (others still have to decide).
        dropped: card index -> why approvals drafted earlier no longer count (``requalify``).
    """

    cards: list[Card]
    decisions: list[AnyDecision] | None
    dropped: dict[int, list[str]] = field(default_factory=dict)


def log_refusal(thread_id: str, interrupt_id: Any, person: Person | None, exc: ReviewError | ThreadError) -> None:
    """Log a refused submission as one safe line (who, which card, why; client text escaped)."""
    who = "signed-out" if person is None else one_log_line(str(person.account_id), limit=100)
    role = "" if person is None else one_log_line(str(person.role), limit=20)
    log.warning(
        "review decision refused thread=%s interrupt=%s card=%s account=%s role=%s code=%s: %s",
        one_log_line(str(thread_id), limit=64), one_log_line(str(interrupt_id), limit=64),
        getattr(exc, "card_index", None), who, role, exc.code, one_log_line(exc.message, limit=300),
    )


def _apply(cards: list[Card], typed: Sequence[AnyDecision | None], person: Person) -> list[Card]:
    """The cards with ``person``'s decisions on them. Raises ReviewError for the first decision the
    rights refuse (``forbidden``) or whose card is decided already (``stale``)."""
    out = list(cards)
    for index, decision in enumerate(typed):
        if decision is None:
            continue
        edited = decision.edited_action.args if isinstance(decision, EditDecision) else None
        state = progress(out[index])
        if state.complete:
            message = f"Card {index + 1} ({out[index].tool}) is already decided ({state.text})."
            raise ReviewError(message, card_index=index, code="stale")
        verdict = check_decision(out[index], person, decision.type, edited_args=edited)
        if not verdict.allowed:
            message = f"Card {index + 1} ({out[index].tool}): {verdict.message.rstrip('.')}."
            raise ReviewError(message, card_index=index, code="forbidden")
        out[index] = out[index].with_decision(person, decision.type, edited_args=edited)
    return out


def check_whole(cards: Sequence[Card], typed: Sequence[AnyDecision | None], person: Person) -> None:
    """Refuse a submission that leaves out a card ``person`` may still decide (case C5).

    ``cards`` are the review's cards before these decisions. A card is ``person``'s to decide when
    it is not complete and its standing for them is ``open`` (``draft.standing``); a card they may
    only withdraw (reject) while it waits for someone else is not, nor a complete one.

    Raises:
        ReviewError: ``count`` with "Decide every card that is yours before submitting: 1 of 3
            decided; card 2 (write_file) has no decision yet."; nothing is written.
    """
    own = [
        i for i, card in enumerate(cards)
        if draft.standing(complete=progress(card).complete, allowed=may_decide(card, person).allowed,
                          tool_allows=card.allowed_decisions) == draft.OPEN
    ]
    missing = [i for i in own if i >= len(typed) or typed[i] is None]
    if missing:
        first = missing[0]
        raise ReviewError(
            f"Decide every card that is yours before submitting: {len(own) - len(missing)} of {len(own)} decided; "
            f"card {first + 1} ({cards[first].tool}) has no decision yet.", code="count",
        )


async def record_decisions(
    *,
    session: Callable[[], AsyncSession],
    review: PendingReview,
    typed: Sequence[AnyDecision | None],
    person: Person,
    owner_id: str,
    rights: Mapping[str, ToolRights],
    before_claim: Callable[[], None] = lambda: None,
    grants: Sequence[grant_store.NewGrant] = (),
    whole: bool = True, first: FirstRead | None = None, via: PersonVia = PAGE,
) -> Recorded:
    """Check and write ``person``'s decisions on ``review`` (``None`` = not this card).

    ``whole``: ``person`` must decide every card still theirs (``check_whole``, on each attempt). ``via``:
    their door (``hitl_app.review.via``), kept on each draft and the audit row of a card they complete.
    ``first``: the drafts and the requested time as the caller read them (the first attempt then
    reads neither; a writer that raced it is caught by the write, and the retry re-reads).

    ``before_claim`` runs before a claim is written (the run limits' check; raises to refuse). ``grants``
    (``GrantDesk.check_grants``) are written in the same commit (``completing`` when these decide it).
    Raises ReviewError: ``count`` (a card of theirs left out), ``forbidden`` (the rights refuse; logged), ``stale``.
    """
    new = [
        drafts_store.NewDraft(i, str(person.account_id), person.display_name, str(person.role), decision_payload(d), via)
        for i, d in enumerate(typed) if d is not None
    ]

    def check(cards: list[Card]) -> None:
        if whole:
            check_whole(cards, typed, person)
        _apply(cards, typed, person)

    for attempt in range(MAX_ATTEMPTS):
        if attempt == 0 and first is not None:
            drafts = first.drafts
        else:
            async with session() as s:
                drafts = await drafts_store.read_drafts(session=s, interrupt_id=review.interrupt_id)
        now = utcnow()
        final = await final_decisions(
            session=session, review=review, owner_id=owner_id, rights=rights, drafts=drafts, now=now, new=new,
            check=check, requested=(first.requested_at or now) if first is not None else None,
        )
        if final.decisions is not None:
            before_claim()
        try:
            async with session() as s:
                await drafts_store.write_drafts(
                    session=s, thread_id=review.thread_id, interrupt_id=review.interrupt_id,
                    base_seq=drafts_store.next_seq(drafts), drafts=new, claim=final.claim, now=now,
                    also=grant_store.grant_rows(grants, now=now, completing=final.decisions is not None),
                )
        except drafts_store.DraftConflict:
            continue  # someone decided meanwhile: re-read, re-check
        except drafts_store.AlreadyDecided:
            raise ReviewError("This review was already decided.", code="stale") from None
        return Recorded(final.cards, final.decisions, final.dropped)
    raise ReviewError("Too many people are deciding this review at once; try again.", code="stale")
