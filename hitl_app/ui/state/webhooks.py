"""State of the webhooks page (/admin/webhooks): register endpoints, turn them off and on, rotate
their secret or delete them (each asked first, on the page), read the delivery log and send a
delivery again. Admins only: every handler re-checks the signed-in account (``_admin``) before it
reads or changes anything. An endpoint's signing secret goes to the browser once, when it is made or
rotated, in a one-shot event (``show_secret``), never in a state var.
"""

# Tested by: tests/e2e/test_webhooks_page.py

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import reflex as rx
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import Principal
from hitl_app.runtime import get_runtime
from hitl_app.store import webhooks as store
from hitl_app.ui.state.admin import show_secret
from hitl_app.ui.state.session import SessionState, sign_in_redirect
from hitl_app.webhooks.destinations import checked_destination, parse_networks

SECRET_BOX_ID = "webhook-secret"
"""The DOM id of the box the new endpoint's secret is written into."""
EVENTS = list(store.WEBHOOK_EVENTS)


@dataclass
class EndpointRow:
    """One endpoint as listed: id, URL, its events (comma-separated), on or off, since when."""

    endpoint_id: int
    url: str
    events: str
    active: bool
    created: str


@dataclass
class DeliveryRow:
    """One delivery in the log: its event, endpoint, status, how many tries (``"1 try"``,
    ``"3 tries"``) and the last result; ``tries`` is one line per attempt (``"Dec 5, 12:01:03 UTC
    · HTTP 500 · 31 ms"``)."""

    delivery_id: int
    event_id: str
    event_type: str
    url: str
    status: str
    attempts: str
    last_result: str
    created: str
    tries: list[str]


def _when(at: datetime) -> str:
    return f"{at.astimezone(UTC):%b %-d, %H:%M:%S} UTC"


def _session() -> AsyncSession:
    return AsyncSession(get_runtime().engines.async_, expire_on_commit=False)


