"""The approval card's editor: one draft edited through the schema form or the JSON editor (pure).

No reflex here: ``ReviewState`` keeps the draft of each card being edited (a dict whose leaves may
still be text typed into a number field) and calls these functions to show it on the card's
``CardRow``: the form's rows with per-field problems, the JSON text, and the diff of the edited
arguments against the proposed ones. The browser's checks (form problems, the JSON editor's
schema errors) are a help only: ``finish`` checks on the server with the tool's validator, and
``submit_review`` checks again against the checkpoint.
"""

# Tested by: tests/unit/ui/test_card_edit.py

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from hitl_app.review.diff import diff_args, diff_lines
from hitl_app.review.form_rows import form_rows
from hitl_app.review.schema_fields import FormField, SchemaError, fields_from_schema
from hitl_app.review.schema_form import add_item, args_from_form, remove_item, set_value
from hitl_app.review.types import MAX_EDIT_JSON_CHARS
from hitl_app.review.validate import ReviewError, parse_args_json
from hitl_app.ui.cards.card_rows import CardRow

FIX_FIELDS = "Fix the fields marked above first."
"""The card's edit error when "Check edit" finds form problems (each is shown at its field)."""


@lru_cache(maxsize=64)
def _fields(schema_text: str) -> tuple[FormField, ...]:
    try:
        return tuple(fields_from_schema(json.loads(schema_text)))
    except SchemaError:
        return ()


def unproxied(value: Any) -> Any:
    """``value`` as plain dicts, lists and scalars: state reads hand out ``MutableProxy`` wrappers
    around nested values, which must never reach a decision (the checkpointer cannot store them)."""
    value = getattr(value, "__wrapped__", value)
    if isinstance(value, dict):
        return {str(k): unproxied(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unproxied(v) for v in value]
    return value


def fields_for(card: CardRow) -> list[FormField]:
    """The form fields of ``card``'s tool schema (``[]`` without a usable schema)."""
    return list(_fields(json.dumps(card.schema))) if card.schema else []


def pretty(value: Any) -> str:
    """The draft as the JSON editor shows it (2-space indent, non-ASCII kept)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def show_draft(card: CardRow, draft: dict[str, Any], proposed: dict[str, Any], *, bump: bool, text: str | None = None) -> None:
    """Show ``draft`` on ``card``: form rows with their problems, JSON text (``text`` when given:
    what the person typed), diff against ``proposed``. ``bump`` re-keys the form's text inputs
    (the draft changed other than by typing into them)."""
    fields = fields_for(card)
    result = args_from_form(fields, draft)
    card.form = form_rows(fields, draft, result.errors) if fields else []
    # the diff is of what "Check edit" would send (``finish_problem``): the JSON editor's arguments
    # as typed, the form's as read (an empty required string there is "required", not a value)
    card.diff = diff_lines(diff_args(proposed, draft if card.mode == "json" else result.args))
    card.draft_json = pretty(draft) if text is None else text
    if bump:
        card.revision += 1


def set_mode(card: CardRow, mode: Any) -> None:
    """Switch the editor to ``form`` (only when the tool has a schema form) or ``json``."""
    card.mode = "form" if mode == "form" and fields_for(card) else "json"
    card.revision += 1


def set_field(card: CardRow, draft: dict[str, Any], proposed: dict[str, Any], path: Any, value: Any) -> dict[str, Any]:
    """A form input's new value; returns the new draft (``draft`` unchanged for a bad path)."""
    if not isinstance(path, str) or not path or len(path) > 500:
        return draft
    if not isinstance(value, str | bool | int | float) or (isinstance(value, str) and len(value) > MAX_EDIT_JSON_CHARS):
        return draft
    draft = set_value(fields_for(card), draft, path, value)
    card.json_note = ""
    show_draft(card, draft, proposed, bump=False)
    return draft


def change_items(card: CardRow, draft: dict[str, Any], proposed: dict[str, Any], path: Any, *, add: bool) -> dict[str, Any]:
    """Add a blank item to the array at ``path``, or remove the item at ``path``; the new draft."""
    if not isinstance(path, str) or not path:
        return draft
    try:
        draft = add_item(fields_for(card), draft, path) if add else remove_item(draft, path)
    except (KeyError, IndexError, TypeError):
        return draft
    show_draft(card, draft, proposed, bump=True)
    return draft


def set_json(card: CardRow, draft: dict[str, Any], proposed: dict[str, Any], text: Any) -> dict[str, Any]:
    """The JSON editor's text: kept as typed; the draft follows when it is a JSON object (else
    ``json_note`` says what is wrong, in the server's words, and the form keeps the last valid
    arguments). Returns the new draft."""
    if not isinstance(text, str):
        return draft
    card.draft_json = text if len(text) <= MAX_EDIT_JSON_CHARS else card.draft_json
    try:
        value = parse_args_json(text)
    except ReviewError as exc:
        card.json_note = exc.message
        return draft
    card.json_note = ""
    show_draft(card, value, proposed, text=text, bump=False)
    return value


def finish_problem(card: CardRow, draft: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """``(arguments, "")`` when the draft can be checked by the server, else ``(None, message)``:
    the JSON text does not parse, or form fields have problems (shown at the fields). In JSON mode
    the parsed text goes to the server as it is (its message names the field)."""
    if card.mode == "json":
        return (None, card.json_note) if card.json_note else (dict(draft), "")
    result = args_from_form(fields_for(card), draft)
    if result.errors:
        return None, FIX_FIELDS
    return result.args, ""
