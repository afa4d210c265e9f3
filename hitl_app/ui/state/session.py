"""Who this browser is: a random id kept in localStorage (the thread owner) and the reviewer's name."""

from __future__ import annotations

import re
import uuid
from typing import Any

import reflex as rx
from reflex.event import EventSpec


def ensure_browser_id(value: Any) -> str:
    """``value`` when it is a UUID string, else a new random one (a first visit, or junk)."""
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return str(uuid.uuid4())
    return value


REVIEWER_MAX_CHARS = 40
"""Longest reviewer name a browser may set, in characters."""

_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def reviewer_name(value: Any) -> str:
    """``value`` as a reviewer name: a string of 1-40 characters, stripped, on one line, without
    control or bidirectional characters; ``""`` (anonymous) for anything else.

    The name comes from the browser (localStorage, sent at hydration), so it is checked every time
    it is used, not only when it was typed into the header form.
    """
    if not isinstance(value, str):
        return ""
    name = value.strip()
    if not name or len(name) > REVIEWER_MAX_CHARS or _INVISIBLE.search(name):
        return ""
    return name


IDENTITY_JS = (
    "({browser_id: localStorage.getItem('hitl_browser_id') || '', "
    "reviewer: localStorage.getItem('hitl_reviewer') || ''%s})"
)
"""Reads the browser's stored identity (for ``rx.call_script``); ``%s`` takes extra fields."""


def ask_identity(callback: Any, extra: str = "") -> EventSpec:
    """Ask the browser for its stored id and reviewer name; ``callback`` gets
    ``{"browser_id", "reviewer", ...extra}``. ``extra`` is ``", key: <JSON>"`` text or empty."""
    return rx.call_script(IDENTITY_JS % extra, callback=callback)


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

    def _adopt_identity(self, stored: Any) -> None:
        """Take the id and reviewer name the browser sent (``ask_identity``) when this state has
        none: its server copy was rebuilt without the page's storage (expired, or deleted).
        A malformed id gives a new one. Private: not callable from the browser."""
        if self.browser_id:
            return
        stored = stored if isinstance(stored, dict) else {}
        self.browser_id = ensure_browser_id(stored.get("browser_id"))
        if reviewer := reviewer_name(stored.get("reviewer")):
            self.reviewer = reviewer

    @rx.event
    def save_reviewer(self, form_data: dict[str, Any]) -> None:
        """Set the reviewer name recorded with each decision (1-40 characters)."""
        if name := reviewer_name(form_data.get("reviewer") if isinstance(form_data, dict) else None):
            self.reviewer = name

    @rx.var
    def reviewer_label(self) -> str:
        """The name shown in the header."""
        return reviewer_name(self.reviewer) or "anonymous"
