"""A small webhook receiver for hitl_app that checks every delivery's signature (standard library only).

Run it beside the app, then register ``http://127.0.0.1:8787/hooks`` on the app's Webhooks page
(/admin/webhooks) and give the secret it shows here::

    HITL_WEBHOOK_SECRET=whsec_... python examples/webhooks/receiver.py --port 8787

For each POST it checks the ``Hitl-Signature`` header (``t=<unix seconds>,v1=<hex>``): the
HMAC-SHA256 of ``"<t>.<raw body>"`` under the secret, compared in constant time, with ``t`` at most
five minutes from now (an old delivery replayed is refused). A delivery that passes is answered 204
and printed as one JSON line; one whose ``Hitl-Event-Id`` was seen already is answered 204 and
dropped (the app delivers at least once, so the same event can come twice). A delivery that fails
the check is answered 400 with the reason, and nothing is done with it.

Check the signature on the raw bytes as received, before parsing the JSON: parsing and printing it
again changes the bytes.

Rotating the secret: on the Webhooks page, **Rotate secret** (asked first) shows the endpoint's new
secret once, and every delivery from then on (a retry of an older event too) is signed with it; the
old one stops working at once. To switch without refusing a delivery already on its way, restart
the receiver with both for a while, then drop the old one::

    HITL_WEBHOOK_SECRET=whsec_new HITL_WEBHOOK_SECRET_PREVIOUS=whsec_old python examples/webhooks/receiver.py

A deleted endpoint gets nothing more (what was not sent to it yet is marked failed in the log).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_S = 300
MAX_BODY = 1_000_000


class Refused(ValueError):
    """The delivery is not from the app (or is a replay); the message says why."""


def verify(secret: str, header: str, body: bytes, now: float | None = None, tolerance_s: float = TOLERANCE_S) -> int:
    """Check ``header`` (``Hitl-Signature``) against the raw ``body``; returns its timestamp or
    raises ``Refused``."""
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    stamps = [v.strip() for k, v in parts if k.strip() == "t"]
    given = [v.strip() for k, v in parts if k.strip() == "v1"]
    if len(stamps) != 1 or not stamps[0].isdigit() or not given:
        raise Refused("malformed Hitl-Signature header")
    timestamp = int(stamps[0])
    if abs((time.time() if now is None else now) - timestamp) > tolerance_s:
        raise Refused("timestamp too far from now (a replay, or a clock off)")
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, g) for g in given):
        raise Refused("signature does not match")
    return timestamp


def verify_any(secrets: list[str], header: str, body: bytes, now: float | None = None) -> int:
    """``verify`` with each secret in turn (the current one, then the previous one while rotating);
    returns the timestamp of the first that passes, else raises the first secret's ``Refused``."""
    problems = []
    for secret in [s for s in secrets if s]:
        try:
            return verify(secret, header, body, now)
        except Refused as exc:
            problems.append(exc)
    raise problems[0] if problems else Refused("no secret set")


class Receiver(BaseHTTPRequestHandler):
    """Answers POSTs as the module docstring says."""

    secrets: list[str] = []
    seen: set[str] = set()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        """Check, drop a duplicate, print; 204, or 400 with the reason."""
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self._answer(413, "too large")
        body = self.rfile.read(length)
        try:
            verify_any(self.secrets, self.headers.get("Hitl-Signature", ""), body)
        except Refused as exc:
            return self._answer(400, str(exc))
        event_id = self.headers.get("Hitl-Event-Id", "")
        if event_id in self.seen:
            return self._answer(204, "")
        self.seen.add(event_id)
        event = json.loads(body)
        print(json.dumps({"id": event["id"], "type": event["type"], "data": event["data"]}), flush=True)
        return self._answer(204, "")

    def _answer(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        """Access lines go to stderr (stdout carries only the events)."""
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def main(argv: list[str] | None = None) -> None:
    """Serve on 127.0.0.1:``--port`` with the secret from ``HITL_WEBHOOK_SECRET`` (and, while
    rotating, the old one from ``HITL_WEBHOOK_SECRET_PREVIOUS``)."""
    parser = argparse.ArgumentParser(description="Receive and check hitl_app webhooks.")
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    Receiver.secrets = [os.environ.get("HITL_WEBHOOK_SECRET", ""), os.environ.get("HITL_WEBHOOK_SECRET_PREVIOUS", "")]
    if not Receiver.secrets[0]:
        sys.exit("set HITL_WEBHOOK_SECRET to the endpoint's secret (shown on the Webhooks page)")
    server = ThreadingHTTPServer((args.host, args.port), Receiver)
    print(f"listening on http://{args.host}:{server.server_port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
