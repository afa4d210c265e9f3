"""Pure rules of accounts: password hashing, the sliding window, emails, display names, tokens."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hitl_app.auth.passwords import hash_password_sync, verify_password_sync
from hitl_app.auth.ratelimit import retry_after
from hitl_app.auth.text import check_new_password, clean_display_name, email_key, normalize_email
from hitl_app.auth.tokens import hash_token, new_token
from hitl_app.auth.types import AuthError, Role, TooManyAttempts

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
W = timedelta(minutes=15)


def test_password_hash_is_salted_argon2id_and_verifies():
    a, b = hash_password_sync("correct horse"), hash_password_sync("correct horse")
    assert a.startswith("$argon2id$") and a != b
    assert verify_password_sync("correct horse", a) is True
    assert verify_password_sync("Correct horse", a) is False


def test_verify_without_a_hash_or_with_a_broken_one_is_false():
    assert verify_password_sync("anything", None) is False
    assert verify_password_sync("anything", "$argon2id$broken") is False


def test_window_allows_until_the_limit():
    fails = [T0 + timedelta(minutes=i) for i in range(2)]
    assert retry_after(fails, now=T0 + timedelta(minutes=3), limit=3, window=W) is None


def test_window_refuses_until_the_oldest_counted_failure_leaves():
    fails = [T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)]
    assert retry_after(fails, now=T0 + timedelta(minutes=5), limit=3, window=W) == timedelta(minutes=10)


def test_window_with_more_failures_than_the_limit_waits_for_enough_of_them():
    fails = [T0 + timedelta(minutes=i) for i in range(5)]  # 5 failures, limit 3: the 3rd oldest must leave
    assert retry_after(fails, now=T0 + timedelta(minutes=5), limit=3, window=W) == timedelta(minutes=12)


def test_window_ignores_failures_older_than_the_window():
    fails = [T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)]
    assert retry_after(fails, now=T0 + timedelta(minutes=15, seconds=1), limit=3, window=W) is None


def test_wait_message_rounds_up_to_whole_minutes():
    assert str(TooManyAttempts(timedelta(seconds=61))) == "Too many attempts; try again in 2 minutes"
    assert str(TooManyAttempts(timedelta(seconds=5))) == "Too many attempts; try again in 1 minute"


@pytest.mark.parametrize("typed", ["Dana@Example.COM", "  dana@example.com\t", "DANA@EXAMPLE.COM"])
def test_emails_compare_case_insensitively(typed):
    assert email_key(typed) == "dana@example.com"


def test_email_keeps_its_shown_form():
    assert normalize_email(" Dana@Example.com ") == ("Dana@Example.com", "dana@example.com")


@pytest.mark.parametrize("bad", ["", "dana", "@example.com", "dana@", "a b@example.com", "a@b@c", "x" * 320 + "@e.com"])
def test_malformed_emails_are_refused_with_a_hint(bad):
    with pytest.raises(AuthError, match="like name@example.com"):
        normalize_email(bad)
    assert email_key(bad) == ""


def test_display_name_stays_plain_text():
    assert clean_display_name("<b>Dana</b>") == "<b>Dana</b>"
    assert clean_display_name("&lt;Dana&gt;") == "&lt;Dana&gt;"


def test_display_name_loses_control_bidi_and_zero_width_characters():
    assert clean_display_name("Da\u202ena\u200b\x00\n  Smith\r\n") == "Dana Smith"
    assert len(clean_display_name("x" * 100)) == 100
    assert len(clean_display_name("x" * 500, cut=True)) == 100  # a single sign-on provider's name is cut


def test_a_typed_name_over_the_limit_is_refused_with_the_limit_not_cut():
    with pytest.raises(AuthError, match=r"at most 100 characters for the name \(this one has 3,000\)"):
        clean_display_name("x" * 3000)
    with pytest.raises(AuthError, match="Enter a name"):
        clean_display_name("\u200b \n")


def test_new_password_rules():
    check_new_password("eight ch")
    with pytest.raises(AuthError, match="at least 8"):
        check_new_password("seven c")


def test_tokens_are_random_and_stored_as_sha256():
    a, b = new_token(), new_token()
    assert a != b and len(a) >= 43
    assert len(hash_token(a)) == 64 and hash_token(a) == hash_token(a) != hash_token(b)


def test_role_parse_names_the_choices():
    assert Role.parse(" Reviewer ") is Role.REVIEWER
    with pytest.raises(AuthError, match="member, reviewer or admin"):
        Role.parse("owner")
