"""The admin page (/admin): invite people, create accounts with a temporary password, set roles,
disable. Names and emails are text nodes, never markup."""

# Tested by: tests/e2e/test_accounts.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.components.user_menu import user_menu
from hitl_app.ui.state.admin import ROLES, SECRET_BOX_ID, AccountRow, AdminState, InviteRow

_SELECT = {"padding": "6px 8px", "borderRadius": "6px", "border": "1px solid var(--gray-7)",
           "background": "var(--color-background)",
           "fontSize": "14px", "height": "34px", "boxSizing": "border-box"}
_INPUT = {**_SELECT, "width": "100%"}


def _role_select(testid: str, wide: bool = False, **props) -> rx.Component:
    style = {**_SELECT, "width": "100%"} if wide else _SELECT
    return rx.el.select(*[rx.el.option(r, value=r) for r in ROLES], data_testid=testid, style=style, **props)


def _text_input(name: str, kind: str, testid: str) -> rx.Component:
    return rx.el.input(name=name, type=kind, required=True, data_testid=testid, style=_INPUT)


def _labelled(label: str, control: rx.Component) -> rx.Component:
    return rx.el.label(rx.text(label, size="1", weight="medium"), control,
                       style={"display": "flex", "flexDirection": "column", "gap": "4px", "flex": "1 1 160px", "minWidth": "0"})


def _invite_form() -> rx.Component:
    """Email + role -> a one-time invite link."""
    return rx.card(
        rx.form(
            rx.vstack(
                rx.heading("Invite by link", size="3"),
                rx.text("They choose their own name and password. The link works once.", size="2", color=theme.MUTED),
                rx.flex(
                    _labelled("Email", _text_input("email", "email", "invite-email")),
                    _labelled("Role", _role_select("invite-role", name="role", default_value="member", wide=True)),
                    gap="12px", wrap="wrap", width="100%",
                ),
                rx.button(rx.icon("link", size=14), "Create invite link", type="submit", data_testid="invite-submit"),
                spacing="3", width="100%",
            ),
            on_submit=AdminState.invite, reset_on_submit=True,
        ),
        flex="1 1 320px",
    )


def _temporary_form() -> rx.Component:
    """Email + name + role -> an account with a temporary password."""
    return rx.card(
        rx.form(
            rx.vstack(
                rx.heading("Create with a temporary password", size="3"),
                rx.text("You hand over the password; they must change it at first sign-in.", size="2", color=theme.MUTED),
                rx.flex(
                    _labelled("Email", _text_input("email", "email", "temp-email")),
                    _labelled("Name", _text_input("name", "text", "temp-name")),
                    _labelled("Role", _role_select("temp-role", name="role", default_value="member", wide=True)),
                    gap="12px", wrap="wrap", width="100%",
                ),
                rx.button(rx.icon("key-round", size=14), "Create account", type="submit", data_testid="temp-submit"),
                spacing="3", width="100%",
            ),
            on_submit=AdminState.create_temporary, reset_on_submit=True,
        ),
        flex="1 1 320px",
    )


def _result() -> rx.Component:
    """The last action's outcome: an error, or a message with the link / password to hand over."""
    return rx.fragment(
        rx.cond(
            AdminState.error != "",
            rx.callout(AdminState.error, color_scheme="red", icon="triangle-alert", width="100%", data_testid="admin-error"),
        ),
        rx.cond(
            AdminState.message != "",
            rx.callout(
                rx.vstack(
                    rx.text(AdminState.message, size="2"),
                    rx.cond(
                        AdminState.secret_shown,  # filled by the browser from show_secret (never a state var)
                        rx.code("", id=SECRET_BOX_ID, size="2", data_testid="admin-secret",
                                style={"wordBreak": "break-all", "userSelect": "all"}),
                    ),
                    spacing="2",
                ),
                icon="info", width="100%", data_testid="admin-message",
            ),
        ),
    )


def _invite_row(row: InviteRow) -> rx.Component:
    """One pending invite: who, role, who invited and until when; Revoke (the link stops working)."""
    return rx.flex(
        rx.vstack(
            rx.hstack(
                rx.text(row.email, size="2", weight="medium", style={"overflowWrap": "anywhere"}),
                rx.badge(row.role, color_scheme="gray", variant="soft"),
                align="center", spacing="2", wrap="wrap",
            ),
            rx.text("Invited by ", row.invited_by, " · expires ", row.expires, size="1", color=theme.MUTED, style=theme.WRAP),
            spacing="1", min_width="0", flex="1 1 240px",
        ),
        rx.hstack(
            rx.button(
                rx.icon("link", size=14), "New link", size="1", variant="soft",
                on_click=AdminState.renew_invite(row.invite_id), data_testid="invite-renew",
                aria_label="A new link for " + row.email + " (the earlier one stops working)",
                title="The link is shown once; this makes a new one and the earlier link stops working",
            ),
            rx.button(
                rx.icon("link-2-off", size=14), "Revoke", size="1", variant="soft", color_scheme="red",
                on_click=AdminState.revoke_invite(row.invite_id), data_testid="invite-revoke",
                aria_label="Revoke the invite for " + row.email,
            ),
            spacing="2",
        ),
        custom_attrs={"data-email": row.email},
        data_testid="invite-row",
        justify="between", align="center", gap="12px", wrap="wrap", width="100%",
        padding_y="10px", border_top="1px solid var(--gray-4)",
    )


