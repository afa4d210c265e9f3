"""The webhooks page (/admin/webhooks): register a receiver URL for some events, see its secret
once, turn endpoints off and on, rotate an endpoint's secret or delete it (each asked first in a
dialog), read the delivery log (every try) and send a delivery again.
URLs, ids and results are text nodes, never markup."""

# Tested by: tests/e2e/test_webhooks_page.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.components.confirm import confirm_button
from hitl_app.ui.components.user_menu import user_menu
from hitl_app.ui.state.webhooks import EVENTS, SECRET_BOX_ID, DeliveryRow, EndpointRow, WebhooksState

_INPUT = {"padding": "6px 8px", "borderRadius": "6px", "border": "1px solid var(--gray-7)", "width": "100%",
          "background": "var(--color-background)", "fontSize": "14px", "height": "34px", "boxSizing": "border-box"}
_STATUS_COLOURS = {"delivered": "green", "failed": "red", "sending": "blue"}


def _event_box(event: str) -> rx.Component:
    return rx.el.label(
        rx.el.input(type="checkbox", name=event, default_checked=True, data_testid=f"event-{event}"),
        rx.text(event, size="2", as_="span"),
        style={"display": "inline-flex", "gap": "6px", "alignItems": "center", "minHeight": "24px"},
    )


def _add_form() -> rx.Component:
    """URL + events -> a new endpoint (its secret shown once)."""
    return rx.card(
        rx.form(
            rx.vstack(
                rx.heading("Add an endpoint", size="3"),
                rx.text("Each delivery is signed with the endpoint's secret (Hitl-Signature: HMAC-SHA256 of "
                        "\"timestamp.body\"); see examples/webhooks/receiver.py.", size="2", color=theme.MUTED,
                        style=theme.WRAP),
                rx.el.label(
                    rx.text("Receiver URL", size="1", weight="medium"),
                    rx.el.input(name="url", type="url", required=True, placeholder="https://example.com/hooks",
                                data_testid="webhook-url", style=_INPUT),
                    style={"display": "flex", "flexDirection": "column", "gap": "4px", "width": "100%"},
                ),
                rx.el.fieldset(
                    rx.el.legend(rx.text("Events", size="1", weight="medium")),
                    rx.flex(*[_event_box(e) for e in EVENTS], gap="8px 16px", wrap="wrap"),
                    style={"border": "none", "padding": "0", "margin": "0"},
                ),
                rx.button(rx.icon("plus", size=14), "Add endpoint", type="submit", data_testid="webhook-add"),
                spacing="3", width="100%",
            ),
            on_submit=WebhooksState.add, reset_on_submit=True,
        ),
        width="100%",
    )


def _result() -> rx.Component:
    return rx.fragment(
        rx.cond(WebhooksState.error != "",
                rx.callout(WebhooksState.error, color_scheme="red", icon="triangle-alert", width="100%",
                           data_testid="webhook-error")),
        rx.cond(
            WebhooksState.message != "",
            rx.callout(
                rx.vstack(
                    rx.text(WebhooksState.message, size="2"),
                    rx.cond(WebhooksState.secret_shown,  # filled by the browser from show_secret (never a state var)
                            rx.code("", id=SECRET_BOX_ID, size="2", data_testid="webhook-secret",
                                    style={"wordBreak": "break-all", "userSelect": "all"})),
                    spacing="2",
                ),
                icon="info", width="100%", data_testid="webhook-message",
            ),
        ),
    )


def _said(row: EndpointRow, what: str) -> rx.Component:
    return rx.text(rx.text.strong(row.url, style={"overflowWrap": "anywhere"}), ": ", what, size="2", style=theme.WRAP)


def _endpoint_actions(row: EndpointRow) -> rx.Component:
    """Rotate its secret, delete it: each asked first."""
    return rx.hstack(
        confirm_button("Rotate secret", testid="endpoint-rotate", title="Rotate this endpoint's secret?", colour="amber",
                       body=_said(row, "a new secret is made and shown once; every delivery from then on is signed "
                                       "with it and the old one stops working, so the receiver must get the new one."),
                       go="Rotate secret", on_go=WebhooksState.rotate(row.endpoint_id),
                       aria_label="Rotate the secret of " + row.url),
        confirm_button("Delete", testid="endpoint-delete", title="Delete this endpoint?",
                       body=_said(row, "nothing more is sent to it; deliveries not sent yet are marked failed. The "
                                       "delivery log stays."),
                       go="Delete endpoint", on_go=WebhooksState.delete(row.endpoint_id),
                       aria_label="Delete the endpoint " + row.url),
        spacing="2", align="center",
    )


