"""The sidebar (threads) and the workspace panel (what the tools did)."""

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.menu_state import MenuState
from hitl_app.ui.rows import ThreadRow
from hitl_app.ui.state import ChatState, SessionState, ThreadListState
from hitl_app.ui.workspace_state import WorkspaceState


def _thread_link(row: ThreadRow, in_menu: bool = False) -> rx.Component:
    """One thread row: its title cut with an ellipsis, when it changed, and a "review" badge that
    never leaves the row (the title shrinks first)."""
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
                    style={"overflow": "hidden", "textOverflow": "ellipsis", "whiteSpace": "nowrap", "width": "100%", "minWidth": "0", "lineHeight": "1.4"},
                ),
                rx.text(row.when, size="1", color=theme.MUTED, style={"whiteSpace": "nowrap"}),
                spacing="0",
                flex="1",
                min_width="0",
                overflow="hidden",
            ),
            rx.cond(row.pending, rx.badge("review", color_scheme="amber", flex_shrink="0", data_testid="pending-badge")),
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
        style={"display": "block", "width": "100%", "minWidth": "0", "boxSizing": "border-box", "padding": "6px 8px", "borderRadius": "8px", "background": rx.cond(active, "var(--gray-4)", "transparent"),
               # Reflex's link hover colour (accent-8) made a hovered title faint: darken the row instead
               "_hover": {"color": "var(--gray-12)", "background": rx.cond(active, "var(--gray-4)", "var(--gray-3)")}},
    )


def _click(in_menu: bool, *events) -> dict:
    """A control's ``on_click`` prop: ``events``, and in the phone menu closing the menu first
    (``{}`` when there is nothing to do)."""
    handlers = [MenuState.close, *events] if in_menu else list(events)
    return {"on_click": handlers} if handlers else {}


