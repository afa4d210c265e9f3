"""State of the phone menu (the sidebar's content in a sheet on small screens)."""

# Tested by: tests/e2e/test_layout.py

from __future__ import annotations

import reflex as rx


class MenuState(rx.State):
    """Whether the phone menu is open. Closed by any control inside it (a thread link, New chat,
    Audit, Workspace): a router link cancels the click's default action, so Radix's ``Dialog.Close``
    would not close the menu on navigation by itself."""

    open: bool = False

    @rx.event
    def set_open(self, value: bool) -> None:
        """Open or close the menu (Radix ``onOpenChange``: Escape, a click outside, the trigger)."""
        self.open = value is True

    @rx.event
    def close(self) -> None:
        """Close the menu."""
        self.open = False
