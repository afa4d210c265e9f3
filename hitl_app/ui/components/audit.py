"""The audit page: a table of decisions with filters and CSV/JSON export buttons."""

from __future__ import annotations

import reflex as rx

from hitl_app.store.audit import AuditRow
from hitl_app.ui.audit_state import AuditState


def _row(row: AuditRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(row.decided_at, size="1")),
        rx.table.cell(rx.link(row.thread_title, href="/thread/" + row.thread_id, size="2")),
        rx.table.cell(rx.code(row.tool_name)),
        rx.table.cell(rx.badge(row.decision_type)),
        rx.table.cell(rx.text(row.reviewer, size="2")),
        rx.table.cell(rx.text(row.waited_seconds.to_string() + " s", size="1")),
        rx.table.cell(rx.code(row.args_proposed, size="1", style={"whiteSpace": "pre-wrap", "wordBreak": "break-all"})),
        rx.table.cell(rx.code(row.args_executed, size="1", style={"whiteSpace": "pre-wrap", "wordBreak": "break-all"})),
        rx.table.cell(rx.text(row.message, size="1")),
        custom_attrs={
            "data-testid": "audit-row",
            "data-thread-id": row.thread_id,
            "data-tool": row.tool_name,
            "data-decision": row.decision_type,
            "data-reviewer": row.reviewer,
        },
    )


def _filter(label: str, options, value, on_change, testid: str) -> rx.Component:
    return rx.vstack(
        rx.text(label, size="1", weight="medium"),
        rx.el.select(
            rx.foreach(options, lambda o: rx.el.option(o, value=o)),
            value=value,
            on_change=on_change,
            data_testid=testid,
            style={"padding": "4px 6px", "borderRadius": "6px", "border": "1px solid var(--gray-7)", "maxWidth": "320px"},
        ),
        spacing="1",
    )


def audit_page() -> rx.Component:
    """All decisions of this browser's threads, newest first."""
    return rx.vstack(
        rx.hstack(
            rx.link("← Chat", href="/", size="2"),
            rx.heading("Audit trail", size="5"),
            rx.spacer(),
            rx.button("Export CSV", on_click=AuditState.export_csv, variant="soft", data_testid="audit-export-csv"),
            rx.button("Export JSON", on_click=AuditState.export_json, variant="soft", data_testid="audit-export-json"),
            width="100%",
            align="center",
            spacing="4",
        ),
        rx.hstack(
            _filter("Thread", AuditState.thread_options, AuditState.thread_filter, AuditState.set_thread_filter, "audit-filter-thread"),
            _filter("Tool", AuditState.tool_options, AuditState.tool_filter, AuditState.set_tool_filter, "audit-filter-tool"),
            _filter("Decision", AuditState.decision_options, AuditState.decision_filter, AuditState.set_decision_filter, "audit-filter-decision"),
            spacing="4",
        ),
        rx.cond(AuditState.error != "", rx.callout(AuditState.error, color_scheme="red", icon="triangle-alert")),
        rx.text(AuditState.rows.length().to_string() + " decisions", size="2", data_testid="audit-count"),
        rx.table.root(
            rx.table.header(
                rx.table.row(
                    *[rx.table.column_header_cell(h) for h in ("Decided (UTC)", "Thread", "Tool", "Decision", "Reviewer", "Waited", "Proposed", "Executed", "Message")]
                )
            ),
            rx.table.body(rx.foreach(AuditState.rows, _row)),
            width="100%",
            size="1",
        ),
        padding="24px",
        width="100%",
        spacing="4",
    )
