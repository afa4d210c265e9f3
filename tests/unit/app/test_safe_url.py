"""Connection URLs shown in logs and start-up errors never carry a password."""

from __future__ import annotations

import pytest

from hitl_app.logsafe import safe_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:S3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("redis://app:S3cret@cache:6379", "redis://app:***@cache:6379"),
        ("postgresql://db:5432/hitl?user=hitl&password=S3cret", "postgresql://db:5432/hitl?user=hitl&password=***"),
        ("postgresql+psycopg://hitl:S3cret@db/hitl?sslmode=require", "postgresql+psycopg://hitl:***@db/hitl?sslmode=require"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("sqlite:////tmp/hitl.sqlite", "sqlite:////tmp/hitl.sqlite"),
    ],
)
def test_safe_url_hides_passwords(url, shown):
    assert safe_url(url) == shown
    assert "S3cret" not in safe_url(url)


def test_safe_url_of_garbage_shows_nothing_secret():
    assert "S3cret" not in safe_url("not a url :S3cret@")
