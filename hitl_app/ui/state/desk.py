"""State of the review desk on the chat page: the deadline countdown, grant choices, Undo.

Filled from ``ThreadView.desk`` each time the chat shows a view (``show_desk``, called by the
chat state). It has no handlers of its own: the grant select and Undo are the review's
(``ReviewState.set_grant`` / ``undo``, ``state/desk_actions.py``), which reach this state through
the module-level doors below the class. The
countdowns tick in the page (``assets/js/countdown.js``) from the server's times: ``*_ms`` are
epoch milliseconds of the server clock, ``server_now_ms`` when the view was read.
"""

# Tested by: tests/e2e/test_review_desk_browser.py

from __future__ import annotations

from typing import Any

from hitl_app.desk.desk_view import DeskView
from hitl_app.review.grants import GrantError, GrantRequest
from hitl_app.review.kept import kept_grant
from hitl_app.ui.cards.card_rows import DecidedRow
from hitl_app.ui.state.session import SessionState

COUNTDOWN_JS_SRC = "/js/countdown.js"
"""Defines the page's countdown ticker (loaded in the page head)."""

NO_GRANT = "none"
"""The grant select's value meaning "just approve this once"."""

def grant_choices(scope: str, owner: str = "") -> list[tuple[str, str]]:
    """Select options for one scope the server offers: ``(value, label)``, ``value`` is
    ``"<scope>:<hours>"``. ``owner``: whose threads a ``person`` grant covers, in words ("my" for
    the owner, "Mo's" for an admin deciding Mo's thread) so the label says exactly what it allows."""
    if scope == "call":
        return [("call:24", "Always allow this exact call in this thread (1 day)")]
    if scope == "thread":
        return [("thread:24", "Always allow this tool in this thread (1 day)")]
    if scope == "person":
        whose = "all my threads" if owner == "my" else f"all of {owner} threads" if owner else "all threads of this owner"
        return [(f"person:{h}", f"Always allow this tool in {whose} for {t}") for h, t in ((1, "1 hour"), (24, "1 day"))]
    return []


def possessive(name: str) -> str:
    """``"Mo"`` -> ``"Mo's"``, ``"Jess"`` -> ``"Jess'"``; ``""`` stays ``""``."""
    return "" if not name else name + ("'" if name.endswith("s") else "'s")


def _ms(value: Any) -> int:
    return int(value.timestamp() * 1000) if value is not None else 0


def grant_payload(choice: str) -> dict[str, Any] | None:
    """``"thread:24"`` -> ``{"scope": "thread", "hours": 24}``; ``"none"``/junk -> None."""
    scope, _, hours = (choice or "").partition(":")
    try:
        return {"scope": scope, "hours": int(hours)} if GrantRequest.parse({"scope": scope, "hours": int(hours)}) else None
    except (GrantError, ValueError):
        return None


