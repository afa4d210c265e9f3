"""The review inbox: the /reviews page and the sidebar's "Reviews" link with its count."""

# Tested by: tests/e2e/test_inbox.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.components.card_parts import Waited
from hitl_app.ui.components.sidebar import mobile_menu, sidebar
from hitl_app.ui.components.user_menu import user_menu
from hitl_app.ui.state.inbox import InboxRow, InboxState


def _item(row: InboxRow) -> rx.Component:
    """One waiting card: what the agent wants to do, who asked, how long it waited, what it needs."""
    return rx.link(
        rx.vstack(
            rx.hstack(
                rx.code(row.tool, size="3", weight="bold", style={"whiteSpace": "nowrap"}),
                rx.spacer(),
                rx.badge(row.needs, color_scheme="amber", high_contrast=True, style={"whiteSpace": "nowrap"}),
                align="center",
                width="100%",
                wrap="wrap",
                spacing="2",
            ),
            rx.text(row.args_text, size="2", style={"overflowWrap": "anywhere"}),
            rx.hstack(
                rx.text("Asked by ", rx.text.strong(row.asked_by), size="1", color=theme.MUTED, style=theme.WRAP),
                rx.text("·", size="1", color=theme.MUTED),
                rx.text(  # live, in the card's words and from the same server times (QA C6)
                    Waited.create(raised_ms=row.raised_ms, server_ms=row.server_ms), size="1", color=theme.MUTED,
                    data_testid="inbox-waited", custom_attrs={"data-waited": row.waited},
                ),
                rx.text("·", size="1", color=theme.MUTED),
                rx.text("in “", row.thread_title, "”", size="1", color=theme.MUTED,
                        style={"overflow": "hidden", "textOverflow": "ellipsis", "whiteSpace": "nowrap",
                               "minWidth": "0", "flex": "1"}),
                spacing="1",
                width="100%",
                wrap="wrap",
            ),
            spacing="1",
            width="100%",
            align="start",
        ),
        href="/thread/" + row.thread_id,
        underline="none",
        color_scheme="gray",
        high_contrast=True,
        data_testid="inbox-item",
        custom_attrs={"data-thread-id": row.thread_id, "data-action-name": row.tool},
        style={"display": "block", "padding": "12px 14px", "borderRadius": theme.RADIUS, "border": theme.CARD_BORDER,
               "background": theme.CARD_BG, "_hover": {"background": "var(--amber-3)"}},
    )


def _notify_control() -> rx.Component:
    """The only place the page asks for permission to notify (on this click, never on load)."""
    return rx.match(
        InboxState.notify,
        ("default", rx.button(
            rx.icon("bell", size=14), "Enable notifications", variant="soft", size="2",
            on_click=rx.call_script("hitlInboxAsk()", callback=InboxState.set_notify),
            data_testid="inbox-notify",
        )),
        ("granted", rx.hstack(
            rx.icon("bell-ring", size=14, color=theme.MUTED),
            rx.text("Notifications on while this tab is hidden", size="1", color=theme.MUTED),
            align="center", spacing="1", data_testid="inbox-notify-on",
        )),
        ("denied", rx.text("Notifications are blocked for this site (browser settings).", size="1", color=theme.MUTED)),
        rx.fragment(),
    )


def _more() -> rx.Component:
    """The next page of older-to-newer cards, appended below (50 at a time)."""
    return rx.center(
        rx.button(
            "Load more", variant="soft", size="2", loading=InboxState.loading_more, on_click=InboxState.load_more,
            data_testid="inbox-more",
        ),
        padding_top="4px",
    )


def _empty() -> rx.Component:
    """"Nothing waits for you.", centred in the page's column (the column's stack aligns its
    children to the start: without the full width this box hugged its text at the left)."""
    return rx.center(
        rx.vstack(
            rx.icon("circle-check", size=28, color="var(--green-9)"),
            rx.text("Nothing waits for you.", weight="medium"),
            rx.text("New reviews you may decide appear here as they come.", size="2", color=theme.MUTED),
            align="center",
            spacing="2",
            text_align="center",
        ),
        width="100%",
        padding="48px 16px",
        data_testid="inbox-empty",
    )


def _hint() -> rx.Component:
    """How the list reads; only when it has cards (nothing to open on an empty inbox: QA)."""
    return rx.cond(InboxState.count > 0, rx.text(
        "Oldest first. Open one to see the thread and decide its cards.", size="2", color=theme.MUTED, data_testid="inbox-hint",
    ))


def inbox_page() -> rx.Component:
    """/reviews: every card waiting for the signed-in person, across threads, oldest first."""
    header = rx.hstack(
        mobile_menu(),
        rx.text("Reviews", weight="bold", size="3"),
        rx.spacer(),
        user_menu(),
        width="100%",
        align="center",
        padding="10px 16px",
        border_bottom="1px solid var(--gray-5)",
    )
    body = rx.vstack(
        rx.flex(
            rx.vstack(
                rx.heading("Waiting for your decision", size="5"),
                _hint(),
                spacing="1",
            ),
            rx.spacer(),
            _notify_control(),
            width="100%",
            align="center",
            gap="12px",
            wrap="wrap",
        ),
        rx.cond(
            InboxState.count > 0,
            rx.vstack(
                rx.text(
                    InboxState.count.to_string(), " waiting",
                    rx.cond(InboxState.next_after != "", rx.fragment(" · showing the oldest ", InboxState.rows.length())),
                    size="2", color=theme.MUTED, data_testid="inbox-total",
                ),
                rx.foreach(InboxState.rows, _item),
                rx.cond(InboxState.next_after != "", _more(), rx.fragment()),
                spacing="2", width="100%", align="stretch", data_testid="inbox-list",
            ),
            rx.cond(InboxState.loaded, _empty(), rx.center(rx.spinner(), padding="32px")),
        ),
        spacing="4",
        width="100%",
        max_width=theme.CONTENT_MAX_WIDTH,
        margin="0 auto",
        padding="20px 16px",
    )
    return rx.hstack(
        sidebar(),
        rx.vstack(
            header, rx.box(body, flex="1", overflow_y="auto", width="100%"), flex="1", height="100dvh", spacing="0",
            min_width="0",
        ),
        spacing="0",
        width="100%",
        height="100dvh",
        overflow="hidden",
    )
