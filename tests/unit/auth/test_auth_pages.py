"""The sign-in pages render the stable test ids and post plain HTML forms to the auth routes."""

from __future__ import annotations

from hitl_app.ui.pages import auth as auth_pages


def test_sign_in_page_posts_to_the_auth_routes_with_the_test_ids():
    html = str(auth_pages.sign_in_page().render())
    for testid in ("auth-email", "auth-password", "auth-name", "auth-submit", "auth-error"):
        assert testid in html
    assert "/auth/sign-in" in html and "/auth/first-run" in html


def test_invite_and_change_password_forms():
    assert "/auth/invite" in str(auth_pages.invite_page().render())
    assert "/auth/change-password" in str(auth_pages.sign_in_page().render())


def test_user_menu_signs_out_with_a_form_post():
    from hitl_app.ui.components.user_menu import user_menu

    out = str(user_menu().render())
    assert "/auth/sign-out" in out and "sign-out" in out and "user-menu" in out