class DeskState(SessionState):
    """The desk's part of the open review (see the module)."""

    deadline_ms: int = 0
    server_now_ms: int = 0
    deadline_before: str = ""
    escalated_note: str = ""
    undo_ms: int = 0
    undo_by: str = ""
    can_undo: bool = False
    undo_lines: list[DecidedRow] = []
    undo_error: str = ""
    grant_options: list[list[list[str]]] = []
    grant_notes: list[str] = []
    grant_choice: list[str] = []
    _interrupt_id: str = ""
    _kept_grants: dict[int, str] = {}

    def _show(self, desk: DeskView | None, interrupt_id: str) -> None:
        """Show ``desk`` (None: no review); see ``show_desk``."""
        if desk is None:
            self.deadline_ms = self.undo_ms = 0
            self.can_undo = False
            self.undo_lines = []
            self.grant_options, self.grant_notes, self.grant_choice = [], [], []
            self.escalated_note = self.undo_error = ""
            self._interrupt_id, self._kept_grants = "", {}
            return
        self.server_now_ms = _ms(desk.server_now)
        self.deadline_ms = _ms(desk.deadline_at) if not desk.escalated_to else 0
        self.deadline_before = (
            f"Goes to the {desk.escalate_to}s in " if desk.on_timeout == "escalate" else "Rejected by policy in "
        )
        self.escalated_note = (
            f"Past its deadline: the {desk.escalated_to}s may decide it now." if desk.escalated_to else ""
        )
        self.undo_ms, self.undo_by = _ms(desk.undo_until), desk.undo_by
        self.can_undo = desk.viewer_may_undo and desk.undo_until is not None
        self.undo_lines = [DecidedRow(**line.model_dump()) for line in desk.decided] if desk.undo_until else []
        owner = "my" if desk.viewer_is_owner else possessive(desk.owner_name)
        self.grant_options = [
            [[v, label] for s in scopes for v, label in grant_choices(s, owner)] for scopes in desk.grant_scopes
        ]
        self.grant_notes = list(desk.grant_notes)
        if interrupt_id != self._interrupt_id or len(self.grant_choice) != len(desk.grant_scopes):
            self.grant_choice = [NO_GRANT] * len(desk.grant_scopes)
            self._interrupt_id = interrupt_id
        self._put_kept_grants()

    def _keep_grants(self, grants: dict[int, str]) -> None:
        """The grant scopes of the kept approvals the review panel just put back (card index ->
        select value, restored by the review panel), shown by the next ``_show`` of the review."""
        self._kept_grants = dict(grants)

    def _put_kept_grants(self) -> None:
        """Show the kept grant scopes on their cards' selects, each only if the server still
        offers it to this person (``review.kept.kept_grant``); a scope no longer offered is dropped."""
        if not self._kept_grants:
            return
        choices = list(self.grant_choice)
        for index, grant in self._kept_grants.items():
            if 0 <= index < len(choices) and choices[index] == NO_GRANT:
                offered = [option[0] for option in self.grant_options[index]]
                choices[index] = kept_grant({"choice": "approve", "grant": grant}, offered) or NO_GRANT
        self.grant_choice, self._kept_grants = choices, {}

    def _grants(self, choices: list[str]) -> list[dict[str, Any] | None] | None:
        """The grant requests to send with the decisions (None when no card asks for one).

        Args:
            choices: each card's choice in this tab (``"approve"``, ``"reject"``, ...); a grant
                goes only with an approval, whatever scope the card's select last held.
        """
        grants = [
            grant_payload(c) if i < len(choices) and choices[i] == "approve" else None
            for i, c in enumerate(self.grant_choice)
        ]
        return grants if any(grants) else None

    def _drop_grant(self, index: int) -> None:
        """Card ``index`` is no longer an approval: its scope goes back to "just this once"."""
        if 0 <= index < len(self.grant_choice) and self.grant_choice[index] != NO_GRANT:
            choices = list(self.grant_choice)
            choices[index] = NO_GRANT
            self.grant_choice = choices


# ---------------------------------------------------------------- doors for the sibling states
def show_desk(state: DeskState, view: DeskView | None, interrupt_id: str) -> None:
    """Show the desk of the review ``interrupt_id`` (``view`` None: no review is pending)."""
    state._show(view, interrupt_id)


def keep_grants(state: DeskState, grants: dict[int, str]) -> None:
    """Kept grant scopes (card index -> select value) to put on their selects at the next show."""
    state._keep_grants(grants)


def grants_to_send(state: DeskState, choices: list[str]) -> list[dict[str, Any] | None] | None:
    """The grant requests to send with the decisions, one per card (None when no card asks for
    one); ``choices``: each card's choice in the tab, a grant goes only with an approval."""
    return state._grants(choices)


def drop_grant(state: DeskState, index: int) -> None:
    """Card ``index`` is no longer an approval: its grant select goes back to "just this once"."""
    state._drop_grant(index)


def choose_grant(state: DeskState, index: Any, value: Any) -> bool:
    """Set card ``index``'s grant select to ``value`` (browser input: a bad index does nothing, a
    bad value means "just this once"); True when the select changed."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(state.grant_choice):
        return False
    choices = list(state.grant_choice)
    choices[index] = value if isinstance(value, str) and len(value) < 20 else NO_GRANT
    if choices[index] == state.grant_choice[index]:
        return False
    state.grant_choice = choices
    return True


def shown_interrupt(state: DeskState) -> str:
    """The interrupt id of the review whose desk is shown (``""``: none)."""
    return state._interrupt_id
