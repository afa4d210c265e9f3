"""Which approval cards wait for a person: the rule behind the review inbox and the reminder mail.

Pure, built on ``hitl_app.review.rights`` (the rules themselves are not changed here). A card
waits for ``person`` when all of these hold:

* the card is open (not decided) and ``may_decide`` leaves ``person`` at least one decision type;
* the policy asks them (``is_listed``: as the thread's owner, by role, or by email), so the person
  who asked is not "waiting" on their own request only because they may withdraw it (reject);
* they have not decided it yet: someone who approved toward a two-person rule waits for nobody;
* of what they may send, something is more than the asker's own withdraw (``reject`` by the
  owner), e.g. the owner of a thread whose policy forbids self-approval is not asked.
"""

from __future__ import annotations

from hitl_app.review.rights import Card, Person, is_listed, may_decide, progress


def waits_for(card: Card, person: Person) -> bool:
    """True when ``card`` waits for a decision from ``person`` (see the module docstring)."""
    me = str(person.account_id)
    is_owner = bool(card.owner_id) and me == card.owner_id
    if progress(card).complete or not is_listed(card.rule, person, is_owner=is_owner):
        return False
    if any(r.account_id == me for r in card.recorded):
        return False
    allowed = may_decide(card, person).allowed
    return any(not (is_owner and t == "reject") for t in allowed)


def approvals_left(card: Card) -> int:
    """Approvals ``card`` still needs (0 when decided); e.g. 2 for a fresh two-person card."""
    return progress(card).remaining

