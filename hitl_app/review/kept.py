"""What else is kept of a card until Submit besides its choice: the grant beside an approval, and
an edit whose editor is still open (pure rules).

``review.draft.kept_choice`` keeps a card's choice (approve, a reject with its reason, an answer,
a checked edit). Two more things come back in a new tab or after an Undo:

* the "always allow" scope picked next to an approval: kept inside the approval,
  ``{"choice": "approve", "grant": "thread:24"}`` (``with_grant``), and shown again only when
  the server still offers that scope to the person (``kept_grant``);
* an open edit: ``{"choice": "edit", "open": True, "mode": "json", "draft": {...}, "text":
  "..."}`` (``open_edit``): the editor's draft and, in the JSON editor, the text as typed (which
  may not parse yet). It comes back as an open editor (``restorable_open_edit``), never as a
  checked edit: the person still presses "Check edit", and the server checks the arguments then
  and again at Submit.

Nothing here is a decision, and nothing here talks to the server.
"""

# Tested by: tests/unit/review/test_kept.py

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hitl_app.review.draft import COMPLETE, DraftCard
from hitl_app.review.types import MAX_EDIT_JSON_CHARS

MAX_GRANT_CHARS = 20
"""Longest grant value kept (``"person:24"`` and the like; the select refuses longer ones too)."""

MODES = ("form", "json")
"""The editor's modes (``CardRow.mode``)."""


def with_grant(kept: dict[str, Any] | None, grant: str) -> dict[str, Any] | None:
    """``kept`` with the grant value picked beside its approval (``"thread:24"``), or ``kept``
    unchanged: not an approval, or no grant (``""``, ``"none"``, not text, too long)."""
    if kept is None or kept.get("choice") != "approve":
        return kept
    if not isinstance(grant, str) or not grant or grant == "none" or len(grant) > MAX_GRANT_CHARS:
        return kept
    return {**kept, "grant": grant}


def kept_grant(kept: Any, offered: Sequence[str]) -> str:
    """The grant value a kept approval gives its card's select again, or ``""``.

    Args:
        kept: the kept payload read back (``with_grant``'s shape; anything else gives ``""``).
        offered: the select's values the server offers this person on the card now (a scope no
            longer offered, e.g. the tool is no longer grantable or the rights changed, is dropped).
    """
    if not isinstance(kept, Mapping) or kept.get("choice") != "approve":
        return ""
    grant = kept.get("grant")
    return grant if isinstance(grant, str) and grant in offered else ""


def open_edit(card: DraftCard, draft: Mapping[str, Any] | None, text: str, mode: str) -> dict[str, Any] | None:
    """What is kept of ``card``'s open editor, or None (no open edit on the card).

    Args:
        card: one card of the draft (``choice == "edit"`` and ``editing``).
        draft: the editor's draft arguments (the proposal's while nothing was changed).
        text: the JSON editor's text as typed (kept only in the JSON mode and when it fits).
        mode: ``form`` or ``json``.
    """
    if card.choice != "edit" or not card.editing or not isinstance(draft, Mapping):
        return None
    kept: dict[str, Any] = {"choice": "edit", "open": True, "mode": mode if mode in MODES else "json", "draft": dict(draft)}
    if kept["mode"] == "json" and isinstance(text, str) and len(text) <= MAX_EDIT_JSON_CHARS:
        kept["text"] = text
    return kept


@dataclass(frozen=True)
class OpenEdit:
    """A kept open edit to show again: the draft, the JSON text (``""``: none kept) and the mode."""

    draft: dict[str, Any]
    text: str
    mode: str


def restorable_open_edit(card: DraftCard, kept: Any) -> OpenEdit | None:
    """The open edit a kept one (``open_edit``'s shape, read back) gives ``card`` again, or None.

    Only a card without a choice in this tab, not complete, whose buttons (now) include Edit, and
    a well-formed payload: a draft object within ``MAX_EDIT_JSON_CHARS`` as JSON, a text within it.
    """
    if card.choice or card.standing == COMPLETE or "edit" not in card.allowed or not isinstance(kept, Mapping):
        return None
    if kept.get("choice") != "edit" or kept.get("open") is not True:
        return None
    draft, text, mode = kept.get("draft"), kept.get("text", ""), kept.get("mode")
    if not isinstance(draft, dict) or not isinstance(text, str) or mode not in MODES:
        return None
    if len(text) > MAX_EDIT_JSON_CHARS or len(json.dumps(draft, ensure_ascii=False, default=str)) > MAX_EDIT_JSON_CHARS:
        return None
    return OpenEdit(draft=draft, text=text, mode=str(mode))
