"""The final decisions of a review: the ONE door every path that resumes a run goes through.

``final_decisions`` builds them from the drafts as stored now and the rights as they are now:
``requalify`` drops approvals whose deciders were disabled or demoted and approvals of grants that
were revoked, expired, or whose maker may no longer approve alone; then every card must be complete.
Its callers:

- Submit (``hitl_app.desk.decide.record_decisions``): the person's new drafts, checked on the cards
  (``check``), then the claim when they decide the last open card;
- the deadline (``hitl_app.desk.sweeper``): ``expiry`` rejects every open card by the policy, a card
  whose approval no longer counts included, saying why;
- the end of an undo window and a restart (``hitl_app.desk.sweeper``, from the stored drafts: a
  submission that no longer counts does not run);
- the grants on a review as it arrives (``hitl_app.desk.grant_check.InterruptGrants``).

Nothing is written here; the caller writes the claim with its drafts (``store.drafts.write_drafts``,
exactly once across workers) and resumes the run with ``Final.decisions``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import TypeAdapter
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.desk.cards import cards_for
from hitl_app.desk.requalify import requalify
from hitl_app.review.desk_policy import policy_rejection, policy_rejection_note
from hitl_app.review.rights import APPROVING, OWNER, ROLES, Card, ToolRights, progress
from hitl_app.review.types import AnyDecision, Decision, PendingReview, RejectDecision, decision_payload
from hitl_app.store import grants as grant_store
from hitl_app.store.drafts import NewDraft
from hitl_app.store.review_requests import requested_at
from hitl_app.store.reviews import DecidedBy, audit_rows
from hitl_app.store.tables import AuditRecord, DecisionDraft

_DECISION = TypeAdapter(Decision)

POLICY = "policy"
"""The decider id, name and role of a card the deadline rejected."""


@dataclass(frozen=True)
class Expiry:
    """A deadline that rejects the open cards: the deadline of ``tool`` (``deadline_s`` seconds)
    passed; ``custom(tool)`` is the policy's ``timeout_message`` for a tool ("" none). Each open
    card's message and audit text say which card's deadline it was (``desk_policy.policy_rejection``).
    """

    tool: str
    deadline_s: float
    custom: Callable[[str], str]

    def card_of(self, cards: Sequence[Card]) -> int:
        """The index of the card whose deadline passed: the first open card of ``tool`` (else its first card)."""
        of_tool = [i for i, card in enumerate(cards) if card.tool == self.tool]
        open_ones = [i for i in of_tool if not progress(cards[i]).complete]
        return (open_ones or of_tool or [0])[0]

    def message(self, cards: Sequence[Card], index: int) -> str:
        """What the model reads for card ``index``."""
        at, tool = self.card_of(cards), cards[index].tool
        custom = self.custom(tool) if index == at else ""
        return policy_rejection(tool=tool, card=index, deadline_card=at, deadline_s=self.deadline_s, custom=custom)

    def note(self, cards: Sequence[Card], index: int) -> str:
        """The audit text for card ``index``."""
        return policy_rejection_note(card=index, deadline_card=self.card_of(cards), deadline_s=self.deadline_s)


@dataclass
class Final:
    """What ``final_decisions`` found.

    Attributes:
        cards: the cards with the drafts that count (the new ones included).
        dropped: card index -> why approvals drafted on it no longer count (``requalify``).
        decisions: one per card to resume with, or None while a card is open.
        claim: the review's audit rows to write with the drafts (empty while a card is open).
        added: the drafts ``expiry`` adds (the policy's rejections), to write with the claim.
    """

    cards: list[Card]
    dropped: dict[int, list[str]]
    decisions: list[AnyDecision] | None = None
    claim: list[AuditRecord] = field(default_factory=list)
    added: list[NewDraft] = field(default_factory=list)


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


def decided_by(
    cards: Sequence[Card], payloads: Sequence[Sequence[dict]], vias: Sequence[Sequence[str | None]] | None = None
) -> tuple[list[AnyDecision], list[DecidedBy]]:
    """The decision each (complete) card resumes with, and who decided it, for the audit rows.

    ``payloads[i]``: card ``i``'s decision payloads in the order of its recorded decisions;
    ``vias[i]`` how each of them arrived (``hitl_app.review.via``), in the same order (None: unknown)."""
    decisions, who = [], []
    for index, (card, card_payloads) in enumerate(zip(cards, payloads, strict=True)):
        card_vias = list(vias[index]) if vias is not None else [None] * len(card_payloads)
        state = progress(card)
        assert state.final is not None, "every card is complete"
        at = next(i for i, r in enumerate(card.recorded) if r is state.final)
        decisions.append(_DECISION.validate_python(card_payloads[at]))
        names = " and ".join(state.approvers) if state.final.type in APPROVING else state.final.display_name
        by_policy = state.final.account_id == POLICY
        who.append(DecidedBy(
            reviewer=names, reviewer_id="" if by_policy else state.final.account_id, reviewer_role=state.final.role,
            deciders=() if by_policy else tuple(
                {"account_id": r.account_id, "display_name": r.display_name, "role": r.role, "type": r.type,
                 **({"via": str(v)} if v else {})}
                for r, v in zip(card.recorded, card_vias, strict=False)
            ),
            asked="" if by_policy else asked(card), via=None if by_policy else card_vias[at],
        ))
    return decisions, who


def _as_draft(new: NewDraft, interrupt_id: str) -> DecisionDraft:
    return DecisionDraft(
        thread_id="", interrupt_id=interrupt_id, seq=-1, action_index=new.action_index, account_id=new.account_id,
        display_name=new.display_name, role=new.role, decision_type=new.decision_type, decision=new.decision, via=new.via,
    )


def _rejections(cards: Sequence[Card], dropped: Mapping[int, Sequence[str]], expiry: Expiry) -> list[NewDraft]:
    """The policy's rejection of each open card; the model reads why an approval on it did not count."""
    out = []
    for index, card in enumerate(cards):
        if progress(card).complete:
            continue
        why = "; ".join(dropped.get(index, ()))
        message = expiry.message(cards, index) + (f" ({why}.)" if why else "")
        out.append(NewDraft(index, POLICY, POLICY, POLICY, decision_payload(RejectDecision(type="reject", message=message))))
    return out


async def final_decisions(
    *,
    session: Callable[[], AsyncSession],
    review: PendingReview,
    owner_id: str,
    rights: Mapping[str, ToolRights],
    drafts: Sequence[DecisionDraft],
    now: datetime,
    new: Sequence[NewDraft] = (),
    check: Callable[[list[Card]], None] | None = None,
    expiry: Expiry | None = None,
    requested: datetime | None = None,
) -> Final:
    """The review's final decisions and claim from ``drafts`` (as stored) and ``new`` (about to be
    written), under the rights as they are at ``now`` (aware UTC).

    Args:
        session: the app database session factory (accounts and grants are read now).
        review: the pending review.
        owner_id: its thread's owner.
        rights: the rights in force (``ReviewDesk.rights_for``: the policy, widened after an escalation).
        drafts: the review's stored drafts (``store.drafts.read_drafts``).
        now: the moment the rights are checked at (aware UTC); the claim's decision time.
        new: decisions not yet stored (a submission's, a grant's), counted after ``check``.
        check: called with the cards before ``new`` (only the drafts that count); raises to refuse
            (``ReviewError``: a submission's rights and completeness).
        expiry: a deadline: every card still open is rejected by the policy (``Final.added``).
        requested: when the review was first shown (read from its "requested" row when None).

    Returns:
        ``Final``; ``decisions`` is None while a card is still open.
    """
    counted = await requalify(session=session, review=review, owner_id=owner_id, rights=rights, drafts=drafts, now=now)
    if check is not None:
        check(cards_for(review, owner_id, rights, counted.drafts))
    merged = [*counted.drafts, *(_as_draft(n, review.interrupt_id) for n in new)]
    cards = cards_for(review, owner_id, rights, merged)
    open_cards = list(cards)  # before the policy's rejections: which card's deadline passed
    added = _rejections(cards, counted.dropped, expiry) if expiry is not None else []
    if added:
        merged += [_as_draft(n, review.interrupt_id) for n in added]
        cards = cards_for(review, owner_id, rights, merged)
    if not all(progress(card).complete for card in cards):
        return Final(cards, counted.dropped)
    payloads = [[d.decision for d in merged if d.action_index == i] for i in range(len(cards))]
    vias = [[d.via for d in merged if d.action_index == i] for i in range(len(cards))]
    decisions, who = decided_by(cards, payloads, vias)
    async with session() as s:
        when = requested or await requested_at(session=s, interrupt_id=review.interrupt_id, now=now)
        claim = audit_rows(review=review, decisions=decisions, who=who, requested=when, now=now)
        await grant_store.name_granted(session=s, rows=claim)  # cards a grant approved
    expired = {d.action_index: "; ".join(counted.dropped.get(d.action_index, ())) for d in added}
    for row in claim:
        if expiry is not None and row.action_index in expired:
            why = expired[row.action_index]
            row.via, row.message = "deadline", expiry.note(open_cards, row.action_index) + (f" ({why})" if why else "")
    return Final(cards, counted.dropped, decisions, claim, added)
