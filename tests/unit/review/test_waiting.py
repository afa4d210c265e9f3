"""Which cards wait for a person (the inbox and the reminder mail): asked, not yet decided by them,
and more than the asker's own withdraw."""

from __future__ import annotations

from hitl_app.auth.types import Principal as Person
from hitl_app.auth.types import Role
from hitl_app.review.rights import Card, ToolRights, parse_tool_rights
from hitl_app.review.waiting import approvals_left, waits_for

MIA = Person(1, "Mia", Role.MEMBER, "mia@example.com")  # asks in her own thread
MAX = Person(2, "Max", Role.MEMBER, "max@example.com")
DANA = Person(3, "Dana", Role.REVIEWER, "dana@example.com")
LEE = Person(4, "Lee", Role.REVIEWER, "lee@example.com")

TWO_PERSON = parse_tool_rights({
    "reviewers": ["reviewer"], "self_approval": False, "rules": [{"when": "amount >= 500", "approvals": 2}],
})


def card(amount: int = 500, rights: ToolRights = TWO_PERSON) -> Card:
    request = {"name": "transfer_funds", "args": {"amount": amount, "to": "Bob"}}
    return Card.for_request(request, ("approve", "reject"), owner_id=str(MIA.account_id), rights=rights)


def test_two_person_card_waits_for_each_reviewer_until_they_approve():
    c = card()
    assert waits_for(c, DANA) and waits_for(c, LEE)
    assert approvals_left(c) == 2
    after_dana = c.with_decision(DANA, "approve")
    assert not waits_for(after_dana, DANA)  # she decided: she waits for nobody
    assert waits_for(after_dana, LEE)
    assert approvals_left(after_dana) == 1
    done = after_dana.with_decision(LEE, "approve")
    assert not waits_for(done, LEE) and approvals_left(done) == 0


def test_the_asker_who_may_only_withdraw_is_not_waited_for():
    assert not waits_for(card(), MIA)  # self-approval off: she may only reject her own request


def test_a_member_not_named_by_the_policy_is_not_waited_for():
    assert not waits_for(card(), MAX)


def test_default_rights_wait_for_the_owner_only():
    c = card(amount=5, rights=ToolRights())
    assert waits_for(c, MIA)
    assert not waits_for(c, DANA)
