"""The account page (/account): the signed-in person's personal API tokens: make one (name,
scopes, lifetime; shown once), list them, revoke them. Names are text nodes, never markup."""

# Tested by: tests/e2e/test_api_tokens.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.components.confirm import confirm_button
from hitl_app.ui.components.user_menu import user_menu
from hitl_app.ui.state.account import LIFETIMES, TOKEN_BOX_ID, AccountState, TokenRow

_INPUT = {"padding": "6px 8px", "borderRadius": "6px", "border": "1px solid var(--gray-7)",
          "background": "var(--color-background)", "fontSize": "14px", "height": "34px", "boxSizing": "border-box",
          "width": "100%"}


def _labelled(label: str, control: rx.Component) -> rx.Component:
    return rx.el.label(rx.text(label, size="1", weight="medium"), control,
                       style={"display": "flex", "flexDirection": "column", "gap": "4px", "flex": "1 1 160px", "minWidth": "0"})


def _scope_box(scope: str, words: str) -> rx.Component:
    return rx.el.label(
        rx.el.input(type="checkbox", name=scope, default_checked=scope == "read", data_testid=f"token-scope-{scope}"),
        rx.text(words, size="2"),
        style={"display": "flex", "alignItems": "center", "gap": "6px", "minHeight": "34px"},
    )


def _create_form() -> rx.Component:
    """Name + scopes + lifetime -> a token, shown once."""
    return rx.card(
        rx.form(
            rx.vstack(
                rx.heading("New API token", size="3"),
                rx.text("A token lets a script or a bot list, read and decide your reviews with exactly your rights. "
                        "It is shown once; the app keeps only its hash.", size="2", color=theme.MUTED, style=theme.WRAP),
                rx.flex(
                    _labelled("Name", rx.el.input(name="name", type="text", required=True, max_length=80,
                                                  placeholder="e.g. deploy bot", data_testid="token-name", style=_INPUT)),
                    _labelled("Lasts", rx.el.select(*[rx.el.option(f"{d} days", value=d) for d in LIFETIMES], name="days",
                                                    default_value="30", data_testid="token-days", style=_INPUT)),
                    gap="12px", wrap="wrap", width="100%",
                ),
                rx.flex(_scope_box("read", "Read reviews"), _scope_box("decide", "Decide reviews"), gap="16px", wrap="wrap"),
                rx.button(rx.icon("key-round", size=14), "Create token", type="submit", data_testid="token-create"),
                spacing="3", width="100%",
            ),
            on_submit=AccountState.create_token, reset_on_submit=True,
        ),
        width="100%",
    )


def _result() -> rx.Component:
    """The last action's outcome: an error, or a message with the new token (filled by the browser)."""
    return rx.fragment(
        rx.cond(AccountState.error != "", rx.callout(AccountState.error, color_scheme="red", icon="triangle-alert",
                                                       width="100%", data_testid="token-error")),
        rx.cond(
            AccountState.message != "",
            rx.callout(
                rx.vstack(
                    rx.text(AccountState.message, size="2"),
                    rx.cond(AccountState.secret_shown, rx.code("", id=TOKEN_BOX_ID, size="2", data_testid="token-secret",
                                                               style={"wordBreak": "break-all", "userSelect": "all"})),
                    spacing="2",
                ),
                icon="info", width="100%", data_testid="token-message",
            ),
        ),
    )


def _token_row(row: TokenRow) -> rx.Component:
    """One token: name, start of the token, scopes, dates, state; Revoke (asked first) while it is active.
    The list is newest first (``store.api_tokens.tokens_of``)."""
    return rx.flex(
        rx.vstack(
            rx.hstack(
                rx.text(row.name, size="2", weight="medium", style={"overflowWrap": "anywhere"}),
                rx.badge(row.state, color_scheme=rx.cond(row.state == "active", "green", "gray"), data_testid="token-state"),
                rx.badge(row.scopes, color_scheme="blue", variant="soft"),
                align="center", spacing="2", wrap="wrap",
            ),
            rx.text(rx.code(row.prefix, size="1"), " · made ", row.created, " · expires ", row.expires, " · last used ",
                    row.last_used, size="1", color=theme.MUTED, style=theme.WRAP),
            spacing="1", min_width="0", flex="1 1 260px",
        ),
        rx.cond(
            row.state == "active",
            confirm_button(
                "Revoke", icon="ban", testid="token-revoke", title="Revoke this token?", go="Revoke token",
                body=rx.text(rx.text.strong(row.name, style={"overflowWrap": "anywhere"}), " (", rx.code(row.prefix), ") "
                             "stops working at once: every script or bot using it is refused from its next call. "
                             "This cannot be undone; make a new token if you need one.", size="2", style=theme.WRAP),
                on_go=AccountState.revoke_token(row.token_id), aria_label="Revoke the token " + row.name,
            ),
        ),
        custom_attrs={"data-name": row.name}, data_testid="token-row",
        justify="between", align="center", gap="12px", wrap="wrap", width="100%",
        padding_y="10px", border_top="1px solid var(--gray-4)",
    )


def account_page() -> rx.Component:
    """/account (on_load ``AccountState.load``): the signed-in person's API tokens."""
    return rx.vstack(
        rx.flex(
            rx.hstack(rx.link("← Chat", href="/", size="2"), rx.heading("API tokens", size="5"), align="center", spacing="4"),
            user_menu(),
            justify="between", align="center", width="100%",
        ),
        _create_form(),
        _result(),
        rx.card(
            rx.vstack(
                rx.heading("Your tokens", size="3"),
                rx.cond(AccountState.tokens.length() > 0, rx.box(rx.foreach(AccountState.tokens, _token_row), width="100%"),
                        rx.text("No tokens yet.", size="2", color=theme.MUTED)),
                rx.text("Use one with: curl -H 'Authorization: Bearer <token>' <this app>/api/v1/reviews", size="1",
                        color=theme.MUTED, style=theme.WRAP),
                spacing="2", width="100%",
            ),
            width="100%", data_testid="token-list",
        ),
        padding=["16px", "16px", "24px"], spacing="4", width="100%", max_width="960px", margin="0 auto",
        box_sizing="border-box",
    )
