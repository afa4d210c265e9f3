"""The loop that delivers queued webhook events, in every app process (like the sweeper).

Each pass claims the due deliveries (``hitl_app.store.webhooks.claim_due``: one worker wins each,
a claim older than ``lease_s`` is taken again) and POSTs each, signed (``hitl_app.webhooks.signing``,
a fresh timestamp per try), with a time limit; redirects are not followed. A 2xx answer delivers
it; a destination the rule refuses (``destinations``: never link-local or metadata addresses,
private ones only when allowed) is not connected to; anything else (an error status, no answer in
time, no connection, a refused destination) is logged as an attempt and
tried again after an exponential back-off (``backoff_s``), until ``max_attempts`` are used; then
it is ``failed`` (an admin can send it again). The queue lives in the database, so what a process
had not delivered when it stopped is delivered by the next one (or by another worker).
"""

# Tested by: tests/integration/webhooks/test_webhook_delivery.py - a real receiver on loopback that fails, hangs and recovers

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import httpx
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.tables import utcnow
from hitl_app.store.webhooks import WebhookDelivery, WebhookEndpoint, claim_due, record_attempt
from hitl_app.webhooks.destinations import Network, guarded_client
from hitl_app.webhooks.signing import delivery_headers

log = logging.getLogger("hitl_app.webhooks")


@dataclass(frozen=True)
class DeliveryRules:
    """How deliveries are tried (seconds): between two passes (``poll_s``), the time limit of one
    POST (``timeout_s``), the first back-off (``backoff_s``, doubled each try up to
    ``backoff_max_s``, with up to 10 % jitter), how many tries in all (``max_attempts``), and the
    private networks a receiver may be in (``allowed``, ``hitl_app.webhooks.destinations``)."""

    poll_s: float = 2.0
    timeout_s: float = 10.0
    backoff_s: float = 10.0
    backoff_max_s: float = 3600.0
    max_attempts: int = 12
    allowed: tuple[Network, ...] = ()  # private networks deliveries may reach (``destinations``)

    @property
    def lease_s(self) -> float:
        """How long a claim holds before another worker may take it (a try's limit and a margin)."""
        return self.timeout_s * 2 + 10

    def backoff(self, attempts: int) -> float:
        """Seconds to wait after ``attempts`` failed tries (1, 2, ...)."""
        base = min(self.backoff_max_s, self.backoff_s * 2 ** max(0, attempts - 1))
        return base * (1 + random.random() / 10)  # noqa: S311 - jitter, not a secret


def worker_name() -> str:
    """This process as a claimant: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class WebhookDeliverer:
    """Delivers the queue (see the module docstring). ``start`` runs the loop as a task;
    ``deliver_due`` is one pass (tests call it too); ``aclose`` stops it."""

    def __init__(self, *, session: Callable[[], AsyncSession], rules: DeliveryRules | None = None) -> None:
        self._session = session
        self.rules = rules or DeliveryRules()
        self.worker = worker_name()
        self._task: asyncio.Task[None] | None = None
        self._client = guarded_client(self.rules.timeout_s, self.rules.allowed)

    def start(self) -> None:
        """Start the loop (once)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="webhook-deliveries")

    async def aclose(self) -> None:
        """Stop the loop (a try in flight is cancelled; its claim lapses and it is tried again)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._client.aclose()

    async def _run(self) -> None:
        while True:
            try:
                await self.deliver_due()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the loop must go on (a database that blinked)
                log.exception("webhook pass failed")
            await asyncio.sleep(self.rules.poll_s)

    async def deliver_due(self) -> int:
        """Claim and send what is due now; returns how many were tried."""
        async with self._session() as session:
            taken = await claim_due(session=session, worker=self.worker, now=utcnow(),
                                    lease=timedelta(seconds=self.rules.lease_s))
        await asyncio.gather(*(self._send(d, e) for d, e in taken))
        return len(taken)

    async def _send(self, delivery: WebhookDelivery, endpoint: WebhookEndpoint) -> None:
        body = delivery.body.encode("utf-8")
        headers = delivery_headers(secret=endpoint.secret, timestamp=int(time.time()), body=body,
                                   event_id=delivery.event_id, delivery_id=delivery.id or 0,
                                   event_type=delivery.event_type)
        started = time.monotonic()
        status, result = 0, ""
        try:
            response = await self._client.post(endpoint.url, content=body, headers=headers)
            status, result = response.status_code, f"HTTP {response.status_code}"
        except httpx.TimeoutException:
            result = f"no answer within {self.rules.timeout_s:g} s"
        except httpx.HTTPError as exc:
            result = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        delivered = 200 <= status < 300
        tries = delivery.attempts + 1
        retry = None if delivered or tries >= self.rules.max_attempts else utcnow() + timedelta(seconds=self.rules.backoff(tries))
        async with self._session() as session:
            await record_attempt(session=session, delivery=delivery, worker=self.worker, status_code=status, result=result,
                                 duration_ms=int((time.monotonic() - started) * 1000), delivered=delivered, retry_at=retry)
        if not delivered:
            log.info("webhook not delivered delivery=%s event=%s try=%s: %s", delivery.id, delivery.event_id, tries, result)
