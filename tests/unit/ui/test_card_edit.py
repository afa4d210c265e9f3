"""The approval card's editor (pure): form rows from the tool's schema, one draft for form and
JSON, the diff against the proposal, and what "Check edit" sends to the server."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from hitl_app.review.types import MAX_EDIT_JSON_CHARS
from hitl_app.ui import card_edit
from hitl_app.ui.cards.card_rows import CardRow


class Line(BaseModel):
    sku: str
    qty: int = Field(1, description="How many")


class Order(BaseModel):
    to: str
    speed: Literal["slow", "fast"] = "slow"
    weight: float
    lines: list[Line]


PROPOSED = {"to": "alice", "speed": "slow", "weight": 2.5, "lines": [{"sku": "A", "qty": 1}]}


def _card() -> CardRow:
    schema = Order.model_json_schema()
    return CardRow(index=0, tool_name="order", description="", allowed=["edit"], editing=True, schema=schema, has_form=True)


def test_form_rows_follow_the_schema_typed_enum_required_nested():
    card = _card()
    card_edit.show_draft(card, dict(PROPOSED), PROPOSED, bump=True)
    rows = {r.path: r for r in card.form}
    assert list(rows) == ["to", "speed", "weight", "lines", "lines.0", "lines.0.sku", "lines.0.qty"]
    assert rows["speed"].kind == "enum" and rows["speed"].options == ["", "slow", "fast"]
    assert rows["weight"].kind == "number" and rows["weight"].required
    assert rows["lines.0.qty"].kind == "integer" and rows["lines.0.qty"].hint == "How many" and rows["lines.0.qty"].depth == 2
    assert card.diff == [] and card.revision == 1 and json.loads(card.draft_json) == PROPOSED


def test_form_edits_show_the_diff_and_bad_numbers_stop_check_edit():
    card = _card()
    draft = card_edit.set_field(card, dict(PROPOSED), PROPOSED, "speed", "fast")
    draft = card_edit.set_field(card, draft, PROPOSED, "lines.0.qty", "3")
    draft = card_edit.change_items(card, draft, PROPOSED, "lines", add=True)
    assert [(d.path, d.kind) for d in card.diff] == [("speed", "changed"), ("lines.0.qty", "changed"), ("lines.1", "added")]
    draft = card_edit.set_field(card, draft, PROPOSED, "lines.1.sku", "B")
    draft = card_edit.set_field(card, draft, PROPOSED, "weight", "heavy")
    assert {r.path: r.error for r in card.form}["weight"] == "must be a number"
    assert card_edit.finish_problem(card, draft) == (None, card_edit.FIX_FIELDS)
    draft = card_edit.set_field(card, draft, PROPOSED, "weight", "4")
    args, problem = card_edit.finish_problem(card, draft)
    assert problem == ""
    assert args == {"to": "alice", "speed": "fast", "weight": 4.0, "lines": [{"sku": "A", "qty": 3}, {"sku": "B", "qty": 1}]}


def test_json_text_drives_the_same_draft_and_bad_text_is_named_in_the_servers_words():
    card = _card()
    card_edit.set_mode(card, "json")
    draft = card_edit.set_json(card, dict(PROPOSED), PROPOSED, '{"to": "bob", "weight": 2.5, "lines": []}')
    assert draft == {"to": "bob", "weight": 2.5, "lines": []} and card.json_note == ""
    assert {d.path: d.kind for d in card.diff} == {"to": "changed", "speed": "removed", "lines.0": "removed"}
    kept = card_edit.set_json(card, draft, PROPOSED, '{"to": ')
    assert kept == draft and card.json_note.startswith("Not valid JSON") and card.draft_json == '{"to": '
    assert card_edit.finish_problem(card, kept) == (None, card.json_note)
    card_edit.set_json(card, draft, PROPOSED, json.dumps({"to": "x" * MAX_EDIT_JSON_CHARS}))
    assert "too large" in card.json_note
    card_edit.set_mode(card, "form")
    assert card.mode == "form"


def test_a_tool_without_a_schema_is_edited_as_json_only():
    card = CardRow(index=0, tool_name="x", description="", allowed=["edit"], editing=True)
    card_edit.set_mode(card, "form")
    assert card.mode == "json"
    draft = card_edit.set_json(card, {}, {"a": 1}, '{"a": 2, "b": [1]}')
    assert card_edit.finish_problem(card, draft) == ({"a": 2, "b": [1]}, "")


def test_unproxied_unwraps_proxies_into_dicts_and_lists():
    class Proxy:
        def __init__(self, wrapped):
            self.__wrapped__ = wrapped

    value = card_edit.unproxied(Proxy({"a": Proxy([Proxy({"b": 1})]), 2: (3,)}))
    assert value == {"a": [{"b": 1}], "2": [3]} and type(value["a"][0]) is dict


class Mail(BaseModel):
    to: str
    subject: str
    body: str


def test_the_json_editors_diff_is_of_what_check_edit_sends_an_empty_string_kept():
    """Seen in Chromium: a proposal with ``"body": ""`` edited in the JSON editor (only ``to``
    changed) showed "body removed", though the text keeps ``"body": ""`` and Check edit sends it."""
    proposed = {"to": "hal@example.com", "subject": "two", "body": ""}
    card = CardRow(index=0, tool_name="send_email", description="", allowed=["edit"], editing=True,
                   schema=Mail.model_json_schema(), has_form=True, mode="json")
    text = '{"to": "ivy@example.com", "subject": "two", "body": ""}'
    draft = card_edit.set_json(card, dict(proposed), proposed, text)
    assert [(d.path, d.kind) for d in card.diff] == [("to", "changed")]
    assert card_edit.finish_problem(card, draft) == ({"to": "ivy@example.com", "subject": "two", "body": ""}, "")
