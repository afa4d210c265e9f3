"""The workspace panel: the outbox, the files and the records table, so a person can check what
the approved tool calls really did."""

# Tested by: tests/e2e/test_screens.py

from __future__ import annotations

import reflex as rx

from hitl_app.store.inspect import MailRow
from hitl_app.ui import theme
from hitl_app.ui.state.workspace import McpServerRow, WorkspaceState


def _mail(m: MailRow) -> rx.Component:
    """One sent mail: recipient, subject, body and when."""
    return rx.box(
        rx.text("To: ", rx.text.strong(m.recipient), size="2"),
        rx.text(m.subject, size="2", weight="medium"),
        rx.text(m.body, size="1", color=theme.MUTED, white_space="pre-wrap"),
        rx.text(m.sent_at, size="1", color=theme.MUTED),
        custom_attrs={"data-testid": "outbox-mail", "data-to": m.recipient},
        padding="6px 0",
        border_bottom="1px solid var(--gray-4)",
        width="100%",
    )


def _outbox_tab() -> rx.Component:
    """The mails the send_email tool sent, newest first."""
    return rx.tabs.content(
        rx.vstack(
            rx.cond(WorkspaceState.mails.length() == 0, rx.text("No mail sent yet.", size="2", color=theme.MUTED)),
            rx.foreach(WorkspaceState.mails, _mail),
            width="100%",
            padding_top="8px",
        ),
        value="outbox",
    )


def _files_tab() -> rx.Component:
    """The files in the sandbox, with their sizes in bytes."""
    return rx.tabs.content(
        rx.vstack(
            rx.foreach(
                WorkspaceState.file_rows,
                lambda f: rx.hstack(
                    rx.code(f.path, variant="ghost"), rx.spacer(),
                    rx.text(f.size.to_string() + " B", size="1", color=theme.MUTED), width="100%",
                    custom_attrs={"data-testid": "workspace-file", "data-path": f.path}
                )
            ),
            width="100%",
            padding_top="8px",
        ),
        value="files",
    )


def _records_tab() -> rx.Component:
    """The demo records table (or why it is missing)."""
    return rx.tabs.content(
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
                rx.table.header(
                    rx.table.row(rx.foreach(WorkspaceState.record_columns, lambda c: rx.table.column_header_cell(c)))
                ),
                rx.table.body(
                    rx.foreach(WorkspaceState.record_rows, lambda r: rx.table.row(rx.foreach(r, lambda v: rx.table.cell(v))))
                ),
                size="1",
            ),
        ),
        value="records",
    )


def _server(row: McpServerRow) -> rx.Component:
    """One MCP server: its name, connected or not, where it runs, its tools or why it failed."""
    return rx.box(
        rx.hstack(
            rx.icon("server", size=14, aria_hidden="true"),
            rx.text(row.name, weight="bold", size="2"),
            rx.badge(rx.cond(row.connected, "connected", "not connected"),
                     color_scheme=rx.cond(row.connected, "green", "red"), data_testid="mcp-server-state"),
            align="center", spacing="2",
        ),
        rx.text(row.where, size="1", color=theme.MUTED, style=theme.WRAP),
        rx.text(row.live, size="1", data_testid="mcp-server-live", style=theme.WRAP),
        rx.cond(row.connected, rx.text(row.tools.length().to_string() + " tools: " + row.tools.join(", "),
                                       size="1", style=theme.WRAP)),
        rx.cond(row.error != "", rx.text(row.error, size="1", color=theme.ERROR_COLOR, style=theme.WRAP,
                                         data_testid="mcp-server-error")),
        custom_attrs={"data-testid": "mcp-server-row", "data-server": row.name,
                      "data-connected": rx.cond(row.connected, "true", "false")},
        padding="6px 0", border_bottom="1px solid var(--gray-4)", width="100%",
    )


def _servers_tab() -> rx.Component:
    """The MCP servers of ``HITL_MCP``: which are connected and which are not."""
    return rx.tabs.content(
        rx.vstack(
            rx.cond(WorkspaceState.servers.length() == 0,
                    rx.text("No MCP servers: set HITL_MCP to an mcp.json file.", size="2", color=theme.MUTED)),
            rx.foreach(WorkspaceState.servers, _server),
            width="100%", padding_top="8px",
        ),
        value="servers",
    )


def workspace_panel() -> rx.Component:
    """Outbox, files and records: a person can check what really happened."""
    return rx.cond(
        WorkspaceState.open,
        rx.vstack(
            rx.hstack(
                rx.heading("Workspace", size="3"), rx.spacer(),
                rx.icon_button(
                    rx.icon("refresh-cw", size=14), variant="ghost", on_click=WorkspaceState.refresh,
                    aria_label="Refresh the workspace", title="Refresh", data_testid="workspace-refresh"
                ),
                rx.icon_button(
                    rx.icon("x", size=14), variant="ghost", on_click=WorkspaceState.toggle, aria_label="Close the workspace",
                    data_testid="workspace-close"
                ),
                width="100%"
            ),
            rx.tabs.root(
                rx.tabs.list(
                    rx.tabs.trigger("Outbox", value="outbox"), rx.tabs.trigger("Files", value="files"),
                    rx.tabs.trigger("Records", value="records"),
                    rx.tabs.trigger("MCP", value="servers", data_testid="workspace-mcp-tab"),
                ),
                _outbox_tab(),
                _files_tab(),
                _records_tab(),
                _servers_tab(),
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
