"""The review panel's counters and labels, computed from the cards by the draft rules.

A Reflex state mixin of ``ReviewState`` (which provides ``cards`` and ``undo_open``); each var is
one rule of ``hitl_app.review.draft`` applied to the cards this tab shows.
"""

# Tested by: tests/e2e/test_review_form.py, tests/integration/ui/test_review_submit_ws.py

from __future__ import annotations

from typing import TYPE_CHECKING

import reflex as rx

from hitl_app.review import draft
from hitl_app.ui import review_text
from hitl_app.ui.cards.card_rows import CardRow


class ReviewSummaryMixin(rx.State, mixin=True):
    """The counter line, Submit's and "Approve all"'s labels (see the module docstring)."""

    if TYPE_CHECKING:  # provided by ReviewState
        cards: list[CardRow]
        undo_open: bool

    @rx.var
    def decided_count(self) -> int:
        """How many cards are decided (earlier by anyone, or in this draft)."""
        return draft.decided_count(self.cards)

    @rx.var
    def summary(self) -> str:
        """The counter line, e.g. "2 of 3 decided · 1 waiting for another reviewer"."""
        return review_text.summary(self.cards)

    @rx.var
    def all_decided(self) -> bool:
        """True when every card this person can still decide has a complete decision."""
        return draft.all_decided(self.cards)

    @rx.var
    def nothing_left(self) -> str:
        """Why Submit is not shown ("Waiting for another reviewer: ..."), "" while it is."""
        return review_text.nothing_left_note(self.cards)

    @rx.var
    def composer_line(self) -> str:
        """The locked composer's line while the review is pending (``review_text.composer_line``), or
        ``review_text.UNDO_LINE`` while its undo window is open (the page counts the seconds down)."""
        return review_text.UNDO_LINE if self.undo_open else review_text.composer_line(self.cards)

    @rx.var
    def can_approve_all(self) -> bool:
        """Offered while some card is undecided and every undecided card allows approve."""
        return draft.offers_approve_rest(self.cards)

    @rx.var
    def approve_all_label(self) -> str:
        """Label "Approve all", or "Approve the rest" once some card is decided (those decisions stay)."""
        return review_text.approve_rest_label(self.cards)

    @rx.var
    def submit_label(self) -> str:
        """E.g. "Submit 2 decisions": the cards this person can still decide ("" when none)."""
        return review_text.submit_label(self.cards)
