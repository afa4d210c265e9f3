"""The sidebar (threads) and the phone menu."""

# Tested by: tests/e2e/test_layout.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.rows import ThreadRow
from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.inbox import InboxState
from hitl_app.ui.state.menu import MenuState
from hitl_app.ui.state.session import SessionState
from hitl_app.ui.state.thread_list import ThreadListState
from hitl_app.ui.state.workspace import WorkspaceState


def _thread_link(row: ThreadRow, in_menu: bool = False) -> rx.Component:
    """One thread row: its title cut with an ellipsis, when it changed, and a "review" badge (or
    "undo window" while its decided review waits out its undo window) that never leaves the row
    (the title shrinks first)."""
    active = ChatState.tid == row.thread_id
    return rx.link(
        rx.hstack(
            rx.vstack(
                rx.text(
                    row.title,
                    size="2",
                    weight=rx.cond(active, "bold", "regular"),
                    title=row.title,
                    data_testid="thread-title",
                    style={
                        "overflow": "hidden", "textOverflow": "ellipsis", "whiteSpace": "nowrap", "width": "100%",
                        "minWidth": "0", "lineHeight": "1.4"
                    },
                ),
                rx.text(row.when, size="1", color=theme.MUTED, style={"whiteSpace": "nowrap"}),
                spacing="0",
                flex="1",
                min_width="0",
                overflow="hidden",
            ),
            rx.cond(
                row.undo,
                rx.badge("undo window", color_scheme="gray", flex_shrink="0", data_testid="undo-badge"),
                rx.cond(
                    row.pending,
                    rx.badge("review", color_scheme="amber", high_contrast=True, flex_shrink="0", data_testid="pending-badge"),
                ),
            ),
            rx.cond(  # the deployment lost the thread while its review waited (hitl_app.threads.lost)
                row.lost,
                rx.badge("review lost", color_scheme="gray", flex_shrink="0", data_testid="lost-badge"),
            ),
            align="center",
            spacing="2",
            width="100%",
            min_width="0",
        ),
        href="/thread/" + row.thread_id,
        **_click(in_menu),
        underline="none",
        color_scheme="gray",
        high_contrast=True,
        data_testid="thread-link",
        custom_attrs={"data-thread-id": row.thread_id},
        style={"display": "block", "width": "100%", "minWidth": "0", "boxSizing": "border-box", "padding": "6px 8px",
               "borderRadius": "8px", "background": rx.cond(active, "var(--gray-4)", "transparent"),
               # Reflex's link hover colour (accent-8) made a hovered title faint: darken the row instead
               "_hover": {"color": "var(--gray-12)", "background": rx.cond(active, "var(--gray-4)", "var(--gray-3)")}},
    )


def _click(in_menu: bool, *events) -> dict:
    """A control's ``on_click`` prop: ``events``, and in the phone menu closing the menu first
    (``{}`` when there is nothing to do)."""
    handlers = [MenuState.close, *events] if in_menu else list(events)
    return {"on_click": handlers} if handlers else {}


def inbox_link(in_menu: bool = False) -> rx.Component:
    """The sidebar entry: "Reviews" and, while cards wait, their count."""
    return rx.link(
        rx.hstack(
            rx.icon("inbox", size=16),
            rx.text("Reviews", size="2", weight="medium"),
            rx.spacer(),
            rx.cond(
                InboxState.count > 0,
                rx.badge(InboxState.count, color_scheme="amber", variant="solid", radius="full", data_testid="inbox-count",
                         aria_label=InboxState.count.to_string() + " reviews waiting"),
            ),
            align="center",
            spacing="2",
            width="100%",
        ),
        href="/reviews",
        **_click(in_menu),
        underline="none",
        color_scheme="gray",
        high_contrast=True,
        data_testid="inbox-link",
        style={
            "display": "block", "width": "100%", "padding": "6px 8px", "borderRadius": "8px",
            "_hover": {"background": "var(--gray-3)"},
        },
    )


