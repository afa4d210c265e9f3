"""The Grants page (``/grants``) and the Metrics page (``/metrics``)."""

# Tested by: tests/e2e/test_review_desk_browser.py

from __future__ import annotations

from typing import Any

import reflex as rx

from hitl_app.review.types import DECISION_STYLES
from hitl_app.reviewers.metrics import OUTCOMES
from hitl_app.ui import theme
from hitl_app.ui.components.after_paint import after_paint
from hitl_app.ui.components.user_menu import user_menu
from hitl_app.ui.state.desk_pages import GrantsState, MetricsState

OUTCOME_COLORS: dict[str, str] = {
    **{kind: f"var(--{style.color}-9)" for kind, style in DECISION_STYLES.items()},
    "expired": "var(--amber-9)", "granted": "var(--pink-9)",
}
"""One colour per outcome in the per-tool chart."""

DAYS_CHART_PX = 220
TOOLS_CHART_PX = 330
"""The charts' heights (px), also the place ``after_paint`` keeps for each until it is drawn."""
_CHART_MARGIN = {"top": 5, "right": 20, "left": 0, "bottom": 5}

_STATUS_COLOR = {"active": "green", "expired": "gray", "revoked": "red"}


def _top(title: str, *right: rx.Component) -> rx.Component:
    """The page's header: back to the chat, the title, ``right`` (e.g. the period) and the user menu,
    as on Audit and Accounts (QA C2: Grants and Metrics had no menu, so no sign-out)."""
    return rx.flex(
        rx.hstack(rx.link("← Chat", href="/", size="2"), rx.heading(title, size="5"), align="center", spacing="4"),
        rx.hstack(*right, user_menu(), align="center", spacing="3", wrap="wrap"),
        justify="between", align="center", wrap="wrap", gap="3", width="100%",
    )


_STACKED_ON_PHONE = {
    "@media (max-width: 640px)": {
        "& thead": {"display": "none"},
        "& tr": {"display": "block", "padding": "10px 0", "borderBottom": "1px solid var(--gray-a5)"},
        "& td": {
            "display": "flex", "alignItems": "baseline", "gap": "10px", "padding": "3px 0",
            "boxShadow": "none", "minWidth": "0 !important", "maxWidth": "none !important", "height": "auto",
            "minHeight": "0",
        },
        "& td[data-label]::before": {
            "content": "attr(data-label)", "flex": "0 0 6.5rem", "fontSize": "12px", "color": "var(--gray-11)",
        },
    },
}
"""On a phone each grant is a block of labelled lines (the header row hidden), so Revoke and every
column fit the screen instead of a table that scrolls sideways with no hint."""


def _label(text: str) -> dict[str, str]:
    """The column name a cell shows before its value when the table is stacked (phone)."""
    return {"data-label": text}


def _grant_row(row: Any) -> rx.Component:
    return rx.table.row(
        rx.table.cell(
            rx.badge(row["status"], color_scheme=rx.match(row["status"], ("active", "green"), ("revoked", "red"), "gray"),
                     high_contrast=True),
            custom_attrs=_label("Status"),
        ),
        rx.table.cell(rx.code(row["tool"], style={"whiteSpace": "nowrap"}), custom_attrs=_label("Tool")),
        rx.table.cell(rx.vstack(
            rx.text(row["scope"], size="2"),
            rx.cond(row["args"] != "", rx.code(row["args"], size="1", style={"overflowWrap": "anywhere"})),
            rx.cond(
                row["thread_id"] != "",
                rx.link("thread " + row["thread"].to(str), href="/thread/" + row["thread_id"].to(str), size="1"),
            ),
            spacing="1",
        ), min_width="200px", custom_attrs=_label("Scope")),
        rx.table.cell(rx.text(row["granted_by"], size="2", style=theme.WRAP), max_width="200px", custom_attrs=_label("Made by")),
        rx.table.cell(rx.text(row["made"], size="1", style={"whiteSpace": "nowrap"}), custom_attrs=_label("Made (UTC)")),
        rx.table.cell(rx.vstack(
            rx.text(row["ends"], size="1", style={"whiteSpace": "nowrap"}),
            rx.cond(row["revoked"] != "", rx.text(row["revoked"], size="1", color=theme.MUTED)),
            spacing="1",
        ), custom_attrs=_label("Ends (UTC)")),
        rx.table.cell(rx.text(row["uses"].to(str), size="2"), data_testid="grant-uses", custom_attrs=_label("Used")),
        rx.table.cell(rx.cond(
            row["can_revoke"],
            rx.button(
                "Revoke", size="1", variant="soft", color_scheme="red", on_click=GrantsState.revoke(row["id"]),
                data_testid="grant-revoke",
            ),
        )),
        custom_attrs={"data-testid": "grant-row", "data-status": row["status"], "data-tool": row["tool"]},
    )


