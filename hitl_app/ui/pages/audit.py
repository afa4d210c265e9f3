"""The audit page: a table of decisions with filters and CSV/JSON export buttons."""

# Tested by: tests/e2e/test_audit.py

from __future__ import annotations

import reflex as rx
from reflex_components_core.react_router import ReactRouterLink

from hitl_app.store.audit import AuditRow
from hitl_app.ui import theme
from hitl_app.ui.components.user_menu import user_menu
from hitl_app.ui.state.audit import NO_KEY, AuditState


def _json(text) -> rx.Component:
    return rx.cond(text != "", rx.el.pre(text, class_name="audit-json"), rx.el.span("—", class_name="audit-none"))


def _cell(*children, cls: str = "", **props) -> rx.Component:
    """A table cell as Radix Themes draws one (its class), with ``cls`` for the audit's own look."""
    return rx.el.td(*children, class_name=f"rt-TableCell {cls}".strip(), **props)


def _row(row: AuditRow) -> rx.Component:
    """One decision. Plain table elements with class names (styled once, by ``TABLE_STYLE`` on the table):
    a style prop per cell made the browser build style rules per cell and row as the rows arrived."""
    return rx.el.tr(
        _cell(
            rx.el.span(row.decided_at.replace("T", " ").replace("+00:00", ""), title=row.decided_at, class_name="audit-nowrap"),
            cls="audit-small", data_testid="audit-when",
        ),
        _cell(ReactRouterLink.create(row.thread_title, to="/thread/" + row.thread_id, title=row.thread_title,
                                     class_name="audit-title"),  # in-app navigation, as rx.link does
              cls="audit-thread"),
        _cell(rx.el.code(row.tool_name, class_name="audit-tool")),
        _cell(rx.badge(row.decision_type)),
        _cell(  # who, and under it how it arrived (a column of its own squeezed the arguments' ones)
            rx.el.div(row.reviewer, class_name="audit-reviewer"),
            rx.el.div("via ", rx.el.span(row.via_label, data_testid="audit-via"), class_name="audit-muted audit-nowrap"),
            cls="audit-who",
        ),
        _cell(rx.el.span(row.waited, title=row.waited_seconds.to_string() + " s", class_name="audit-nowrap"),
              cls="audit-small", data_testid="audit-waited"),
        _cell(_json(row.args_proposed), cls="audit-args", data_testid="audit-proposed"),
        _cell(_json(row.args_executed), cls="audit-args", data_testid="audit-executed"),
        # wraps inside its column (QA M4: a long "approved by grant ..." line made rows wider than the page)
        _cell(row.message, cls="audit-small audit-message", data_testid="audit-message"),
        class_name="rt-TableRow",
        custom_attrs={
            "data-testid": "audit-row",
            "data-thread-id": row.thread_id,
            "data-tool": row.tool_name,
            "data-decision": row.decision_type,
            "data-reviewer": row.reviewer,
            "data-via": row.via,
        },
    )


TABLE_STYLE = {
    **theme.TABLE_IN_SCROLL_BOX,
    "& .audit-nowrap": {"whiteSpace": "nowrap"},
    "& .audit-small, & .audit-muted, & .audit-none": {"fontSize": "var(--font-size-1)", "lineHeight": "var(--line-height-1)"},
    "& .audit-muted, & .audit-none": {"color": theme.MUTED},
    "& .audit-thread": {"minWidth": "120px", "maxWidth": "180px"},
    "& .audit-title": {
        "display": "-webkit-box", "WebkitLineClamp": "2", "WebkitBoxOrient": "vertical", "overflow": "hidden",
        "overflowWrap": "anywhere", "color": "var(--accent-11)", "textDecoration": "none",
    },
    "& .audit-title:hover": {"textDecoration": "underline"},
    "& .audit-tool": {"whiteSpace": "nowrap", "fontFamily": theme.MONO, "fontSize": "0.9em", "padding": "0.1em 0.25em",
                      "borderRadius": "4px", "background": "var(--accent-a3)", "color": "var(--accent-a11)"},
    "& .audit-who": {"minWidth": "110px", "maxWidth": "220px"},
    "& .audit-args": {"minWidth": "180px"},
    "& .audit-json": {
        "fontFamily": theme.MONO, "fontSize": "12px", "whiteSpace": "pre-wrap", "wordBreak": "break-word",
        "overflowWrap": "anywhere", "margin": "0", "padding": "4px 6px", "borderRadius": "6px", "background": "var(--gray-3)",
    },
    "& .audit-message": {"minWidth": "160px", "maxWidth": "280px", "overflowWrap": "anywhere"},
    "& .audit-reviewer": {**theme.WRAP, "fontSize": "var(--font-size-2)", "lineHeight": "var(--line-height-2)"},
}
"""How the table's cells look, set once on the table (the rows carry class names only). Minimum widths keep
the Proposed and Executed columns from being squeezed: the table scrolls sideways in its box instead; a thread
title is at most two lines, then cut."""


