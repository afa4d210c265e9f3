"""Small hardening rules: CSV formula injection, JSON edge cases, secrets and details kept out of
what users see, and the frontend-report sanitiser."""

from __future__ import annotations

import csv
import io
import logging

import pytest

from hitl_app.review import ReviewError
from hitl_app.review.validate import parse_args_json
from hitl_app.store.audit import EXPORT_FIELDS, AuditRow, to_csv


def _row(**over: object) -> AuditRow:
    base = dict(
        thread_id="t1", thread_title="T", interrupt_id="i1", action_index=0, tool_call_id="c1",
        tool_name="send_email", decision_type="reject", args_proposed='{"to": "a@b.co"}', args_executed="",
        message="no", reviewer="Dana", requested_at="2025-01-01T00:00:00+00:00",
        decided_at="2025-01-01T00:00:01+00:00", waited_seconds=1.0, checkpoint_id="cp",
    )
    base.update(over)
    return AuditRow(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("payload", ['=HYPERLINK("http://x.example","y")', "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_csv_export_neutralises_spreadsheet_formulas(payload: str) -> None:
    text = to_csv(rows=[_row(reviewer=payload, message=payload)])
    record = dict(zip(EXPORT_FIELDS, list(csv.reader(io.StringIO(text)))[1], strict=True))
    assert record["reviewer"] == "'" + payload
    assert record["message"] == "'" + payload


def test_csv_export_keeps_ordinary_cells_and_numbers() -> None:
    text = to_csv(rows=[_row(message="fine, thanks", waited_seconds=-0.5)])
    record = dict(zip(EXPORT_FIELDS, list(csv.reader(io.StringIO(text)))[1], strict=True))
    assert record["message"] == "fine, thanks"
    assert record["args_proposed"] == '{"to": "a@b.co"}'
    assert record["waited_seconds"] == "-0.5"  # a number the app wrote, not user text


@pytest.mark.parametrize("text", ['{"amount": NaN}', '{"amount": Infinity}', '{"amount": -Infinity}', '{"a": [1, NaN]}'])
def test_edit_json_refuses_nan_and_infinity(text: str) -> None:
    with pytest.raises(ReviewError) as info:
        parse_args_json(text)
    assert info.value.code == "bad_json"
    assert "NaN" in str(info.value) or "Infinity" in str(info.value)


def test_edit_json_refuses_deep_nesting_with_a_clear_message() -> None:
    with pytest.raises(ReviewError) as info:
        parse_args_json("[" * 60_000)
    assert info.value.code == "bad_json"
    assert "nested" in str(info.value)


def test_example_refund_refuses_nan_and_infinity(tmp_path, monkeypatch) -> None:
    from examples.support_agent.agent import actions_file, refund_payment

    monkeypatch.setenv("HITL_DATA_DIR", str(tmp_path))
    for amount in (float("nan"), float("inf")):
        out = refund_payment.invoke({"order_id": "A-1001", "amount": amount})
        assert out.startswith("Refused"), out
    assert not actions_file().exists()


def test_internal_run_error_shows_a_log_id_not_its_details(caplog: pytest.LogCaptureFixture) -> None:
    from hitl_app.runs.errors import describe_run_error

    exc = RuntimeError("(psycopg.OperationalError) connection to server at db.internal (10.0.0.5), user hitl_admin failed")
    with caplog.at_level(logging.ERROR, logger="hitl_app.runs.errors"):
        text = describe_run_error(exc)
    assert "db.internal" not in text and "hitl_admin" not in text
    assert "Press Retry" in text
    log_id = text.split("log id ")[1].split(")")[0]
    assert len(log_id) >= 6
    logged = [r.getMessage() for r in caplog.records]
    assert any(log_id in m and "db.internal" in m for m in logged), logged


def test_stored_internal_error_text_is_generic_too() -> None:
    from hitl_app.runs.errors import describe_error_text

    text = describe_error_text("OperationalError('could not connect to server at 10.0.0.5 as hitl_admin')")
    assert "10.0.0.5" not in text and "hitl_admin" not in text
    # provider errors keep their plain explanation
    assert "HTTP 429" in describe_error_text("OpenAIRateLimitError('Error code: 429 - slow down')")


@pytest.mark.parametrize(
    "url, secret",
    [
        ("postgresql://hitl:S3cretPW@db:5432/hitl", "S3cretPW"),
        ("postgresql://db:5432/hitl?user=hitl&password=S3cretPW", "S3cretPW"),
        ("redis://:S3cretRedisPW@127.0.0.1:6379/0", "S3cretRedisPW"),
        ("rediss://default:S3cretRedisPW@cache.example:6380/0?ssl_cert_reqs=none", "S3cretRedisPW"),
        ("postgresql://db/hitl?PASSWORD=S3cretPW&sslmode=require", "S3cretPW"),
    ],
)
def test_safe_url_hides_passwords_in_userinfo_and_query(url: str, secret: str) -> None:
    from hitl_app.logsafe import safe_url

    shown = safe_url(url)
    assert secret not in shown
    assert "***" in shown
    assert shown.split("://")[0] == url.split("://")[0]


def test_safe_url_keeps_urls_without_secrets() -> None:
    from hitl_app.logsafe import safe_url

    assert safe_url("sqlite:///data/hitl.sqlite") == "sqlite:///data/hitl.sqlite"
    assert safe_url("postgresql://hitl@db:5432/hitl?sslmode=require") == "postgresql://hitl@db:5432/hitl?sslmode=require"


def test_engines_do_not_log_sql_parameters(tmp_path) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    from hitl_app.store.db import make_engines

    engines = make_engines(f"sqlite:///{tmp_path / 'a.sqlite'}")
    try:
        with pytest.raises(SQLAlchemyError) as info:
            with engines.sync.connect() as conn:
                conn.execute(text("INSERT INTO missing_table VALUES (:v)"), {"v": "user secret text"})
        assert "user secret text" not in str(info.value)
    finally:
        engines.sync.dispose()


def test_frontend_report_is_one_short_escaped_line() -> None:
    from hitl_app.logsafe import one_log_line

    forged = "boom\n2025-01-01 00:00:00 INFO hitl_app: hitl_app started\r\n" + "x" * 200_000 + "\x1b[31m"
    line = one_log_line(forged, limit=2048)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert len(line.encode()) <= 2048 + 40
    assert "\\n2025-01-01" in line
    assert "truncated" in line


def test_httpx_and_provider_loggers_are_quiet() -> None:
    import hitl_app.logsafe as logsafe

    logsafe.quiet_noisy_loggers()
    for name in ("httpx", "httpcore", "openai", "anthropic"):
        assert logging.getLogger(name).getEffectiveLevel() >= logging.WARNING, name