def sidebar_body(in_menu: bool = False) -> rx.Component:
    """What the sidebar holds: New chat, this browser's threads (newest first, scrolling up and
    down only), and the Audit and Workspace links. ``in_menu``: rendered in the phone menu, where
    each control also closes the menu."""
    return rx.fragment(
        rx.hstack(rx.icon("shield-check", color="var(--indigo-11)"), rx.heading("hitl_app", size="4"), align="center"),
        rx.button(
            rx.icon("plus", size=14), "New chat", **_click(in_menu, ThreadListState.new_thread), width="100%",
            data_testid="new-thread"
        ),
        inbox_link(in_menu),
        # a plain box, not rx.scroll_area: Radix's viewport child is `display: table; min-width: 100%`
        # and grows with the longest title, which pushed the badges out and scrolled sideways
        rx.box(
            rx.vstack(
                rx.foreach(ThreadListState.threads, lambda row: _thread_link(row, in_menu)), spacing="1", width="100%",
                align="stretch"
            ),
            flex="1",
            min_height="0",
            width="100%",
            overflow_y="auto",
            overflow_x="hidden",
            data_testid="thread-list",
        ),
        rx.hstack(
            rx.link("Audit", href="/audit", size="2", data_testid="audit-link", **_click(in_menu)),
            rx.link("Grants", href="/grants", size="2", data_testid="grants-link", **_click(in_menu)),
            rx.cond(  # only where the page would let them in (reviewers and admins)
                SessionState.may_open_metrics,
                rx.link("Metrics", href="/metrics", size="2", data_testid="metrics-link", **_click(in_menu)),
            ),
            rx.link(
                "Workspace", **_click(in_menu, WorkspaceState.toggle), size="2", data_testid="workspace-toggle",
                style={"cursor": "pointer"},
            ),
            spacing="4",
            wrap="wrap",
        ),
    )


def sidebar() -> rx.Component:
    """The left column on wide screens (hidden below the ``md`` breakpoint; see ``mobile_menu``)."""
    return rx.vstack(
        sidebar_body(),
        width=theme.SIDEBAR_WIDTH,
        min_width=theme.SIDEBAR_WIDTH,
        height="100dvh",
        padding="16px 12px",
        border_right="1px solid var(--gray-5)",
        spacing="3",
        display=["none", "none", "flex"],
        background="var(--gray-1)",
        data_testid="sidebar",
    )


_SR_ONLY = {
    "position": "absolute", "width": "1px", "height": "1px", "padding": "0", "margin": "-1px", "overflow": "hidden",
    "clip": "rect(0, 0, 0, 0)", "whiteSpace": "nowrap", "border": "0"
}
"""Read by screen readers (the dialog's title and description), not shown."""


def mobile_menu() -> rx.Component:
    """Header button on small screens that opens the sidebar's content as a sheet from the left."""
    # The trigger is the button itself: Radix puts aria-expanded/aria-haspopup on it, which a
    # plain div (the row with the count) may not carry (axe: aria-allowed-attr).
    return rx.hstack(rx.dialog.root(
        rx.dialog.trigger(
            rx.icon_button(rx.icon("menu", size=18), variant="ghost", aria_label="Threads and menu", data_testid="mobile-menu"),
        ),
        rx.dialog.content(
            rx.dialog.title("Threads", style=_SR_ONLY),
            rx.dialog.description("New chat, your threads, the audit trail and the workspace.", style=_SR_ONLY),
            rx.vstack(sidebar_body(in_menu=True), spacing="3", height="100%", width="100%"),
            data_testid="mobile-drawer",
            style={
                "position": "fixed",
                "left": "0",
                "top": "0",
                "height": "100dvh",
                "maxHeight": "100dvh",
                "width": "300px",
                "maxWidth": "85vw",
                "margin": "0",
                "borderRadius": "0",
                "padding": "16px 12px",
                "overflow": "hidden",
                "background": "var(--gray-1)",
            },
        ),
        open=MenuState.open,
        on_open_change=MenuState.set_open,
    ), rx.cond(  # reviews waiting: their count beside the menu button (phones)
        InboxState.count > 0,
        rx.badge(InboxState.count, color_scheme="amber", variant="solid", radius="full", size="1"),
    ), align="center", spacing="1", display=["flex", "flex", "none"])

