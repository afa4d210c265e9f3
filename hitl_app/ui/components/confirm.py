"""A button that asks first: an alert dialog naming what will happen, Cancel and the action.

Used where one click would do something that cannot be taken back (revoking a token, rotating or
deleting a webhook endpoint). Test ids: ``<testid>`` opens it, ``<testid>-confirm`` acts,
``<testid>-cancel`` closes it without acting.
"""

# Tested by: tests/e2e/test_api_tokens.py, tests/e2e/test_webhooks_page.py

from __future__ import annotations

from typing import Any

import reflex as rx

from hitl_app.ui import theme


def confirm_button(
    label: str, *, testid: str, title: str, body: rx.Component, go: str, on_go: Any, colour: str = "red",
    icon: str = "", aria_label: Any = None,
) -> rx.Component:
    """``label`` opens a dialog ``title`` with ``body`` (what will happen); ``go`` runs ``on_go``.

    ``colour`` is the Radix colour of both buttons (high contrast, axe's 4.5:1); ``icon`` a lucide name
    shown before ``label``; ``aria_label`` the opening button's accessible name when ``label`` is not enough.
    """
    opener = rx.button(*([rx.icon(icon, size=14)] if icon else []), label, size="1", variant="soft", color_scheme=colour,
                       high_contrast=True, data_testid=testid, **({"aria_label": aria_label} if aria_label is not None else {}))
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(opener),
        rx.alert_dialog.content(
            rx.alert_dialog.title(title, size="4"),
            rx.alert_dialog.description(body, size="2", style=theme.WRAP),
            rx.flex(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray", data_testid=f"{testid}-cancel")),
                rx.alert_dialog.action(rx.button(go, color_scheme=colour, high_contrast=True, on_click=on_go,
                                                 data_testid=f"{testid}-confirm")),
                gap="3", justify="end", margin_top="16px", wrap="wrap",
            ),
            max_width="440px",
        ),
    )
