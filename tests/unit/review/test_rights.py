"""Review rights: who may decide a card, which approvals count, when it is done, what it says."""

from __future__ import annotations

import pytest

from hitl_app.auth.types import Principal as Person
from hitl_app.auth.types import Role
from hitl_app.review.conditions import ConditionError, parse_condition
from hitl_app.review.rights import (
    DEFAULT_RULE,
    Card,
    RecordedDecision,
    RightsPolicyError,
    RightsRefused,
    ToolRights,
    check_decision,
    may_decide,
    parse_tool_rights,
    progress,
    rights_in_force,
    who_else_may_decide,
)

MIA = Person(1, "Mia", Role.MEMBER, "mia@example.com")  # asks in her own thread
MAX = Person(2, "Max", Role.MEMBER, "max@example.com")  # another member
DANA = Person(3, "Dana", Role.REVIEWER, "Dana@Example.com")
LEE = Person(4, "Lee", Role.REVIEWER, "lee@example.com")
ADA = Person(5, "Ada", Role.ADMIN, "ada@example.com")

TEAM = parse_tool_rights({
    "reviewers": ["reviewer"],
    "self_approval": False,
    "rules": [{"when": "amount > 1000", "approvals": 2}],
})


def card(args=None, rights=TEAM, decisions=("approve", "reject"), owner=MIA, recorded=(), tool="transfer_funds"):
    request = {"name": tool, "args": args if args is not None else {"amount": 50, "to": "Bob"}}
    return Card.for_request(request, decisions, owner_id=str(owner.account_id), rights=rights, recorded=recorded)


def decided(c: Card, *steps: tuple[Person, str]) -> Card:
    for person, kind in steps:
        c = c.with_decision(person, kind)
    return c


# ---- defaults: today's single-user behaviour --------------------------------------------------

def test_default_owner_decides_everything_and_one_approval_completes():
    c = card(rights=ToolRights(), decisions=("approve", "edit", "reject"), tool="send_email")
    assert may_decide(c, MIA).allowed == ("approve", "edit", "reject")
    done = decided(c, (MIA, "approve"))
    state = progress(done)
    assert state.complete and state.final.display_name == "Mia" and state.text == "Approved by Mia"


def test_default_others_may_not_decide_someone_elses_card():
    c = card(rights=ToolRights(), tool="send_email")
    for other in (MAX, DANA, ADA):
        rights = may_decide(c, other)
        assert rights.allowed == ()
        assert rights.note == "Only the person who asked can decide send_email"


def test_default_edit_counts_as_the_approval():
    c = card(rights=ToolRights(), decisions=("approve", "edit", "reject"))
    assert check_decision(c, MIA, "edit", edited_args={"amount": 60, "to": "Bob"}).counts
    assert progress(decided(c, (MIA, "edit"))).final.type == "edit"


# ---- roles ----------------------------------------------------------------------------------

def test_member_may_not_approve_a_card_that_needs_a_reviewer():
    verdict = check_decision(card(owner=MAX), MIA, "approve")
    assert not verdict.allowed
    assert verdict.message == "transfer_funds needs a reviewer; you are a member"


def test_reviewer_and_admin_decide_other_peoples_cards():
    c = card()
    assert may_decide(c, DANA).allowed == ("approve", "reject")
    assert may_decide(c, ADA).allowed == ("approve", "reject")  # an admin is a reviewer too


def test_the_asker_may_withdraw_but_not_approve():
    rights = may_decide(card(), MIA)
    assert rights.allowed == ("reject",)
    assert rights.reasons["approve"] == "transfer_funds needs a reviewer; you are a member"
    done = decided(card(), (MIA, "reject"))
    assert progress(done).text == "Rejected by Mia"


def test_admin_only_rule_refuses_a_reviewer():
    c = card(rights=parse_tool_rights({"reviewers": ["admin"]}))
    assert check_decision(c, DANA, "approve").message == "transfer_funds needs an admin; you are a reviewer"
    assert check_decision(c, ADA, "approve").allowed


def test_member_role_entry_lets_any_account_decide():
    c = card(rights=parse_tool_rights({"reviewers": ["member"]}), owner=MAX)
    assert may_decide(c, MIA).allowed == ("approve", "reject")


def test_unknown_role_is_treated_as_no_rights():
    ghost = Person(9, "Ghost", "guest", "")  # type: ignore[arg-type]  # a role this app does not know
    assert check_decision(card(), ghost, "reject").message == "transfer_funds needs a reviewer; you are a guest"


# ---- named accounts -------------------------------------------------------------------------

def test_named_account_decides_by_email_case_insensitively():
    rights = parse_tool_rights({"reviewers": ["dana@example.com", "admin"]})
    c = card(rights=rights)
    assert check_decision(c, DANA, "approve").allowed  # stored as Dana@Example.com
    assert check_decision(c, LEE, "approve").message == (
        "transfer_funds needs an admin or dana@example.com; you are a reviewer"
    )


