"""A delivery's signature: HMAC-SHA256 over ``"<timestamp>.<body>"`` with the endpoint's secret,
the scheme Stripe and GitHub use.

Headers of every delivery (``delivery_headers``):

- ``Hitl-Event-Id``: the event's id, the same on every try and every "send again" (a receiver
  drops an id it has seen: deliveries are at least once);
- ``Hitl-Delivery-Id``: this endpoint's delivery of it; ``Hitl-Event-Type``: e.g. ``review.decided``;
- ``Hitl-Signature``: ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">``. The body holds the
  event id and type, so they are signed too; a receiver refuses a timestamp older than a few
  minutes (``verify``'s ``tolerance_s``), so a captured delivery cannot be replayed later.

``examples/webhooks/receiver.py`` checks the same signature on its own (it imports nothing of the app).
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "Hitl-Signature"
EVENT_ID_HEADER = "Hitl-Event-Id"
DELIVERY_ID_HEADER = "Hitl-Delivery-Id"
EVENT_TYPE_HEADER = "Hitl-Event-Type"
TOLERANCE_S = 300
"""How old (or how far ahead) a signed timestamp may be, in seconds, for ``verify``."""


class SignatureError(ValueError):
    """A delivery whose signature does not check (says why)."""


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``b"<timestamp>." + body`` under ``secret`` (UTF-8)."""
    return hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    """``t=<timestamp>,v1=<signature>``."""
    return f"t={timestamp},v1={sign(secret, timestamp, body)}"


def delivery_headers(
    *, secret: str, timestamp: int, body: bytes, event_id: str, delivery_id: int, event_type: str
) -> dict[str, str]:
    """Every header of one try (JSON content type, the ids, the type and the signature)."""
    return {
        "Content-Type": "application/json", "User-Agent": "hitl_app-webhooks/1",
        EVENT_ID_HEADER: event_id, DELIVERY_ID_HEADER: str(delivery_id), EVENT_TYPE_HEADER: event_type,
        SIGNATURE_HEADER: signature_header(secret, timestamp, body),
    }


def verify(secret: str, header: str, body: bytes, *, now: float, tolerance_s: float = TOLERANCE_S) -> int:
    """Check a ``Hitl-Signature`` header against ``body``; returns its timestamp.

    Raises SignatureError when the header is malformed, the timestamp is more than
    ``tolerance_s`` seconds from ``now`` (unix seconds), or no ``v1`` signature matches
    (compared in constant time)."""
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    stamps = [v for k, v in parts if k.strip() == "t"]
    given = [v.strip() for k, v in parts if k.strip() == "v1"]
    if len(stamps) != 1 or not stamps[0].strip().isdigit() or not given:
        raise SignatureError("malformed signature header (expected t=<unix seconds>,v1=<hex>)")
    timestamp = int(stamps[0])
    if abs(now - timestamp) > tolerance_s:
        raise SignatureError(f"timestamp {timestamp} is more than {tolerance_s:g} s from now: a replay, or a clock off")
    expected = sign(secret, timestamp, body)
    if not any(hmac.compare_digest(expected, g) for g in given):
        raise SignatureError("signature does not match the body and timestamp")
    return timestamp