class WebhooksState(SessionState):
    """The endpoints, the latest deliveries, and the outcome of the last action."""

    endpoints: list[EndpointRow] = []
    deliveries: list[DeliveryRow] = []
    message: str = ""
    error: str = ""
    secret_shown: bool = False

    async def _admin(self) -> Principal | None:
        who = await self._require_principal()
        if who is None or not who.is_admin:
            self.endpoints, self.deliveries, self.secret_shown = [], [], False
            return None
        return who

    def _an_endpoint_id(self, endpoint_id: object) -> bool:
        """An endpoint button's first step (rotate, delete), after the admin check: clears the last
        message and shown secret; False, with "No such endpoint.", when ``endpoint_id`` is no id."""
        self.message = self.error = ""
        self.secret_shown = False
        if isinstance(endpoint_id, bool) or not isinstance(endpoint_id, int):
            self.error = "No such endpoint."
            return False
        return True

    def _leave(self):
        return sign_in_redirect() if not self.user_name else rx.redirect("/")

    async def _reload(self) -> None:
        async with _session() as s:
            endpoints = await store.list_endpoints(session=s)
            recent = await store.recent_deliveries(session=s, limit=50)
            tries = await store.attempts_of(session=s, delivery_ids=[d.id for d in recent if d.id is not None])
        urls = {e.id: e.url for e in endpoints}
        by_delivery: dict[int, list[str]] = {}
        for a in tries:
            result = a.result or (f"HTTP {a.status_code}" if a.status_code else "no answer")
            by_delivery.setdefault(a.delivery_id, []).append(f"{_when(a.at)} · {result} · {a.duration_ms} ms")
        self.endpoints = [EndpointRow(e.id or 0, e.url, ", ".join(e.events or []), e.active, _when(e.created_at))
                          for e in endpoints]
        self.deliveries = [
            DeliveryRow(d.id or 0, d.event_id, d.event_type, urls.get(d.endpoint_id, "(removed)"), d.status,
                        f"{d.attempts} {'try' if d.attempts == 1 else 'tries'}",
                        d.last_result or "not tried yet", _when(d.created_at), by_delivery.get(d.id or 0, []))
            for d in recent
        ]

    @rx.event
    async def load(self):
        """on_load of /admin/webhooks (admins only; others go back to the chat)."""
        if await self._admin() is None:
            return self._leave()
        self.message = self.error = ""
        self.secret_shown = False
        await self._reload()
        return None

    @rx.event
    async def refresh(self):
        """Read the endpoints and the delivery log again."""
        if await self._admin() is None:
            return self._leave()
        await self._reload()
        return None

    @rx.event
    async def add(self, form_data: dict[str, Any]):
        """Register an endpoint from the form (``url``, one checkbox per event); its secret is shown once."""
        if (who := await self._admin()) is None:
            return self._leave()
        self.message = self.error = ""
        self.secret_shown = False
        raw = form_data.get("url") if isinstance(form_data, dict) else None
        events = [e for e in EVENTS if isinstance(form_data, dict) and form_data.get(e) in ("on", True, "true")]
        try:
            allowed = parse_networks(get_runtime().settings.webhook_allow_networks)
            url = await checked_destination(raw if isinstance(raw, str) else "", allowed)
            if not events:
                raise ValueError("Pick at least one event to send.")
        except ValueError as exc:
            self.error = str(exc)
            return None
        async with _session() as s:
            endpoint = await store.add_endpoint(session=s, url=url, events=events, by=who.display_name)
        self.message = "Endpoint added. Its signing secret is below: copy it now, it is not shown again."
        self.secret_shown = True
        await self._reload()
        return show_secret(endpoint.secret, SECRET_BOX_ID)

    @rx.event
    async def set_active(self, endpoint_id: int, active: bool):
        """Turn an endpoint on (events are queued for it again) or off (nothing more is queued)."""
        if await self._admin() is None:
            return self._leave()
        self.message = self.error = ""
        if isinstance(endpoint_id, bool) or not isinstance(endpoint_id, int) or not isinstance(active, bool):
            self.error = "No such endpoint."
            return None
        async with _session() as s:
            found = await store.set_active(session=s, endpoint_id=endpoint_id, active=active)
        self.message = ("Endpoint on: new events are sent to it." if active else "Endpoint off: nothing more is queued for it."
                        ) if found else ""
        self.error = "" if found else "No such endpoint."
        await self._reload()
        return None

    @rx.event
    async def send_again(self, delivery_id: int):
        """Queue a delivery again now (the same event id: a receiver that has it drops it)."""
        if await self._admin() is None:
            return self._leave()
        self.message = self.error = ""
        if isinstance(delivery_id, bool) or not isinstance(delivery_id, int):
            self.error = "No such delivery."
            return None
        async with _session() as s:
            queued = await store.send_again(session=s, delivery_id=delivery_id)
        if queued:
            self.message = f"Delivery #{delivery_id} queued again; refresh to see the new try."
        else:
            self.error = f"Delivery #{delivery_id} is being sent right now (or is gone); refresh and try again."
        await self._reload()
        return None

    @rx.event
    async def rotate(self, endpoint_id: int):
        """Give an endpoint a new secret (asked first on the page); shown once, every try from now on is signed with it."""
        if await self._admin() is None:
            return self._leave()
        if not self._an_endpoint_id(endpoint_id):
            return None
        async with _session() as s:
            secret = await store.rotate_secret(session=s, endpoint_id=endpoint_id)
        await self._reload()
        if secret is None:
            self.error = "No such endpoint (removed meanwhile?)."
            return None
        self.message = (f"New secret for endpoint #{endpoint_id} below: copy it now, it is not shown again. Every delivery "
                        "from now on is signed with it, so give it to the receiver now.")
        self.secret_shown = True
        return show_secret(secret, SECRET_BOX_ID)

    @rx.event
    async def delete(self, endpoint_id: int):
        """Remove an endpoint (asked first on the page); what was not sent to it yet is marked failed, the log stays."""
        if await self._admin() is None:
            return self._leave()
        if not self._an_endpoint_id(endpoint_id):
            return None
        async with _session() as s:
            found = await store.delete_endpoint(session=s, endpoint_id=endpoint_id)
        self.message = f"Endpoint #{endpoint_id} deleted: nothing more is sent to it." if found else ""
        self.error = "" if found else "No such endpoint (removed meanwhile?)."
        await self._reload()
        return None