def _endpoint(row: EndpointRow) -> rx.Component:
    return rx.flex(
        rx.vstack(
            rx.text(row.url, size="2", weight="medium", style={"overflowWrap": "anywhere"}, data_testid="endpoint-url"),
            rx.text(row.events, size="1", color=theme.MUTED, style=theme.WRAP),
            rx.text("added ", row.created, size="1", color=theme.MUTED),
            spacing="1", min_width="0", flex="1 1 260px",
        ),
        rx.cond(
            row.active,
            rx.hstack(rx.badge("on", color_scheme="green"),
                      rx.button("Turn off", size="1", variant="soft", color_scheme="gray",
                                on_click=WebhooksState.set_active(row.endpoint_id, False), data_testid="endpoint-off"),
                      align="center"),
            rx.hstack(rx.badge("off", color_scheme="gray"),
                      rx.button("Turn on", size="1", variant="soft",
                                on_click=WebhooksState.set_active(row.endpoint_id, True), data_testid="endpoint-on"),
                      align="center"),
        ),
        _endpoint_actions(row),
        data_testid="endpoint-row", custom_attrs={"data-endpoint-id": row.endpoint_id}, justify="between", align="center",
        gap="12px", wrap="wrap", width="100%",
        padding_y="10px", border_top="1px solid var(--gray-4)",
    )


def _delivery(row: DeliveryRow) -> rx.Component:
    colour = rx.match(row.status, *[(k, v) for k, v in _STATUS_COLOURS.items()], "amber")
    return rx.box(
        rx.flex(
            rx.vstack(
                rx.hstack(rx.text(row.event_type, size="2", weight="medium"),
                          rx.badge(row.status, color_scheme=colour, data_testid="delivery-status"),
                          align="center", spacing="2", wrap="wrap"),
                rx.text(row.event_id, " → ", row.url, size="1", color=theme.MUTED, style={"overflowWrap": "anywhere"}),
                rx.text(row.attempts, " · last: ", row.last_result, " · queued ", row.created, size="1",
                        color=theme.MUTED, style=theme.WRAP, data_testid="delivery-last"),
                spacing="1", min_width="0", flex="1 1 260px",
            ),
            rx.button(rx.icon("send", size=14), "Send again", size="1", variant="soft",
                      on_click=WebhooksState.send_again(row.delivery_id), data_testid="delivery-send-again",
                      aria_label="Send this delivery again"),
            justify="between", align="center", gap="12px", wrap="wrap", width="100%",
        ),
        rx.cond(row.tries.length() > 0,
                rx.el.details(rx.el.summary(rx.text("Tries", size="1", as_="span")),
                              rx.vstack(rx.foreach(row.tries, lambda t: rx.text(t, size="1", data_testid="delivery-try")),
                                        spacing="1", padding_top="4px"))),
        data_testid="delivery-row", width="100%", padding_y="10px", border_top="1px solid var(--gray-4)",
    )


def _card(title: str, hint: str, body: rx.Component, testid: str, *extra: rx.Component) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.flex(rx.heading(title, size="3"), *extra, justify="between", align="center", width="100%", gap="8px"),
            rx.text(hint, size="2", color=theme.MUTED, style=theme.WRAP),
            body, spacing="2", width="100%",
        ),
        width="100%", data_testid=testid,
    )


def webhooks_page() -> rx.Component:
    """/admin/webhooks (on_load ``WebhooksState.load``): admins only."""
    endpoints = rx.cond(WebhooksState.endpoints.length() > 0,
                        rx.box(rx.foreach(WebhooksState.endpoints, _endpoint), width="100%"),
                        rx.text("No endpoint yet.", size="2", color=theme.MUTED))
    log = rx.cond(WebhooksState.deliveries.length() > 0,
                  rx.box(rx.foreach(WebhooksState.deliveries, _delivery), width="100%"),
                  rx.text("Nothing sent yet.", size="2", color=theme.MUTED, data_testid="deliveries-empty"))
    refresh = rx.button(rx.icon("refresh-cw", size=14), "Refresh", size="1", variant="soft",
                        on_click=WebhooksState.refresh, data_testid="deliveries-refresh")
    return rx.vstack(
        rx.flex(
            rx.hstack(rx.link("← Accounts", href="/admin", size="2"), rx.heading("Webhooks", size="5"),
                      align="center", spacing="4", wrap="wrap"),
            user_menu(),
            justify="between", align="center", width="100%",
        ),
        _add_form(),
        _result(),
        _card("Endpoints", "Events are queued only for endpoints that are on.", endpoints, "webhook-endpoints"),
        _card("Delivery log", "The latest 50 deliveries, newest first; each is tried until a 2xx answer, with growing "
              "waits between tries.", log, "webhook-deliveries", refresh),
        padding=["16px", "16px", "24px"], spacing="4", width="100%", max_width="960px", margin="0 auto",
        box_sizing="border-box",
    )