def test_owner_entry_together_with_a_role():
    rights = parse_tool_rights({"reviewers": ["owner", "reviewer"]})
    assert may_decide(card(rights=rights), MIA).allowed == ("approve", "reject")
    assert may_decide(card(rights=rights), DANA).allowed == ("approve", "reject")
    assert may_decide(card(rights=rights), MAX).allowed == ()


# ---- self-approval --------------------------------------------------------------------------

def test_reviewer_may_not_approve_their_own_request_when_self_approval_is_off():
    c = card(owner=DANA)
    verdict = check_decision(c, DANA, "approve")
    assert verdict.message == "You asked for this action; someone else must approve it"
    assert check_decision(c, DANA, "reject").allowed
    assert check_decision(c, LEE, "approve").allowed


def test_self_approval_on_lets_a_reviewer_approve_their_own_request():
    c = card(owner=DANA, rights=parse_tool_rights({"reviewers": ["reviewer"]}))
    assert check_decision(c, DANA, "approve").allowed


def test_forbidden_self_approval_in_the_record_never_counts():
    forged = (RecordedDecision("3", "Dana", "approve"),)
    assert progress(card(owner=DANA, recorded=forged)).text == "0 of 1 approval"


# ---- approvals count ------------------------------------------------------------------------

def test_two_person_rule_counts_distinct_approvers():
    c = card(args={"amount": 5000, "to": "Bob"})
    assert progress(c).text == "0 of 2 approvals" and progress(c).remaining == 2
    c = decided(c, (DANA, "approve"))
    state = progress(c)
    assert not state.complete and state.text == "1 of 2 approvals: Dana" and state.remaining == 1
    again = check_decision(c, DANA, "approve")
    assert again.message == "You already approved this; it needs a second reviewer"
    with pytest.raises(RightsRefused, match="already approved"):
        c.with_decision(DANA, "approve")
    c = decided(c, (ADA, "approve"))
    state = progress(c)
    assert state.complete and state.text == "2 of 2 approvals: Dana and Ada"
    assert state.final.display_name == "Ada"


def test_duplicate_approvals_in_the_record_count_once():
    twice = (RecordedDecision("3", "Dana", "approve"), RecordedDecision("3", "Dana", "approve"))
    assert progress(card(args={"amount": 5000, "to": "Bob"}, recorded=twice)).text == "1 of 2 approvals: Dana"


def test_any_reject_decides_a_two_person_card():
    c = decided(card(args={"amount": 5000, "to": "Bob"}), (DANA, "approve"), (LEE, "reject"))
    state = progress(c)
    assert state.complete and state.final.type == "reject" and state.text == "Rejected by Lee"
    assert check_decision(c, ADA, "approve").message == "This card is already decided (Rejected by Lee)."


def test_a_first_approver_may_still_reject():
    c = decided(card(args={"amount": 5000, "to": "Bob"}), (DANA, "approve"))
    assert may_decide(c, DANA).allowed == ("reject",)


def test_edit_is_not_offered_under_a_two_person_rule():
    rights = parse_tool_rights({"reviewers": ["reviewer"], "approvals": 2})
    c = card(rights=rights, decisions=("approve", "edit", "reject"))
    assert may_decide(c, DANA).allowed == ("approve", "reject")
    assert check_decision(c, DANA, "edit").message == (
        "transfer_funds needs 2 approvals of the same arguments; approve or reject it"
    )


def test_a_decision_the_tool_does_not_allow_is_refused():
    assert check_decision(card(), DANA, "edit").message == (
        "transfer_funds can only be decided with approve or reject, not edit"
    )
    assert not check_decision(card(), DANA, "launch").allowed


# ---- conditions -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "needed"),
    [
        ({"amount": 1000, "to": "Bob"}, 1),
        ({"amount": 1000.01, "to": "Bob"}, 2),
        ({"amount": "2,500", "to": "Bob"}, 2),  # a number sent as text is compared as a number
        ({"amount": "lots", "to": "Bob"}, 2),  # cannot compare: the stricter rule applies
        ({"to": "Bob"}, 2),  # missing: the stricter rule applies
        ({"amount": float("nan"), "to": "Bob"}, 2),
        ({"amount": True, "to": "Bob"}, 2),
    ],
)
def test_condition_selects_the_stricter_rule(args, needed):
    assert card(args=args).rule.approvals == needed


def test_first_matching_rule_wins_and_inherits_the_rest():
    rights = parse_tool_rights({
        "reviewers": ["reviewer"],
        "rules": [
            {"when": "amount >= 10000", "reviewers": ["admin"], "approvals": 2},
            {"when": "amount > 1000 and to != 'payroll'", "approvals": 2},
        ],
    })
    assert rights.rule_for({"amount": 20000, "to": "x"}).reviewers == ("admin",)
    assert rights.rule_for({"amount": 2000, "to": "x"}).reviewers == ("reviewer",)
    assert rights.rule_for({"amount": 2000, "to": "x"}).approvals == 2
    assert rights.rule_for({"amount": 2000, "to": "payroll"}).approvals == 1


