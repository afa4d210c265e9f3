"""The review-draft rules: what counts as decided, "Approve the rest", and the decisions sent.

Cards are the UI's own ``CardRow`` items, built as the review panel would hold them.
"""

from __future__ import annotations

from hitl_app.review import draft
from hitl_app.review.types import ApproveDecision, EditDecision, RejectDecision, RespondDecision, decision_payload
from hitl_app.ui import review_text
from hitl_app.ui.cards.card_rows import CardRow
from hitl_app.ui.review_text import overtaken_note

ALL = ["approve", "edit", "reject", "respond"]


def card(index: int, choice: str = "", allowed: list[str] | None = None, **fields) -> CardRow:
    return CardRow(
        index=index, tool_name=fields.pop("tool_name", "send_email"), description="",
        allowed=list(ALL) if allowed is None else allowed, choice=choice,
        **fields
    )


def test_approve_and_reject_are_decided_once_picked_a_reason_is_optional():
    assert draft.is_decided(card(0, "approve"))
    assert draft.is_decided(card(0, "reject"))
    assert draft.is_decided(card(0, "reject", reason="not now"))
    assert not draft.is_decided(card(0))


def test_an_edit_is_decided_only_when_its_editor_closed_without_error():
    assert not draft.is_decided(card(0, "edit", editing=True))
    assert not draft.is_decided(card(0, "edit", editing=True, edit_error="`to` is required"))
    assert not draft.is_decided(card(0, "edit", edit_error="`to` is required"))
    assert draft.is_decided(card(0, "edit"))


def test_a_respond_needs_an_answer_with_text():
    assert not draft.is_decided(card(0, "respond"))
    assert not draft.is_decided(card(0, "respond", answer="   \n"))
    assert draft.is_decided(card(0, "respond", answer="blue"))


def test_the_chip_says_an_open_or_unchecked_edit_is_not_decided_as_the_counter_does():
    editing = card(0, "edit", editing=True)
    refused = card(1, "edit", editing=True, edit_error="`to` is required")
    checked, answered, blank = card(2, "edit"), card(3, "respond", answer="blue"), card(4, "respond")
    assert review_text.choice_chip(editing) == ("editing: not checked", False)
    assert review_text.choice_chip(refused) == ("edit: check failed", False)  # QA: it said "not checked"
    assert review_text.choice_chip(checked) == ("edit", True)
    assert review_text.choice_chip(answered) == ("respond", True)
    assert review_text.choice_chip(blank) == ("respond: no answer yet", False)
    assert review_text.choice_chip(card(5, "approve")) == ("approve", True)
    assert review_text.choice_chip(card(6)) == ("", False)
    cards = [editing, refused, checked, answered, blank]
    assert draft.decided_count(cards) == sum(review_text.choice_chip(c)[1] for c in cards) == 2


def test_the_chip_of_a_servers_question_names_the_answer_the_server_hears():
    assert review_text.choice_chip(card(0, "edit", question=True)) == ("accept", True)
    assert review_text.choice_chip(card(1, "reject", question=True)) == ("decline", True)
    assert review_text.choice_chip(card(2, "reject", question=True, reject_cancel=True)) == ("cancel", True)


def test_counter_and_all_decided():
    cards = [card(0, "approve"), card(1, "respond"), card(2)]
    assert draft.decided_count(cards) == 1
    assert not draft.all_decided(cards)
    assert draft.all_decided([card(0, "approve"), card(1, "reject")])
    assert not draft.all_decided([]), "an empty review is not 'all decided'"


def test_approve_all_is_offered_only_when_every_untouched_card_allows_approve():
    assert draft.offers_approve_rest([card(0), card(1)])
    # an ask_user card (respond only) left untouched: the button could not fill it
    assert not draft.offers_approve_rest([card(0), card(1, allowed=["respond"])])
    # ... but once it is answered, the rest can be approved
    assert draft.offers_approve_rest([card(0), card(1, "respond", allowed=["respond"], answer="blue")])
    # nothing left untouched: nothing to fill
    assert not draft.offers_approve_rest([card(0, "approve"), card(1, "reject")])
    assert not draft.offers_approve_rest([])


