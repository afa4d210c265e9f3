"""Who this browser is: a random id kept in localStorage (the thread owner) and the reviewer's name."""

from __future__ import annotations

import uuid
from typing import Any

import reflex as rx


def ensure_browser_id(value: Any) -> str:
    """``value`` when it is a UUID string, else a new random one (a first visit, or junk)."""
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return str(uuid.uuid4())
    return value


class SessionState(rx.State):
    """The browser's identity (a bearer id in localStorage) and the reviewer's name.

    Parent of the states that act for this browser (thread list, chat, review, audit), so they
    all read ``browser_id`` and ``reviewer``.
    """

    browser_id: str = rx.LocalStorage("", name="hitl_browser_id", sync=True)
    reviewer: str = rx.LocalStorage("", name="hitl_reviewer", sync=True)

    def _ensure_identity(self) -> None:
        """Give this browser a random id on first visit. Private: not callable from the browser."""
        browser_id = ensure_browser_id(self.browser_id)
        if browser_id != self.browser_id:
            self.browser_id = browser_id

    @rx.event
    def save_reviewer(self, form_data: dict[str, Any]) -> None:
        """Set the reviewer name recorded with each decision (1-40 characters)."""
        name = form_data.get("reviewer") if isinstance(form_data, dict) else None
        if isinstance(name, str) and 0 < len(name.strip()) <= 40:
            self.reviewer = name.strip()

    @rx.var
    def reviewer_label(self) -> str:
        """The name shown in the header."""
        return self.reviewer or "anonymous"
