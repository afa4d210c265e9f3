"""The service side of the review rights, without a database: cards built from drafts, what a card
shows each person, who the audit says was asked, and one person's partial submission."""

from __future__ import annotations

import pytest

from hitl_app.auth.types import Principal, Role
from hitl_app.desk.cards import card_statuses, cards_for, may_view
from hitl_app.desk.final import asked
from hitl_app.review import ActionRequest, PendingReview, ReviewConfig, ReviewError
from hitl_app.review.rights_policy import parse_tool_rights
from hitl_app.review.validate import validate_partial
from hitl_app.store.tables import DecisionDraft

RIGHTS = {
    "transfer_funds": parse_tool_rights(
        {
            "reviewers": ["reviewer", "Kim@Example.com"],
            "self_approval": False,
            "rules": [{"when": "amount > 1000", "approvals": 2}],
        }
    )
}
MIA, LEE = Principal(1, "Mia", Role.MEMBER), Principal(2, "Lee", Role.MEMBER, "kim@example.com")
DANA, ADA = Principal(3, "Dana", Role.REVIEWER), Principal(5, "Ada", Role.ADMIN)


def review(*amounts: int) -> PendingReview:
    return PendingReview(
        thread_id="t", interrupt_id="i",
        action_requests=tuple(ActionRequest(name="transfer_funds", args={"amount": a, "to": "Bob"}) for a in amounts),
        review_configs=tuple(
            ReviewConfig(action_name="transfer_funds", allowed_decisions=("approve", "reject")) for _ in amounts
        ),
    )


def draft(index: int, who: Principal, kind: str) -> DecisionDraft:
    return DecisionDraft(thread_id="t", interrupt_id="i", seq=0, action_index=index, account_id=str(who.account_id),
                         display_name=who.display_name, role=str(who.role), decision_type=kind, decision={"type": kind})


def test_cards_carry_the_drafts_of_their_own_index_and_show_progress_per_person():
    cards = cards_for(review(1500, 20), "1", RIGHTS, [draft(0, DANA, "approve")])
    dana, mia, ada = card_statuses(cards, DANA), card_statuses(cards, MIA), card_statuses(cards, ADA)
    assert dana[0].progress == "1 of 2 approvals: Dana" and dana[0].show_progress and dana[0].deciders == ["Dana approved"]
    assert dana[0].allowed == ["reject"] and "already approved" in dana[0].note
    assert ada[0].allowed == ["approve", "reject"]
    assert mia[0].allowed == ["reject"] and mia[1].allowed == ["reject"]  # the asker may only withdraw
    assert not mia[1].show_progress and mia[1].who == "a reviewer or Kim@Example.com"
    # Dana's approval is in, the card needs a second reviewer: waiting for Dana, open for Ada
    assert dana[0].standing == "waiting" and ada[0].standing == "open" and dana[1].standing == "open"
    assert mia[0].standing == mia[1].standing == "waiting"  # the asker may only withdraw


def test_a_card_decided_by_someone_else_is_complete_for_everyone():
    cards = cards_for(review(20, 30), "1", RIGHTS, [draft(0, DANA, "approve"), draft(1, ADA, "reject")])
    for person in (MIA, DANA, ADA):
        statuses = card_statuses(cards, person)
        assert [s.standing for s in statuses] == ["complete", "complete"] and all(s.complete for s in statuses)
        assert statuses[0].progress == "Approved by Dana" and statuses[1].progress == "Rejected by Ada"


def test_who_may_open_a_thread():
    cards = cards_for(review(20), "1", RIGHTS, [])
    assert may_view(cards, MIA, "1") and may_view(cards, DANA, "1") and may_view(cards, ADA, "1")
    assert may_view(cards, LEE, "1")  # named by email in the policy
    assert not may_view(cards, Principal(9, "Zed", Role.MEMBER), "1")
    assert not may_view(cards_for(review(20), "1", {}, []), DANA, "1")  # default: only the owner decides


def test_asked_lists_the_roles_that_cover_and_the_emails():
    [card] = cards_for(review(20), "1", RIGHTS, [])
    assert asked(card) == "|reviewer|admin|kim@example.com|"
    assert asked(cards_for(review(20), "1", {}, [])[0]) == ""


def test_partial_submission_none_leaves_a_card_and_all_none_is_refused():
    r = review(20, 30)
    out = validate_partial(r, "i", [None, {"type": "reject"}], {})
    assert out[0] is None and out[1].type == "reject"
    for raw, code in (([None, None], "count"), ([{"type": "approve"}], "count"), ("x", "malformed")):
        with pytest.raises(ReviewError) as info:
            validate_partial(r, "i", raw, {})
        assert info.value.code == code
    with pytest.raises(ReviewError) as info:
        validate_partial(r, "other", [None, {"type": "reject"}], {})
    assert info.value.code == "stale"
    with pytest.raises(ReviewError) as info:
        validate_partial(r, "i", [None, {"type": "edit", "edited_action": {"name": "transfer_funds", "args": {}}}], {})
    assert info.value.code == "not_allowed" and info.value.card_index == 1