def test_label_says_the_rest_once_something_was_picked():
    assert review_text.approve_rest_label([card(0), card(1)]) == "Approve all"
    assert review_text.approve_rest_label([card(0, "reject"), card(1)]) == "Approve the rest"
    # an edit opened (or left open) is no decision yet: still "Approve all" (QA C10)
    assert review_text.approve_rest_label([card(0, "edit", editing=True), card(1)]) == "Approve all"


def test_approve_the_rest_fills_only_untouched_cards_that_allow_approve():
    cards = [
        card(0, "reject", reason="no"),
        card(1),
        card(2, "edit"),
        card(3, "respond", answer="blue"),
        card(4, allowed=["reject"]),
        card(5),
    ]
    assert draft.approve_rest(cards) == [1, 5]


def test_approve_the_rest_stops_at_an_unfinished_edit():
    assert draft.open_edit([card(0), card(1, "edit", editing=True)], {}).index == 1
    assert draft.open_edit([card(0, "edit")], {}).index == 0, "an edit without checked arguments is not finished"
    assert draft.open_edit([card(0, "edit"), card(1)], {0: {"to": "a@example.com"}}) is None
    assert "Finish this edit" in review_text.FINISH_EDIT


def test_decisions_are_typed_in_card_order_and_leave_out_undecided_cards():
    cards = [
        card(0, "approve"),
        card(1, "edit"),
        card(2, "reject", reason="  not now "),
        card(3, "reject", reason="   "),
        card(4, "respond", answer="blue", tool_name="ask_user"),
        card(5),
        card(6, "edit", editing=True),
    ]
    decisions = draft.to_decisions(cards, {1: {"to": "b@example.com"}, 6: {"to": "never@example.com"}})
    assert decisions == [
        ApproveDecision(type="approve"),
        EditDecision(type="edit", edited_action={"name": "send_email", "args": {"to": "b@example.com"}}),
        RejectDecision(type="reject", message="not now"),
        RejectDecision(type="reject", message=None),
        RespondDecision(type="respond", message="blue"),
    ]
    # the resume payload LangChain's middleware expects
    assert [decision_payload(d) for d in decisions] == [
        {"type": "approve"},
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "b@example.com"}}},
        {"type": "reject", "message": "not now"},
        {"type": "reject"},
        {"type": "respond", "message": "blue"},
    ]


def test_an_edit_is_sent_with_a_copy_of_the_checked_arguments():
    edited = {0: {"to": "b@example.com"}}
    [decision] = draft.to_decisions([card(0, "edit")], edited)
    edited[0]["to"] = "changed@example.com"
    assert decision.edited_action.args == {"to": "b@example.com"}


def test_a_respond_without_an_answer_is_named_before_anything_is_sent():
    cards = [card(0, "approve"), card(1, "respond", answer=" ", tool_name="ask_user")]
    gap = draft.unanswered(cards)
    assert gap is not None and gap.index == 1
    assert review_text.unanswered_message(gap) == "Write an answer for ask_user before submitting."
    assert draft.unanswered([card(0, "respond", answer="blue")]) is None


def test_standing_from_the_servers_rights_check():
    both = ["approve", "reject"]
    assert draft.standing(complete=True, allowed=[], tool_allows=both) == draft.COMPLETE
    assert draft.standing(complete=False, allowed=both, tool_allows=both) == draft.OPEN
    assert draft.standing(complete=False, allowed=[], tool_allows=both) == draft.WAITING
    # the asker of a card that needs a reviewer, or a reviewer whose approval is in: only withdraw
    assert draft.standing(complete=False, allowed=["reject"], tool_allows=both) == draft.WAITING
    assert draft.standing(complete=False, allowed=["reject"], tool_allows=["reject"]) == draft.OPEN
    assert draft.standing(complete=False, allowed=["respond"], tool_allows=["respond"]) == draft.OPEN


