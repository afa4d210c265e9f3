"""The delivery signature (webhooks/signing.py) against the example receiver's own check, and the
back-off (webhooks/deliverer.py)."""

from __future__ import annotations

import pytest

from examples.webhooks.receiver import Refused
from examples.webhooks.receiver import verify as example_verify
from hitl_app.webhooks.deliverer import DeliveryRules
from hitl_app.webhooks.signing import SignatureError, delivery_headers, signature_header, verify

BODY = b'{"id":"evt_1","type":"run.finished","data":{"outcome":"finished"}}'
SECRET = "whsec_test"


def test_a_signed_body_checks_on_both_sides_and_a_change_does_not():
    header = signature_header(SECRET, 1_700_000_000, BODY)
    assert header.startswith("t=1700000000,v1=")
    assert verify(SECRET, header, BODY, now=1_700_000_010) == 1_700_000_000
    assert example_verify(SECRET, header, BODY, now=1_700_000_010) == 1_700_000_000
    for secret, body, now in ((SECRET, BODY + b" ", 1_700_000_010), ("whsec_other", BODY, 1_700_000_010),
                              (SECRET, BODY, 1_700_000_000 + 301)):
        with pytest.raises(SignatureError):
            verify(secret, header, body, now=now)
        with pytest.raises(Refused):
            example_verify(secret, header, body, now=now)
    for bad in ("", "v1=abc", "t=x,v1=abc", "t=1,t=2,v1=abc"):
        with pytest.raises(SignatureError, match="malformed"):
            verify(SECRET, bad, BODY, now=1)


def test_headers_carry_the_event_id_and_type():
    headers = delivery_headers(secret=SECRET, timestamp=5, body=BODY, event_id="evt_1", delivery_id=7, event_type="run.finished")
    assert (headers["Hitl-Event-Id"], headers["Hitl-Delivery-Id"], headers["Hitl-Event-Type"]) == ("evt_1", "7", "run.finished")
    assert headers["Content-Type"] == "application/json"


def test_the_back_off_doubles_up_to_its_cap():
    rules = DeliveryRules(backoff_s=10, backoff_max_s=60)
    waits = [rules.backoff(n) for n in (1, 2, 3, 4, 5)]
    for wait, base in zip(waits, (10, 20, 40, 60, 60), strict=True):
        assert base <= wait <= base * 1.1
    assert rules.lease_s > rules.timeout_s