def sidebar_body(in_menu: bool = False) -> rx.Component:
    """What the sidebar holds: New chat, this browser's threads (newest first, scrolling up and
    down only), and the Audit and Workspace links. ``in_menu``: rendered in the phone menu, where
    each control also closes the menu."""
    return rx.fragment(
        rx.hstack(rx.icon("shield-check", color="var(--indigo-11)"), rx.heading("hitl_app", size="4"), align="center"),
        rx.button(rx.icon("plus", size=14), "New chat", **_click(in_menu, ThreadListState.new_thread), width="100%", data_testid="new-thread"),
        # a plain box, not rx.scroll_area: Radix's viewport child is `display: table; min-width: 100%`
        # and grows with the longest title, which pushed the badges out and scrolled sideways
        rx.box(
            rx.vstack(rx.foreach(ThreadListState.threads, lambda row: _thread_link(row, in_menu)), spacing="1", width="100%", align="stretch"),
            flex="1",
            min_height="0",
            width="100%",
            overflow_y="auto",
            overflow_x="hidden",
            data_testid="thread-list",
        ),
        rx.hstack(
            rx.link("Audit", href="/audit", size="2", data_testid="audit-link", **_click(in_menu)),
            rx.link("Workspace", **_click(in_menu, WorkspaceState.toggle), size="2", data_testid="workspace-toggle", style={"cursor": "pointer"}),
            spacing="4",
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


_SR_ONLY = {"position": "absolute", "width": "1px", "height": "1px", "padding": "0", "margin": "-1px", "overflow": "hidden", "clip": "rect(0, 0, 0, 0)", "whiteSpace": "nowrap", "border": "0"}
"""Read by screen readers (the dialog's title and description), not shown."""


def mobile_menu() -> rx.Component:
    """Header button on small screens that opens the sidebar's content as a sheet from the left."""
    return rx.dialog.root(
        rx.dialog.trigger(
            rx.icon_button(rx.icon("menu", size=18), variant="ghost", aria_label="Threads and menu", data_testid="mobile-menu", display=["flex", "flex", "none"]),
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
    )


def reviewer_box() -> rx.Component:
    """Header control: the reviewer name recorded with each decision."""
    return rx.popover.root(
        rx.popover.trigger(
            rx.button(rx.icon("user", size=14), SessionState.reviewer_label, variant="ghost", size="2", data_testid="reviewer-name"),
        ),
        rx.popover.content(
            rx.form(
                rx.vstack(
                    rx.text("Your name, recorded with each decision:", size="2"),
                    rx.input(name="reviewer", default_value=SessionState.reviewer, max_length=40, data_testid="reviewer-input"),
                    rx.popover.close(rx.button("Save", type="submit", size="1", data_testid="reviewer-save")),
                    spacing="2",
                ),
                on_submit=SessionState.save_reviewer,
            ),
        ),
    )


def workspace_panel() -> rx.Component:
    """Outbox, files and records: a person can check what really happened."""
    return rx.cond(
        WorkspaceState.open,
        rx.vstack(
            rx.hstack(rx.heading("Workspace", size="3"), rx.spacer(), rx.icon_button(rx.icon("refresh-cw", size=14), variant="ghost", on_click=WorkspaceState.refresh, data_testid="workspace-refresh"), rx.icon_button(rx.icon("x", size=14), variant="ghost", on_click=WorkspaceState.toggle, aria_label="Close the workspace", data_testid="workspace-close"), width="100%"),
            rx.tabs.root(
                rx.tabs.list(rx.tabs.trigger("Outbox", value="outbox"), rx.tabs.trigger("Files", value="files"), rx.tabs.trigger("Records", value="records")),
                rx.tabs.content(
                    rx.vstack(
                        rx.cond(WorkspaceState.mails.length() == 0, rx.text("No mail sent yet.", size="2", color=theme.MUTED)),
                        rx.foreach(
                            WorkspaceState.mails,
                            lambda m: rx.box(
                                rx.text("To: ", rx.text.strong(m.recipient), size="2"),
                                rx.text(m.subject, size="2", weight="medium"),
                                rx.text(m.body, size="1", color=theme.MUTED, white_space="pre-wrap"),
                                rx.text(m.sent_at, size="1", color=theme.MUTED),
                                custom_attrs={"data-testid": "outbox-mail", "data-to": m.recipient},
                                padding="6px 0",
                                border_bottom="1px solid var(--gray-4)",
                                width="100%",
                            ),
                        ),
                        width="100%",
                        padding_top="8px",
                    ),
                    value="outbox",
                ),
                rx.tabs.content(
                    rx.vstack(
                        rx.foreach(WorkspaceState.file_rows, lambda f: rx.hstack(rx.code(f.path, variant="ghost"), rx.spacer(), rx.text(f.size.to_string() + " B", size="1", color=theme.MUTED), width="100%", custom_attrs={"data-testid": "workspace-file", "data-path": f.path})),
                        width="100%",
                        padding_top="8px",
                    ),
                    value="files",
                ),
                rx.tabs.content(
                    rx.cond(
                        WorkspaceState.record_columns.length() == 0,
                        rx.text(
                            "The records table is missing (an approved SQL statement may have dropped it); "
                            "restarting the app re-creates it.",
                            size="2",
                            color=theme.MUTED,
                            padding_top="8px",
                            data_testid="records-missing",
                        ),
                        rx.table.root(
                            rx.table.header(rx.table.row(rx.foreach(WorkspaceState.record_columns, lambda c: rx.table.column_header_cell(c)))),
                            rx.table.body(rx.foreach(WorkspaceState.record_rows, lambda r: rx.table.row(rx.foreach(r, lambda v: rx.table.cell(v))))),
                            size="1",
                        ),
                    ),
                    value="records",
                ),
                default_value="outbox",
                width="100%",
            ),
            width=["100%", "100%", "340px"],
            min_width=["auto", "auto", "340px"],
            height="100dvh",
            overflow_y="auto",
            padding="16px",
            border_left="1px solid var(--gray-5)",
            data_testid="workspace-panel",
            background="var(--gray-1)",
        ),
    )
