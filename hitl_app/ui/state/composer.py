"""The composer's text area, from the server: its DOM id and emptying it after a message was accepted."""

# Tested by: tests/e2e/test_chat_flow.py, tests/e2e/test_bad_input.py

from __future__ import annotations

from typing import Any

import reflex as rx

COMPOSER_ID = "composer-text"
"""DOM id of the composer's text area: cleared only once a message is accepted (a refused one stays)."""

_FIT = (
    "(function (el) { if (el) { el.style.height = 'auto'; el.style.height = el.scrollHeight + 'px'; } })"
    f"(document.getElementById('{COMPOSER_ID}'))"
)


def clear_composer() -> list[Any]:
    """The events that empty the composer and shrink it back to one line (``auto_height`` only
    follows typing, so a long message left it tall after Send)."""
    return [rx.set_value(COMPOSER_ID, ""), rx.call_script(_FIT)]
