"""The grant scope and the open edit kept beside a card's choice (``hitl_app.review.kept``)."""

from __future__ import annotations

from hitl_app.review import kept
from hitl_app.review.types import MAX_EDIT_JSON_CHARS
from hitl_app.ui.cards.card_rows import CardRow

OFFERED = ["call:24", "thread:24", "person:1", "person:24"]


def card(choice: str = "", allowed: list[str] | None = None, **fields) -> CardRow:
    allowed = allowed or ["approve", "edit", "reject"]
    return CardRow(index=0, tool_name="send_email", description="", allowed=allowed, choice=choice, **fields)


def test_an_approval_keeps_its_grant_and_nothing_else_does():
    assert kept.with_grant({"choice": "approve"}, "thread:24") == {"choice": "approve", "grant": "thread:24"}
    assert kept.with_grant({"choice": "approve"}, "none") == {"choice": "approve"}
    assert kept.with_grant({"choice": "approve"}, "x" * 40) == {"choice": "approve"}
    assert kept.with_grant({"choice": "reject", "reason": ""}, "thread:24") == {"choice": "reject", "reason": ""}
    assert kept.with_grant(None, "thread:24") is None


def test_a_kept_grant_comes_back_only_while_the_server_offers_it():
    assert kept.kept_grant({"choice": "approve", "grant": "thread:24"}, OFFERED) == "thread:24"
    assert kept.kept_grant({"choice": "approve", "grant": "person:24"}, ["call:24", "thread:24"]) == ""  # not the owner now
    assert kept.kept_grant({"choice": "approve", "grant": "thread:24"}, []) == ""  # the tool is no longer grantable
    assert kept.kept_grant({"choice": "reject", "grant": "thread:24"}, OFFERED) == ""
    assert kept.kept_grant({"choice": "approve", "grant": 5}, OFFERED) == ""
    assert kept.kept_grant("approve", OFFERED) == ""


def test_an_open_edit_keeps_its_draft_and_the_json_text_as_typed():
    open_card = card("edit", editing=True)
    draft = {"to": "a@example.com"}
    assert kept.open_edit(open_card, draft, '{"to": "a@ex', "json") == {
        "choice": "edit", "open": True, "mode": "json", "draft": draft, "text": '{"to": "a@ex',
    }
    assert kept.open_edit(open_card, draft, "ignored", "form") == {"choice": "edit", "open": True, "mode": "form", "draft": draft}
    assert kept.open_edit(card("edit", editing=False), draft, "", "json") is None  # checked: kept_choice keeps it
    assert kept.open_edit(card("approve"), draft, "", "json") is None
    assert "text" not in kept.open_edit(open_card, draft, "x" * (MAX_EDIT_JSON_CHARS + 1), "json")


def test_an_open_edit_comes_back_open_only_on_a_blank_card_that_still_offers_edit():
    value = {"choice": "edit", "open": True, "mode": "json", "draft": {"to": "b"}, "text": '{"to": "b"'}
    assert kept.restorable_open_edit(card(), value) == kept.OpenEdit(draft={"to": "b"}, text='{"to": "b"', mode="json")
    assert kept.restorable_open_edit(card("approve"), value) is None  # this tab has a choice
    assert kept.restorable_open_edit(card(allowed=["approve", "reject"]), value) is None  # the rights changed
    assert kept.restorable_open_edit(card(standing="complete"), value) is None
    assert kept.restorable_open_edit(card(), {**value, "open": "yes"}) is None
    assert kept.restorable_open_edit(card(), {**value, "draft": []}) is None
    assert kept.restorable_open_edit(card(), {**value, "mode": "yaml"}) is None
    assert kept.restorable_open_edit(card(), {**value, "text": "x" * (MAX_EDIT_JSON_CHARS + 1)}) is None
    assert kept.restorable_open_edit(card(), {"choice": "edit", "args": {"to": "b"}}) is None  # a checked edit