def test_partial_submit_batch_counts_cards_decided_by_others_and_submits_only_what_is_left():
    # Mo approved the email and answered the question; the delete needs a reviewer (Mo may withdraw)
    cards = [
        card(0, standing="complete", allowed=[]),
        card(1, standing="complete", allowed=[], tool_name="ask_user"),
        card(2, standing="waiting", allowed=["reject"], tool_name="delete_file"),
    ]
    assert draft.decided_count(cards) == 2
    assert review_text.summary(cards) == "2 of 3 decided · 1 waiting for a reviewer"  # no reviewer acted yet
    assert review_text.submit_label(cards) == "" and not draft.all_decided(cards)
    assert review_text.nothing_left_note(cards) == review_text.WITHDRAW_NOTE
    assert not draft.offers_approve_rest(cards) and draft.approve_rest(cards) == []
    # Mo withdraws the delete after all: that card is Mo's to submit
    cards[2].choice = "reject"
    assert review_text.submit_label(cards) == "Submit 1 decision" and draft.all_decided(cards)
    assert review_text.summary(cards) == "3 of 3 decided" and review_text.nothing_left_note(cards) == ""
    assert draft.to_entries(cards, {})[:2] == [None, None]


def test_the_reviewer_who_gave_the_first_of_two_approvals_is_waiting_not_undecided():
    cards = [card(0, standing="waiting", allowed=["reject"], tool_name="transfer_funds", my_decision_in=True)]
    assert review_text.summary(cards) == "0 of 1 decided · 1 waiting for another reviewer"  # their approval is in
    assert review_text.nothing_left_note(cards) == review_text.WITHDRAW_NOTE.replace("a reviewer", "another reviewer")
    assert review_text.submit_label(cards) == ""
    cards = [card(0, standing="waiting", allowed=[], tool_name="transfer_funds")]
    assert review_text.summary(cards) == "0 of 1 decided · 1 waiting for a reviewer"
    assert review_text.nothing_left_note(cards) == review_text.WAITING_NOTE


def test_submit_counts_the_choices_made_on_the_cards_this_person_can_still_decide():
    cards = [card(0, standing="complete", allowed=[]), card(1, "approve"), card(2), card(3, standing="waiting", allowed=[])]
    assert review_text.submit_label(cards) == "Submit 1 decision"  # the choices made (C5: not yet enabled)
    assert review_text.summary(cards) == "2 of 4 decided · 1 waiting for a reviewer"
    assert not draft.all_decided(cards) and draft.approve_rest(cards) == [2]
    cards[2].choice = "reject"
    assert review_text.submit_label(cards) == "Submit 2 decisions"
    assert draft.all_decided(cards) and review_text.nothing_left_note(cards) == ""
    assert review_text.nothing_left_note([card(0, standing="complete", allowed=[])]) == (
        "Every card is decided; the agent goes on."
    )
    assert review_text.submit_label([card(0)]) == "Submit"
    assert review_text.submit_label([card(0, "approve")]) == "Submit 1 decision"


# ---- the composer line: what is left for this person ------------------------------------------

def shared(index: int, standing: str, **fields) -> CardRow:
    others = fields.pop("others_who_decide", "a reviewer")
    return card(index, allowed=["approve", "reject"], standing=standing, others_who_decide=others, **fields)


def test_the_composer_line_says_decide_every_card_only_when_every_open_card_is_yours():
    assert review_text.composer_line([shared(0, "open"), shared(1, "open")]) == review_text.DECIDE_ALL
    assert review_text.composer_line([shared(0, "open"), shared(1, "waiting", remaining=2)]) == (
        "Decide your 1 card above, then submit; 1 more waits for a reviewer."
    )
    assert review_text.composer_line([]) == ""


