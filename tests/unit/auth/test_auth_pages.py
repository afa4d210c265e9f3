"""The sign-in pages render the stable test ids and post plain HTML forms to the auth routes."""

from __future__ import annotations

from hitl_app.ui import auth_pages


def test_sign_in_page_posts_to_the_auth_routes_with_the_test_ids():
    html = str(auth_pages.sign_in_page().render())
    for testid in ("auth-email", "auth-password", "auth-name", "auth-submit", "auth-error"):
        assert testid in html
    assert "/auth/sign-in" in html and "/auth/first-run" in html


def test_invite_and_sign_out_forms():
    assert "/auth/invite" in str(auth_pages.invite_page().render())
    out = str(auth_pages.sign_out_button().render())
    assert "/auth/sign-out" in out and "sign-out" in out
