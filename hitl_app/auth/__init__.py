"""Accounts and sign-in: who is using the app and with which role (pure Python, no reflex).

The rest of the app uses ``Principal`` and ``Role`` and these functions (all async, keyword-only,
taking the app database's async engine):

- sessions: ``sign_in``, ``resolve_session`` (on every event), ``sign_out``, ``sign_out_everywhere``
- accounts: ``first_run_needed``, ``create_admin``, ``create_invite``, ``accept_invite``,
  ``create_with_temporary_password``, ``add_account``, ``change_password``, ``set_role``,
  ``disable``, ``enable``, ``find_account``, ``list_accounts``
- invites after they were made: ``pending_invites``, ``revoke_invite``, ``invite_refusal``, ``check_invite``
- the browser side: ``hitl_app.auth.http`` (sign-in/out and single sign-on routes), ``hitl_app.auth.cookie``
  (the session cookie), ``hitl_app.auth.form_errors`` (the forms' error codes and sentences)
  and ``hitl_app.auth.oidc`` (OpenID Connect code flow).
"""

from hitl_app.auth.accounts import (
    AccountView,
    accept_invite,
    add_account,
    change_password,
    create_admin,
    create_invite,
    create_with_temporary_password,
    disable,
    enable,
    find_account,
    first_run_needed,
    list_accounts,
    set_role,
)
from hitl_app.auth.invites import InviteView, check_invite, invite_refusal, pending_invites, revoke_invite
from hitl_app.auth.sessions import resolve_session, resolve_session_hash, sign_in, sign_out, sign_out_everywhere
from hitl_app.auth.types import (
    SYSTEM,
    AccountDisabled,
    AuthConfig,
    AuthError,
    NotAllowed,
    Principal,
    Role,
    TooManyAttempts,
    WrongCredentials,
)

__all__ = [
    "SYSTEM", "AccountDisabled", "AccountView", "AuthConfig", "AuthError", "InviteView", "NotAllowed", "Principal",
    "Role", "TooManyAttempts", "WrongCredentials", "accept_invite", "add_account", "change_password", "check_invite",
    "create_admin",
    "create_invite", "create_with_temporary_password", "disable", "enable", "find_account", "first_run_needed",
    "invite_refusal", "list_accounts", "pending_invites", "resolve_session",
    "resolve_session_hash", "revoke_invite", "set_role", "sign_in",
    "sign_out", "sign_out_everywhere",
]