def test_the_composer_line_says_whom_it_waits_for_when_nothing_is_yours():
    assert review_text.composer_line([shared(0, "waiting", remaining=2)]) == (
        "Waiting for a reviewer to decide (2 approvals still needed); nothing here is yours to approve."
    )
    after_mine = [shared(0, "complete", my_decision_in=True), shared(1, "waiting", remaining=1)]
    assert review_text.composer_line(after_mine) == "Your decisions are in; waiting for 1 more approval from a reviewer."
    my_approval_in = [shared(0, "waiting", remaining=1, my_decision_in=True, others_who_decide="")]
    assert review_text.composer_line(my_approval_in) == (
        "Your decisions are in; waiting for 1 more approval from another reviewer."
    )
    assert review_text.composer_line([shared(0, "complete")]) == "Every card is decided; the agent goes on."


def test_the_composer_line_says_answer_when_what_waits_is_a_question():
    # QA: "waiting for 1 more approval from Max" where Max's question waits
    def question(index: int) -> CardRow:
        return card(index, allowed=[], asks_approval=False, standing="waiting", others_who_decide="Max")

    mine_in = [shared(0, "complete", my_decision_in=True), question(1)]
    assert review_text.composer_line(mine_in) == "Your decisions are in; waiting for 1 more answer from Max."
    mixed = [shared(0, "complete", my_decision_in=True), question(1), shared(2, "waiting", remaining=1)]
    assert review_text.composer_line(mixed) == "Your decisions are in; waiting for 2 more decisions from Max or a reviewer."
    assert review_text.composer_line([question(0)]) == (
        "Waiting for Max to decide (1 answer still needed); nothing here is yours to decide."
    )


def test_what_is_kept_of_each_choice_until_submit():
    assert draft.kept_choice(card(0, "approve"), {}) == {"choice": "approve"}
    assert draft.kept_choice(card(0, "reject", reason="not him"), {}) == {"choice": "reject", "reason": "not him",
                                                                           "stop": False, "cancel": False}
    assert draft.kept_choice(card(0, "respond", answer="blue"), {}) == {"choice": "respond", "answer": "blue"}
    assert draft.kept_choice(card(0, "edit"), {0: {"to": "b@x.org"}}) == {"choice": "edit", "args": {"to": "b@x.org"}}
    assert draft.kept_choice(card(0, "edit", editing=True), {0: {"to": "b@x.org"}}) is None  # still editing
    assert draft.kept_choice(card(0, "edit"), {}) is None  # no checked arguments
    assert draft.kept_choice(card(0), {}) is None


def test_a_kept_choice_comes_back_only_on_a_blank_open_card_that_still_offers_it():
    reject = {"choice": "reject", "reason": "not him"}
    assert draft.restorable(card(0), reject) == "reject"
    assert draft.restorable(card(0, standing="waiting", allowed=["reject"]), reject) == "reject"  # a withdrawal
    assert draft.restorable(card(0, "approve"), reject) == ""  # this tab picked something already
    assert draft.restorable(card(0, standing="complete"), reject) == ""  # decided meanwhile
    assert draft.restorable(card(0, allowed=["reject"]), {"choice": "approve"}) == ""  # the rights changed
    assert draft.restorable(card(0), {"choice": "reject", "reason": 3}) == ""
    assert draft.restorable(card(0), {"choice": "respond", "answer": "x" * 20_001}) == ""
    assert draft.restorable(card(0), {"choice": "edit", "args": "{}"}) == ""
    assert draft.restorable(card(0), {"choice": "edit", "args": {"to": "b@x.org"}}) == "edit"
    assert draft.restorable(card(0), {"choice": "drop_everything"}) == ""
    assert draft.restorable(card(0), ["approve"]) == ""


def test_only_an_unsent_choice_on_an_open_card_is_overtaken():
    """QA race: Rita's pick on an open card was not sent; Max's submitted answers were."""
    picked, sent = card(0, "approve"), card(1, "respond", answer="Tuesday", standing=draft.COMPLETE)
    assert overtaken_note([picked, sent], "Rex") == "Rex decided this review first; your choices were not sent."
    assert overtaken_note([sent, card(2)], "Rex") == ""
