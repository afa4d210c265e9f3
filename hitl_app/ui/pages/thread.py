"""Pages: ``/`` (opens a new thread), ``/thread/[thread_id]`` (the chat)."""

# Tested by: tests/e2e/test_chat_flow.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.components.chat import THREAD_SCROLL_ID, composer, thread_column
from hitl_app.ui.components.sidebar import mobile_menu, sidebar
from hitl_app.ui.components.user_menu import user_menu
from hitl_app.ui.components.workspace import workspace_panel
from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.desk import DeskState
from hitl_app.ui.state.thread_list import ThreadListState
from hitl_app.ui.state.workspace import WorkspaceState


def index() -> rx.Component:
    """Shown for an instant before the redirect."""
    return rx.center(rx.spinner(), height="100dvh")


def header() -> rx.Component:
    """Top bar of the chat column: on small screens the menu (threads, Audit, Workspace) and New chat;
    the run status; the user menu."""
    return rx.hstack(
        mobile_menu(),
        rx.icon_button(
            rx.icon("plus", size=16), variant="ghost", on_click=ThreadListState.new_thread, display=["flex", "flex", "none"],
            aria_label="New chat", data_testid="new-thread-header"
        ),
        rx.text(  # whose thread it is, when it is not one's own (QA C1: it always said "Chat")
            rx.cond(ChatState.read_only, rx.cond(ChatState.owner_name != "", ChatState.owner_name + "'s thread",
                                                 "Someone else's thread"), "Chat"),
            weight="bold", size="3", data_testid="thread-heading", style=theme.WRAP,
        ),
        rx.cond(ChatState.streaming, rx.badge("running", color_scheme="blue", data_testid="run-status")),
        rx.cond(ChatState.status == "review", rx.cond(
            DeskState.undo_ms > 0,
            rx.badge("decided · undo window", color_scheme="gray", data_testid="review-status"),
            rx.badge("review pending", color_scheme="amber", high_contrast=True, data_testid="review-status"),
        )),
        rx.spacer(),
        rx.icon_button(
            rx.icon("folder-open", size=16), variant="ghost", on_click=WorkspaceState.toggle, display=["flex", "flex", "none"],
            aria_label="Workspace", data_testid="workspace-toggle-header"
        ),
        user_menu(),
        width="100%",
        align="center",
        padding="10px 16px",
        border_bottom="1px solid var(--gray-5)",
    )


def thread_page() -> rx.Component:
    """The chat: sidebar, the thread with its review and composer, the workspace panel."""
    return rx.hstack(
        sidebar(),
        rx.vstack(
            header(),
            rx.box(
                rx.box(thread_column(), max_width=theme.CONTENT_MAX_WIDTH, margin="0 auto", padding="16px"),
                flex="1",
                overflow_y="auto",
                width="100%",
                id=THREAD_SCROLL_ID,
            ),
            rx.box(
                rx.box(composer(), max_width=theme.CONTENT_MAX_WIDTH, margin="0 auto"), padding="10px 16px 14px",
                border_top="1px solid var(--gray-5)", width="100%"
            ),
            flex="1",
            height="100dvh",
            spacing="0",
            min_width="0",
            # on a phone the open workspace takes the whole width: the chat steps aside instead of
            # being squeezed to no width behind it (QA C8: the Send icon showed through; axe:
            # zero-width cards became scroll areas)
            style={"@media (max-width: 47.99em)": {"display": rx.cond(WorkspaceState.open, "none", "flex")}},
        ),
        workspace_panel(),
        # which server process handled this tab's page load (several workers: see docs/deploy.md)
        rx.el.span(data_testid="worker-pid", data_pid=ChatState.worker_pid, display="none"),
        spacing="0",
        width="100%",
        height="100dvh",
        overflow="hidden",
    )
