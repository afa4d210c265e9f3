"""Whom a new review may concern (``hitl_app.review.audience``): never narrower than ``waits_for``,
the people it leaves out really are not waited for, and a tab reads whenever it cannot tell."""

from __future__ import annotations

import itertools

from hitl_app.auth.types import Principal as Person
from hitl_app.auth.types import Role
from hitl_app.review.audience import Audience, audience_of, policy_key
from hitl_app.review.rights import Card, parse_tool_rights
from hitl_app.review.waiting import waits_for

MIA = Person(1, "Mia", Role.MEMBER, "mia@example.com")  # asks in her own threads
MAX = Person(2, "Max", Role.MEMBER, "Max@Example.com")
DANA = Person(3, "Dana", Role.REVIEWER, "dana@example.com")
ADA = Person(4, "Ada", Role.ADMIN, "ada@example.com")
PEOPLE = (MIA, MAX, DANA, ADA)

RIGHTS = {
    "transfer_funds": parse_tool_rights({
        "reviewers": ["reviewer"], "self_approval": False,
        "rules": [{"when": "amount > 1000", "approvals": 2, "reviewers": ["admin", "max@example.com"]}],
    }),
    "send_email": parse_tool_rights({"reviewers": ["owner", "reviewer"]}),
    "drop_table": parse_tool_rights({"reviewers": ["admin"]}),
}
ARGS = {"transfer_funds": ({"amount": 5}, {"amount": 5000}), "send_email": ({"to": "a"},),
        "drop_table": ({},), "read_notes": ({},)}  # read_notes: not in the policy, the owner decides


def test_everyone_a_new_card_waits_for_is_in_its_audience():
    for tool, people in itertools.product(ARGS, (MIA, MAX)):
        audience = audience_of([tool], RIGHTS, str(people.account_id))
        for args, person in itertools.product(ARGS[tool], PEOPLE):
            card = Card.for_request({"name": tool, "args": args}, ("approve", "reject"),
                                    owner_id=str(people.account_id), rights=RIGHTS.get(tool, Card.rights))
            if waits_for(card, person):
                assert audience.concerns(person, policy_key(RIGHTS)), (tool, args, person.display_name)


def test_who_is_left_out():
    key = policy_key(RIGHTS)
    mail = audience_of(["send_email"], RIGHTS, "1")
    assert (mail.roles, mail.emails) == (("reviewer",), ())
    assert [p.display_name for p in PEOPLE if mail.concerns(p, key)] == ["Mia", "Dana", "Ada"]  # not Max
    drop = audience_of(["drop_table"], RIGHTS, "1")
    assert [p.display_name for p in PEOPLE if drop.concerns(p, key)] == ["Mia", "Ada"]  # the owner is always in
    pay = audience_of(["transfer_funds"], RIGHTS, "1")  # every rule, whatever the arguments: Max by email
    assert pay.emails == ("max@example.com",) and all(pay.concerns(p, key) for p in PEOPLE)
    own = audience_of(["read_notes"], RIGHTS, "2")
    assert [p.display_name for p in PEOPLE if own.concerns(p, key)] == ["Max"]


def test_a_tab_reads_whenever_it_cannot_tell():
    own = audience_of(["read_notes"], RIGHTS, "2")
    assert own.concerns(MIA, "another policy")  # the announcer had other rights
    assert Audience.from_json(own.to_json()) == own
    for bad in (None, "x", {}, {"o": 2, "r": [], "e": [], "p": "k"}, {"o": "2", "r": "reviewer", "e": [], "p": "k"},
                {"o": "2", "r": [], "e": [], "p": ""}, {"o": "2", "r": [1], "e": [], "p": "k"}):
        assert Audience.from_json(bad) is None, bad
    assert policy_key(RIGHTS) == policy_key(dict(reversed(list(RIGHTS.items()))))
    assert policy_key(RIGHTS) != policy_key({**RIGHTS, "send_email": parse_tool_rights({"reviewers": ["admin"]})})