def test_an_edit_may_not_move_a_card_to_another_rule():
    rights = parse_tool_rights({"reviewers": ["reviewer"], "rules": [{"when": "amount > 1000", "approvals": 2}]})
    c = card(args={"amount": 10, "to": "Bob"}, rights=rights, decisions=("approve", "edit", "reject"))
    verdict = check_decision(c, DANA, "edit", edited_args={"amount": 5000, "to": "Bob"})
    assert not verdict.allowed and "changes the review rule" in verdict.message
    assert check_decision(c, DANA, "edit", edited_args={"amount": 20, "to": "Al"}).allowed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("amount >", "each comparison must be"),
        ("amount > 10 or to == 'x'", "expected 'and'"),
        ("amount > 10 and", "expected 'and' and another comparison"),
        ("__import__('os').system('x')", "cannot read"),
        ("amount + 1 > 10", "cannot read"),
        ("to > 'b'", "text can only be compared with == or !="),
        ("amount > 1e999", "not a finite number"),
        ("10 < amount", "each comparison must be"),
    ],
)
def test_malformed_conditions_are_refused(text, message):
    with pytest.raises(ConditionError, match=message.replace("(", r"\(")):
        parse_condition(text)


def test_condition_strings_compare_exactly():
    cond = parse_condition('to == "Bob and Co" and amount <= -1.5')
    assert cond.matches({"to": "Bob and Co", "amount": -2})
    assert not cond.matches({"to": "bob and co", "amount": -2})
    assert cond.fields == ("to", "amount")


# ---- policy tables --------------------------------------------------------------------------

def test_empty_table_is_the_default_rule():
    assert parse_tool_rights({}).base == DEFAULT_RULE


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"reviewers": "reviewer"}, "reviewers: must be a non-empty list"),
        ({"reviewers": []}, "reviewers: must be a non-empty list"),
        ({"reviewers": ["reviwer"]}, "reviewers: 'reviwer' is not a role (member, reviewer, admin)"),
        ({"self_approval": "false"}, "self_approval: must be true or false (without quotes)"),
        ({"approvals": 0}, "approvals: must be a whole number from 1 to 10"),
        ({"approvals": 2.0}, "approvals: must be a whole number"),
        ({"approvals": True}, "approvals: must be a whole number"),
        ({"self_approval": False}, "approvals: 1 needed but nobody may approve (reviewers = ['owner'], self_approval = false)"),
        ({"approvals": 2}, "approvals: 2 needed but only 1 person may approve"),
        ({"reviewers": ["dana@example.com", "lee@example.com"], "approvals": 3}, "only 2 people may approve"),
        ({"rules": {"when": "amount > 1"}}, "rules: must be an array of tables"),
        ({"rules": [{"approvals": 2}]}, "rules[0] when: missing"),
        ({"rules": [{"when": "amount > 1"}]}, "rules[0]: sets nothing"),
        ({"rules": [{"when": "amount >> 1", "approvals": 2}]}, "rules[0] when: "),
        ({"rules": [{"when": "amount > 1", "approval": 2}]}, "rules[0]: unknown key(s) ['approval']"),
        ({"reviewers": ["reviewer"], "rules": [{"when": "a > 1", "reviewers": ["owner"], "approvals": 2}]},
         "rules[0] approvals: 2 needed but only 1 person"),
    ],
)
def test_malformed_rights_are_refused_with_one_line(table, message):
    with pytest.raises(RightsPolicyError) as info:
        parse_tool_rights(table)
    assert message in str(info.value) and "\n" not in str(info.value)


# ---- escalation: a deadline hands the card to a role -------------------------------------------

def test_an_escalated_review_lets_the_role_decide_and_keeps_the_other_keys():
    owner_only = card(rights=rights_in_force({}, "delete_file"), tool="delete_file")
    assert not may_decide(owner_only, DANA).may_decide
    escalated = card(rights=rights_in_force({}, "delete_file", "reviewer"), tool="delete_file")
    assert may_decide(escalated, DANA).allowed == ("approve", "reject")
    assert may_decide(escalated, MIA).allowed == ("approve", "reject"), "the owner still decides"
    assert not may_decide(escalated, MAX).may_decide, "a member who did not ask still may not"
    big = card({"amount": 5000, "to": "Bob"}, rights=rights_in_force({"transfer_funds": TEAM}, "transfer_funds", "admin"))
    assert big.rule.approvals == 2 and not big.rule.self_approval, "escalation widens who, not how many"
    assert rights_in_force({"transfer_funds": TEAM}, "transfer_funds", None) is TEAM


def test_who_else_may_decide_leaves_out_the_person_who_asked():
    assert who_else_may_decide(TEAM.base) == "a reviewer"
    assert who_else_may_decide(DEFAULT_RULE) == ""
    assert who_else_may_decide(parse_tool_rights({"reviewers": ["owner", "admin"]}).base) == "an admin"
