"""How a decision arrived: the audit's ``via`` word, from the click (or the machine) to the chain.

A person's decision carries the door it came through on its draft (``DecisionDraft.via``) and the
card's audit row takes the ``via`` of the decision that completed it (``desk/final.py``), so the
audit chain's ``decided`` facts say it too. The words:

- ``page``: a person on the app's page (Submit, Undo's window ending included);
- ``api``: a person's personal API token (``/api/v1``);
- ``mail``: a person's confirmed one-time link from a reminder mail;
- ``deadline``: nobody decided in time, the policy did;
- ``grant:<id>``: an "always allow" grant stood in for its maker.

``None`` (rows written before the app recorded it) reads as a person on the page.
"""

from __future__ import annotations

from typing import Literal

PersonVia = Literal["page", "api", "mail"]
"""The doors a person decides through."""

PAGE: PersonVia = "page"
API: PersonVia = "api"
MAIL: PersonVia = "mail"
DEADLINE = "deadline"
GRANT_PREFIX = "grant:"

_LABELS = {PAGE: "page", API: "API token", MAIL: "mail link", DEADLINE: "deadline"}


def by_machine(via: str | None) -> bool:
    """True when no person decided then (the deadline, a grant): the audit row's own message says how."""
    return via == DEADLINE or bool(via and via.startswith(GRANT_PREFIX))


def via_label(via: str | None) -> str:
    """The word the audit page shows: "page", "API token", "mail link", "deadline", "grant #3"
    (an unknown word as it is; None as "page")."""
    if via is None or via == "":
        return _LABELS[PAGE]
    if via.startswith(GRANT_PREFIX):
        return f"grant #{via[len(GRANT_PREFIX):]}"
    return _LABELS.get(via, via)