def _filter(label: str, options, value, on_change, testid: str) -> rx.Component:
    """A labelled native select; ``options`` is a list of ``[value, label]`` pairs."""
    return rx.vstack(
        rx.text(label, size="1", weight="medium"),
        rx.el.select(
            rx.foreach(options, lambda o: rx.el.option(o[1], value=o[0])),
            value=value,
            on_change=on_change,
            data_testid=testid,
            aria_label=label,
            style={"padding": "4px 6px", "borderRadius": "6px", "border": "1px solid var(--gray-7)", "maxWidth": "320px"},
        ),
        spacing="1",
    )


def _table() -> rx.Component:
    """The decisions, one row each; the table scrolls sideways inside its box (the page itself never does)."""
    return rx.box(
        rx.table.root(
            rx.table.header(
                rx.table.row(
                    *[
                        rx.table.column_header_cell(h, style={"whiteSpace": "nowrap"})
                        for h in (
                            "Decided (UTC)", "Thread", "Tool", "Decision", "Reviewer", "Waited", "Proposed", "Executed",
                            "Message"
                        )
                    ]
                )
            ),
            rx.table.body(rx.foreach(AuditState.rows, _row)),
            width="100%",
            size="1",
            style=TABLE_STYLE,
        ),
        width="100%",
        max_width="100%",
        overflow_x="auto",
        data_testid="audit-table",
    )


def audit_page() -> rx.Component:
    """All decisions of this browser's threads, newest first."""
    return rx.vstack(
        rx.flex(
            rx.hstack(rx.link("← Chat", href="/", size="2"), rx.heading("Audit trail", size="5"), align="center", spacing="4"),
            rx.hstack(
                rx.button("Export CSV", on_click=AuditState.export_csv, variant="soft", data_testid="audit-export-csv"),
                rx.button("Export JSON", on_click=AuditState.export_json, variant="soft", data_testid="audit-export-json"),
                rx.cond(
                    AuditState.signing == "ready",
                    rx.button(rx.icon("shield-check", size=16), "Signed export", on_click=AuditState.export_signed,
                              title="The whole audit chain, signed: check it with python -m hitl_app audit verify --export",
                              data_testid="audit-export-signed"),
                ),
                user_menu(), spacing="3", align="center",
            ),
            justify="between",
            align="center",
            wrap="wrap",
            gap="3",
            width="100%",
        ),
        rx.hstack(
            _filter(
                "Thread", AuditState.thread_choices, AuditState.thread_filter, AuditState.set_thread_filter, "audit-filter-thread"
            ),
            _filter("Tool", AuditState.tool_pairs, AuditState.tool_filter, AuditState.set_tool_filter, "audit-filter-tool"),
            _filter(
                "Decision", AuditState.decision_pairs, AuditState.decision_filter, AuditState.set_decision_filter,
                "audit-filter-decision"
            ),
            spacing="4",
            wrap="wrap",
        ),
        rx.cond(AuditState.thread_note != "", rx.text(AuditState.thread_note, size="1", color=theme.MUTED,
                                                      data_testid="audit-thread-note")),
        rx.cond(AuditState.link_note != "", rx.callout(AuditState.link_note, icon="info", size="1",
                                                       data_testid="audit-link-note")),
        rx.cond(AuditState.error != "", rx.callout(AuditState.error, color_scheme="red", icon="triangle-alert")),
        rx.cond(AuditState.signing == "no_key", rx.callout(NO_KEY, icon="info", size="1",
                                                           data_testid="audit-no-key")),
        rx.text(AuditState.count_label, size="2", data_testid="audit-count"),
        _table(),
        rx.cond(AuditState.empty_note != "", rx.text(AuditState.empty_note, size="2", color=theme.MUTED,
                                                     data_testid="audit-empty")),
        rx.cond(
            AuditState.more,
            rx.button("Show more", on_click=AuditState.show_more, variant="soft", data_testid="audit-show-more"),
        ),
        padding=["16px", "16px", "24px"],
        width="100%",
        max_width="100vw",
        min_width="0",
        spacing="4",
        box_sizing="border-box",
    )
