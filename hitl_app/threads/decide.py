"""Review rights at the server: the cards of a pending review with the decisions drafted on them,
what a person may see and decide, and the recording of one person's decisions.

The rules themselves are ``hitl_app.review.rights`` (pure). Here they meet the stored drafts
(``hitl_app.store.drafts``): ``record_decisions`` reads the drafts, checks every decision of the
acting person against the rights of its card, writes them, and, when they decide the last open
card, writes the review's claim (audit rows) in the same transaction; the caller then resumes the
run. The grants the person asked for with their approvals are written in that transaction too,
whether or not it completes the review. A writer that raced another re-reads and re-checks
(``DraftConflict``), so two approvals sent at once from two sessions give one complete card and
one resume.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.logsafe import one_log_line
from hitl_app.review import draft
from hitl_app.review.rights import (
    APPROVING,
    DEFAULT_RIGHTS,
    OWNER,
    ROLES,
    Card,
    Person,
    RecordedDecision,
    ToolRights,
    check_decision,
    may_decide,
    progress,
    who_else_may_decide,
    who_may_decide,
)
from hitl_app.review.types import DECISION_STYLES, AnyDecision, Decision, EditDecision, PendingReview, decision_payload
from hitl_app.review.validate import ReviewError
from hitl_app.store import drafts as drafts_store
from hitl_app.store import grants as grant_store
from hitl_app.store.reviews import DecidedBy, audit_rows, requested_at
from hitl_app.store.tables import AuditRecord, DecisionDraft, utcnow
from hitl_app.threads.requalify import requalify
from hitl_app.threads.types import ThreadError
from hitl_app.threads.views import CardStatus

log = logging.getLogger("hitl_app.review")

MAX_ATTEMPTS = 8
"""How often ``record_decisions`` re-reads after losing a race before giving up."""

_DECISION = TypeAdapter(Decision)


@dataclass(frozen=True)
class BrowserPerson:
    """A person known only by a browser id (no accounts yet): a member who owns their threads.

    ``account_id`` is the browser id (the threads' owner string); ``display_name`` plain text.
    """

    account_id: str
    display_name: str = "anonymous"
    role: str = "member"
    email: str = ""


def is_admin(person: Person) -> bool:
    """True for the admin role."""
    return str(person.role) == "admin"


def cards_for(
    review: PendingReview, owner_id: str, rights: Mapping[str, ToolRights], drafts: Sequence[DecisionDraft]
) -> list[Card]:
    """One ``Card`` per action request of ``review``, with the decisions drafted on it (in order).

    ``owner_id`` is the thread's owner (the person who asked); a tool ``rights`` does not name
    has ``DEFAULT_RIGHTS`` (the owner decides alone).
    """
    cards = []
    for index, (action, config) in enumerate(zip(review.action_requests, review.review_configs, strict=True)):
        recorded = [
            RecordedDecision(d.account_id, d.display_name, d.decision_type, d.role or "")
            for d in drafts
            if d.action_index == index
        ]
        cards.append(
            Card.for_request(
                {"name": action.name, "args": action.args}, config.allowed_decisions, owner_id=owner_id,
                rights=rights.get(action.name, DEFAULT_RIGHTS), recorded=recorded,
            )
        )
    return cards


def may_view(cards: Sequence[Card], person: Person, owner_id: str) -> bool:
    """The owner, an admin, or someone who may decide a pending card may open the thread."""
    if owner_id and str(person.account_id) == owner_id:
        return True
    return is_admin(person) or any(may_decide(card, person).may_decide for card in cards)


def card_statuses(
    cards: Sequence[Card], person: Person, dropped: Mapping[int, Sequence[str]] | None = None, *, owner_name: str = ""
) -> list[CardStatus]:
    """What each card shows ``person``: progress, who decided, the buttons they may use and why not.

    ``dropped``: card index -> why earlier approvals no longer count (``requalify``), added to
    the card's progress line. ``owner_name``: the thread owner's display name, whom a card only
    they may decide waits for (``CardStatus.others``)."""
    out = []
    for index, card in enumerate(cards):
        state, rights = progress(card), may_decide(card, person)
        why = "; ".join((dropped or {}).get(index, ()))
        out.append(
            CardStatus(
                index=index,
                progress=state.text + (f" ({why})" if why else ""),
                show_progress=state.needed > 1 or bool(card.recorded) or bool(why),
                complete=state.complete,
                needed=state.needed,
                deciders=[f"{r.display_name} {_past(r.type)}" for r in card.recorded],
                allowed=list(rights.allowed),
                note=rights.note,
                who=who_may_decide(card.rule),
                standing=draft.standing(complete=state.complete, allowed=rights.allowed, tool_allows=card.allowed_decisions),
                remaining=state.remaining,
                yours=any(r.account_id == str(person.account_id) for r in card.recorded),
                others=who_else_may_decide(card.rule) or owner_name,
            )
        )
    return out


def _past(decision_type: str) -> str:
    style = DECISION_STYLES.get(decision_type)  # type: ignore[call-overload]
    return style.past if style is not None else decision_type


def asked(card: Card) -> str:
    """Who the card's rule asks, for the audit filter: ``"|reviewer|admin|dana@example.com|"``."""
    entries: list[str] = []
    for entry in card.rule.reviewers:
        if entry == OWNER:
            continue
        if entry in ROLES:
            entries += [r for r in ROLES[ROLES.index(entry):] if r not in entries]
        elif entry.casefold() not in entries:
            entries.append(entry.casefold())
    return "|" + "|".join(entries) + "|" if entries else ""


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


def _final(cards: Sequence[Card], payloads: Sequence[Sequence[dict[str, Any]]]) -> tuple[list[AnyDecision], list[DecidedBy]]:
    """The decision each (complete) card resumes with, and who decided it, for the audit rows."""
    decisions, who = [], []
    for card, card_payloads in zip(cards, payloads, strict=True):
        state = progress(card)
        assert state.final is not None, "every card is complete"
        at = next(i for i, r in enumerate(card.recorded) if r is state.final)
        decisions.append(_DECISION.validate_python(card_payloads[at]))
        names = " and ".join(state.approvers) if state.final.type in APPROVING else state.final.display_name
        who.append(DecidedBy(
            reviewer=names, reviewer_id=state.final.account_id, reviewer_role=state.final.role,
            deciders=tuple({"account_id": r.account_id, "display_name": r.display_name, "role": r.role, "type": r.type}
                           for r in card.recorded),
            asked=asked(card),
        ))
    return decisions, who


async def _claim(
    session: Callable[[], AsyncSession], review: PendingReview, cards: Sequence[Card], counted: Sequence[DecisionDraft],
    new: Sequence[drafts_store.NewDraft], now: datetime, first: FirstRead | None,
) -> tuple[list[AnyDecision], list[AuditRecord]]:
    """The decisions the complete ``cards`` resume with and the review's claim (its audit rows),
    from the drafts that count and the ``new`` ones; reads the requested time unless ``first`` has it."""
    payloads = [[d.decision for d in counted if d.action_index == i] for i in range(len(cards))]
    for entry in new:
        payloads[entry.action_index].append(entry.decision)
    decisions, who = _final(cards, payloads)
    async with session() as s:  # (no query when ``first`` gave the time and no grant approved a card)
        known = (first.requested_at or now) if first is not None else None
        requested = known or await requested_at(session=s, interrupt_id=review.interrupt_id, now=now)
        claim = audit_rows(review=review, decisions=decisions, who=who, requested=requested, now=now)
        await grant_store.name_granted(session=s, rows=claim)  # cards a grant approved
    return decisions, claim


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
    whole: bool = True,
    first: FirstRead | None = None,
) -> Recorded:
    """Check and write ``person``'s decisions on ``review`` (``None`` = not this card).

    ``whole``: ``person`` must decide every card still theirs (``check_whole``, on each attempt).
    ``first``: the drafts and the requested time as the caller read them (the first attempt then
    reads neither; a writer that raced it is caught by the write, and the retry re-reads).

    ``before_claim`` runs just before a claim is written (e.g. the run limits' check; it raises to
    refuse). ``grants`` (checked by ``ReviewDesk.check_grants``) are written with the decisions, in
    the same commit, whether or not these decide the last card (``completing`` when they do).
    Raises ReviewError: ``count`` (a card of theirs left out), ``forbidden`` (the rights refuse a decision; logged),
    ``stale`` (the review was decided meanwhile, or too many concurrent writers).
    """
    for attempt in range(MAX_ATTEMPTS):
        if attempt == 0 and first is not None:
            drafts = first.drafts
        else:
            async with session() as s:
                drafts = await drafts_store.read_drafts(session=s, interrupt_id=review.interrupt_id)
        counted = await requalify(session=session, review=review, owner_id=owner_id, rights=rights, drafts=drafts)
        before = cards_for(review, owner_id, rights, counted.drafts)
        if whole:
            check_whole(before, typed, person)
        cards = _apply(before, typed, person)
        new = [
            drafts_store.NewDraft(i, str(person.account_id), person.display_name, str(person.role), decision_payload(d))
            for i, d in enumerate(typed) if d is not None
        ]
        complete = all(progress(card).complete for card in cards)
        claim: list[AuditRecord] = []
        decisions: list[AnyDecision] | None = None
        now = utcnow()
        if complete:
            before_claim()
            decisions, claim = await _claim(session, review, cards, counted.drafts, new, now, first)
        try:
            async with session() as s:
                await drafts_store.write_drafts(
                    session=s, thread_id=review.thread_id, interrupt_id=review.interrupt_id,
                    base_seq=drafts_store.next_seq(drafts), drafts=new, claim=claim, now=now,
                    also=grant_store.grant_rows(grants, now=now, completing=complete),
                )
        except drafts_store.DraftConflict:
            continue  # someone decided meanwhile: re-read, re-check
        except drafts_store.AlreadyDecided:
            raise ReviewError("This review was already decided.", code="stale") from None
        return Recorded(cards, decisions, counted.dropped)
    raise ReviewError("Too many people are deciding this review at once; try again.", code="stale")
