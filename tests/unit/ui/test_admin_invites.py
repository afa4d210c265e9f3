"""How the Accounts page words an invite's expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hitl_app.ui.state.admin import expires_text

NOW = datetime(2026, 12, 1, 14, 50, tzinfo=UTC)


def test_expiry_is_rounded_to_the_nearest_day_hour_or_minute_with_the_date():
    assert expires_text(NOW + timedelta(days=3) - timedelta(seconds=5), NOW) == "in 3 days (Dec 4, 14:49 UTC)"
    assert expires_text(NOW + timedelta(hours=26), NOW) == "in 1 day (Dec 2, 16:50 UTC)"
    assert expires_text(NOW + timedelta(hours=5, minutes=10), NOW) == "in 5 h (Dec 1, 20:00 UTC)"
    assert expires_text(NOW + timedelta(minutes=7), NOW) == "in 7 min (Dec 1, 14:57 UTC)"
