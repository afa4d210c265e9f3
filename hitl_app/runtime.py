"""The running app's one set of long-lived objects: engines, checkpointer, agent, thread service.

Opened once per server process by the Reflex lifespan (``hitl_app.hitl_app``) and closed at
shutdown; importing this module has no side effects. Event handlers reach the service through
``get_service()``, which raises a clear error when the lifespan is not running (e.g. under
``reflex compile``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import OperationalError
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app import traces
from hitl_app.bus.local import LocalRunBus
from hitl_app.bus.run_bus import RunBus
from hitl_app.desk.choices import CardChoices
from hitl_app.desk.sweeper import Sweeper
from hitl_app.errors import StartupError
from hitl_app.logsafe import safe_url
from hitl_app.reviewers.inbox import ReviewInbox, ReviewReminders
from hitl_app.reviewers.mailer import SmtpConfig
from hitl_app.runs.limits import RunLimits
from hitl_app.settings import Settings, get_settings
from hitl_app.store.db import Engines, create_schema, make_engines
from hitl_app.threads.service import ThreadService
from hitl_app.webhooks.deliverer import DeliveryRules, WebhookDeliverer
from hitl_app.webhooks.destinations import Network, parse_networks

log = logging.getLogger("hitl_app")


@dataclass
class Runtime:
    """What the lifespan opened: settings, database engines, the thread service and its sweeper
    (deadlines and undo windows, ``hitl_app.desk.sweeper``); ``risks``: tool name -> ``ToolRisk``
    from the policy (the cards' risk badges); ``inbox``: the review inbox (``hitl_app.reviewers.inbox``);
    ``origins``: MCP tool name -> ``ToolOrigin`` (the card's server and hint badges); ``mcp``: the
    MCP servers and their status (``hitl_app.agent.mcp.client.McpServers``, None without ``HITL_MCP``)."""

    settings: Settings
    engines: Engines
    service: ThreadService
    sweeper: Sweeper | None = None
    risks: dict[str, Any] = field(default_factory=dict)
    inbox: ReviewInbox | None = None
    origins: dict[str, Any] = field(default_factory=dict)
    mcp: Any = None


_runtime: Runtime | None = None


def get_runtime() -> Runtime:
    """The process's runtime. Raises RuntimeError when the app's lifespan has not started it."""
    if _runtime is None:
        raise RuntimeError("hitl_app is not started: the server lifespan opens the agent (run `make run`).")
    return _runtime


def get_service() -> ThreadService:
    """The thread service of this process (see ``get_runtime``)."""
    return get_runtime().service


def get_inbox() -> ReviewInbox:
    """The review inbox of this process (see ``get_runtime``)."""
    runtime = get_runtime()
    if runtime.inbox is None:
        runtime.inbox = ReviewInbox(runtime.engines, runtime.service.rights, runtime.service.bus.reviews)
    return runtime.inbox


def get_choices() -> CardChoices:
    """Each person's kept card choices (``hitl_app.desk.choices``) on this process's app database."""
    return CardChoices(get_runtime().engines)


def reminders_for(settings: Settings, service: ThreadService, risks: dict[str, Any] | None = None) -> ReviewReminders | None:
    """The reminder mail sweep when ``HITL_SMTP_HOST`` is set, else None (``risks``: tool name ->
    ``ToolRisk``; a high-risk card's mail carries no decision links)."""
    if not settings.smtp_host:
        return None
    smtp = SmtpConfig(
        host=settings.smtp_host, port=settings.smtp_port, sender=settings.smtp_from or "", user=settings.smtp_user,
        password=settings.smtp_password.get_secret_value() if settings.smtp_password else None,
    )
    return ReviewReminders(
        service.engines, service.rights, smtp, after_s=settings.review_reminder_minutes * 60, public_url=settings.public_url,
        risks=risks, link_hours=settings.mail_link_hours,
    )


def run_limits(settings: Settings) -> RunLimits:
    """The run limits the settings ask for (``HITL_RUN_TIMEOUT_SECONDS`` ... ``HITL_MAX_RUNS``)."""
    return RunLimits(
        run_timeout_s=settings.run_timeout_seconds,
        max_steps=settings.run_max_steps,
        runs_per_owner=settings.runs_per_owner,
        messages_per_minute=settings.messages_per_minute,
        max_runs=settings.max_runs,
    )


def make_bus(settings: Settings) -> RunBus:
    """``RedisRunBus`` when ``REFLEX_REDIS_URL``/``HITL_REDIS_URL`` is set (several workers), else ``LocalRunBus``."""
    if settings.redis_url:
        from hitl_app.bus.redis_bus import RedisRunBus

        return RedisRunBus(settings.redis_url, prefix=settings.redis_prefix)
    return LocalRunBus()


def _settings_from_env() -> Settings:
    """``get_settings()``; raises ``StartupError`` naming each bad environment value."""
    try:
        return get_settings()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise StartupError(f"bad environment setting: {problems}") from exc


def _open_database(settings: Settings) -> Engines:
    """The data directory, the engines and the app schema; raises ``StartupError`` for a bad
    ``DATABASE_URL`` or a database that does not answer."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        engines = make_engines(settings.database, pool_size=settings.db_pool_size)
    except ValueError as exc:
        raise StartupError(str(exc)) from exc
    try:
        create_schema(engines)
    except OperationalError as exc:
        engines.sync.dispose()
        reason = " ".join(str(exc.orig or exc).split())[:300]
        raise StartupError(f"cannot open the database DATABASE_URL={safe_url(settings.resolved_database_url)}: {reason}") from exc
    return engines


def delivery_rules(settings: Settings) -> DeliveryRules:
    """How webhooks are delivered, from the ``HITL_WEBHOOK_*`` settings."""
    return DeliveryRules(poll_s=settings.webhook_poll_seconds, timeout_s=settings.webhook_timeout_seconds,
                         backoff_s=settings.webhook_backoff_seconds, backoff_max_s=settings.webhook_backoff_max_seconds,
                         max_attempts=settings.webhook_max_attempts, allowed=_allowed_networks(settings))


def _allowed_networks(settings: Settings) -> tuple[Network, ...]:
    """``HITL_WEBHOOK_ALLOW_NETWORKS`` read; raises ``StartupError`` naming a bad entry."""
    try:
        return parse_networks(settings.webhook_allow_networks)
    except ValueError as exc:
        raise StartupError(str(exc)) from exc


@contextlib.asynccontextmanager
async def open_runtime(settings: Settings | None = None) -> AsyncIterator[Runtime]:
    """Open everything the app needs and close it on exit.

    Order: settings -> model/agent/policy check -> database schema -> checkpointer -> agent.

    Raises:
        StartupError: a configuration the app cannot start with (bad env value, unknown model
            provider or missing API key, bad ``HITL_AGENT``, bad ``HITL_POLICY`` file, unreachable
            database), as one line saying what to set or fix.
    """
    global _runtime
    from langchain_core._api import LangChainBetaWarning

    from hitl_app.agent_loader import load_agent

    warnings.filterwarnings("ignore", category=LangChainBetaWarning)
    settings = settings or _settings_from_env()
    engines = _open_database(settings)
    tracing = traces.configure_from_env()  # the standard OTEL_* variables; off without them
    try:
        async with load_agent(settings, engines) as loaded:
            bus = make_bus(settings)
            try:
                await bus.start()
            except Exception as exc:  # noqa: BLE001 - redis raises several connection errors
                raise StartupError(f"cannot reach Redis at {safe_url(settings.redis_url or '')}: {exc}") from exc
            risks = loaded.risks()
            service = ThreadService(loaded.graph, engines, loaded.validators, bus=bus, limits=run_limits(settings),
                                    rights=loaded.rights(), desks=loaded.desks(), risks=risks)
            sweeper = service.sweeper(interval=settings.sweep_seconds)
            sweeper.start()
            webhooks = WebhookDeliverer(session=lambda: AsyncSession(engines.async_, expire_on_commit=False),
                                        rules=delivery_rules(settings))
            webhooks.start()
            _runtime = Runtime(settings=settings, engines=engines, service=service, sweeper=sweeper, risks=risks,
                               origins=loaded.origins, mcp=loaded.mcp)
            get_inbox()
            reminders = reminders_for(settings, service, risks)
            reminding = asyncio.create_task(reminders.run(), name="review-reminders") if reminders else None
            agent = settings.agent or safe_url(settings.agent_url or "") or "built-in"
            log.info(
                "hitl_app started: pid=%s model=%s agent=%s database=%s bus=%s",
                os.getpid(), settings.model, agent, safe_url(engines.url), type(bus).__name__,
            )
            try:
                yield _runtime
            finally:
                _runtime = None
                if reminding is not None:
                    reminding.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reminding
                await sweeper.aclose()
                await webhooks.aclose()
                await bus.aclose()
    finally:
        if tracing:
            traces.shutdown()
        await engines.async_.dispose()
        engines.sync.dispose()