def grants_page() -> rx.Component:
    """Every grant this person made or that covers their threads: who, scope, tool, made, ends, uses."""
    return rx.vstack(
        _top("Grants"),
        rx.text("Calls a grant covers run without a card. Revoke one and the very next matching call asks again.",
                size="2", color=theme.MUTED),
        rx.cond(GrantsState.error != "", rx.callout(GrantsState.error, color_scheme="red", icon="triangle-alert")),
        rx.text(GrantsState.count_label, size="2", data_testid="grants-count"),
        rx.box(
            rx.table.root(
                rx.table.header(rx.table.row(*[
                    rx.table.column_header_cell(h, style={"whiteSpace": "nowrap"})
                    for h in ("Status", "Tool", "Scope", "Made by", "Made (UTC)", "Ends (UTC)", "Used", "")
                ])),
                rx.table.body(rx.foreach(GrantsState.rows, _grant_row)),
                width="100%", size="1", style=_STACKED_ON_PHONE,
            ),
            width="100%", overflow_x="auto",
        ),
        rx.cond(
            GrantsState.rows.length() == 0,
            rx.text('No grants yet. Choose "Always allow" next to an approval to make one.', size="2", color=theme.MUTED),
        ),
        padding="20px", spacing="4", width="100%", max_width="1100px", margin="0 auto", data_testid="grants-page",
    )


def _stat(label: str, value: Any, testid: str) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.text(label, size="1", color=theme.MUTED), rx.text(value, size="5", weight="bold", data_testid=testid), spacing="1"
        ),
        flex="1 1 140px", min_width="140px",
    )


def metrics_page() -> rx.Component:
    """Reviews per day, waited time, outcomes per tool, over 7, 30 or 90 days; a person who may not
    read them (a member) sees only why, no empty charts."""
    return rx.vstack(
        _top("Review metrics", rx.cond(
            MetricsState.allowed,
            rx.hstack(
                rx.text("Period", size="2", aria_hidden="true"),
                rx.select.root(
                    rx.select.trigger(aria_label="Period in days", data_testid="metrics-period"),
                    rx.select.content(rx.foreach(MetricsState.periods, lambda p: rx.select.item(p, value=p))),
                    value=MetricsState.period, on_change=MetricsState.set_period,
                ),
                rx.text("days", size="2", aria_hidden="true"),
                align="center", spacing="2",
            ),
        )),
        rx.cond(MetricsState.error != "", rx.callout(MetricsState.error, color_scheme="red", icon="triangle-alert",
                                                     data_testid="metrics-error")),
        rx.cond(MetricsState.allowed, _metrics_body()),
        padding="20px", spacing="4", width="100%", max_width="1100px", margin="0 auto", data_testid="metrics-page",
    )


def _metrics_body() -> rx.Component:
    """The numbers, then the two charts (drawn after the numbers have painted: ``after_paint``)."""
    return rx.vstack(
        rx.flex(
            _stat("Reviews", MetricsState.reviews.to(str), "metrics-reviews"),
            _stat("Median waited", MetricsState.median, "metrics-median"),
            _stat("95th percentile waited", MetricsState.p95, "metrics-p95"),
            gap="3", wrap="wrap",
        ),
        rx.text(MetricsState.reconcile, size="2", color=theme.MUTED, data_testid="metrics-reconcile"),
        rx.heading("Reviews per day", size="3"),
        after_paint(rx.recharts.bar_chart(
            rx.recharts.cartesian_grid(stroke_dasharray="3 3"),
            rx.recharts.x_axis(data_key="day", ticks=MetricsState.day_ticks, interval=0),
            rx.recharts.y_axis(allow_decimals=False, interval=0),
            rx.recharts.graphing_tooltip(),
            rx.recharts.bar(data_key="reviews", fill="var(--accent-9)", name="reviews", is_animation_active=False),
            data=MetricsState.days, width="100%", height=DAYS_CHART_PX, margin=_CHART_MARGIN,
        ), f"{DAYS_CHART_PX}px", "metrics-days-chart"),
        rx.heading("Outcomes per tool", size="3"),
        after_paint(rx.recharts.bar_chart(
            rx.recharts.cartesian_grid(stroke_dasharray="3 3"),
            # every tool named, slanted so five long names fit a phone (the default hid some to avoid overlap)
            rx.recharts.x_axis(data_key="tool", interval=0, angle=-30, text_anchor="end", height=90),
            rx.recharts.y_axis(allow_decimals=False, interval=0),
            rx.recharts.graphing_tooltip(),
            rx.recharts.legend(),
            *[
                rx.recharts.bar(data_key=o, stack_id="outcomes", fill=OUTCOME_COLORS[o], name=o, is_animation_active=False)
                for o in OUTCOMES
            ],
            data=MetricsState.per_tool, width="100%", height=TOOLS_CHART_PX, margin=_CHART_MARGIN,
        ), f"{TOOLS_CHART_PX}px", "metrics-tools-chart"),
        spacing="4", width="100%",
    )