def _pending_invites() -> rx.Component:
    """The invites not used, revoked or expired yet (shown only when there are some)."""
    return rx.cond(
        AdminState.invites.length() > 0,
        rx.card(
            rx.vstack(
                rx.heading("Pending invites", size="3"),
                rx.text("Links not used yet. Revoke one to make its link stop working.", size="2", color=theme.MUTED),
                rx.box(rx.foreach(AdminState.invites, _invite_row), width="100%"),
                spacing="2", width="100%",
            ),
            width="100%", data_testid="pending-invites",
        ),
    )


def _disable_dialog(row: AccountRow) -> rx.Component:
    """Disable, asked first (``disable-confirm``): it signs the person out everywhere at once."""
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(
            # high contrast: the soft red on its open-state background, and white on solid red, fall
            # under 4.5:1 (axe color-contrast, issue 23)
            rx.button("Disable", size="1", variant="soft", color_scheme="red", high_contrast=True, data_testid="disable-account"),
        ),
        rx.alert_dialog.content(
            rx.alert_dialog.title("Disable this account?", size="4"),
            rx.alert_dialog.description(
                rx.text.strong(row.name, style=theme.WRAP), " (", row.email, ") is signed out everywhere at once and "
                "cannot sign in until an admin enables the account again. Their threads and decisions stay.",
                size="2", style=theme.WRAP,
            ),
            rx.flex(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray", data_testid="disable-cancel")),
                rx.alert_dialog.action(
                    rx.button("Disable and sign out", color_scheme="red", high_contrast=True, data_testid="disable-confirm",
                              on_click=AdminState.set_disabled(row.account_id, True)),
                ),
                gap="3", justify="end", margin_top="16px", wrap="wrap",
            ),
            max_width="440px",
        ),
    )


def _account_row(row: AccountRow) -> rx.Component:
    disabled = row.status == "disabled"
    return rx.table.row(
        rx.table.cell(
            rx.text(row.name, size="2", weight="medium", style=theme.WRAP, data_testid="account-name"),
            rx.text(row.email, size="1", color=theme.MUTED, style=theme.WRAP), min_width="120px", max_width="280px",
        ),
        rx.table.cell(_role_select("role-select", value=row.role, on_change=lambda v: AdminState.set_role(row.account_id, v),
                                   aria_label="Role of " + row.name)),
        rx.table.cell(
            rx.badge(row.status, color_scheme=rx.cond(disabled, "red", rx.cond(row.status == "active", "green", "amber")),
                     high_contrast=True)
        ),
        rx.table.cell(
            rx.cond(
                disabled,
                rx.button("Enable", size="1", variant="soft", data_testid="enable-account",
                          on_click=AdminState.set_disabled(row.account_id, False)),
                _disable_dialog(row),
            )
        ),
        custom_attrs={"data-email": row.email},
        data_testid="account-row",
        align="center",
    )


def admin_page() -> rx.Component:
    """/admin (on_load ``AdminState.load``): admins only."""
    return rx.vstack(
        rx.flex(
            rx.hstack(rx.link("← Chat", href="/", size="2"), rx.heading("Accounts", size="5"),
                      rx.link("Webhooks", href="/admin/webhooks", size="2", data_testid="webhooks-link"),
                      align="center", spacing="4", wrap="wrap"),
            user_menu(),
            justify="between", align="center", width="100%",
        ),
        rx.flex(_invite_form(), _temporary_form(), gap="16px", wrap="wrap", width="100%"),
        _result(),
        _pending_invites(),
        rx.box(
            rx.table.root(
                rx.table.header(rx.table.row(*[rx.table.column_header_cell(h) for h in ("Person", "Role", "Status", "")])),
                rx.table.body(rx.foreach(AdminState.accounts, _account_row)),
                width="100%", size="2", style=theme.TABLE_IN_SCROLL_BOX,
            ),
            width="100%", overflow_x="auto", data_testid="admin-users",
        ),
        padding=["16px", "16px", "24px"],
        spacing="4",
        width="100%",
        max_width="960px",
        margin="0 auto",
        box_sizing="border-box",
    )
