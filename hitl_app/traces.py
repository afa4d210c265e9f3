"""OpenTelemetry traces, from the standard ``OTEL_*`` environment variables, else nothing at all.

``configure_from_env`` (called once by ``hitl_app.runtime.open_runtime``) installs the SDK's
``TracerProvider`` only when the environment asks for traces: ``OTEL_TRACES_EXPORTER`` (``otlp``,
the OTLP/HTTP exporter, or ``console``), or an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``
turn it off. The exporter itself reads the rest (endpoint, headers, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``). Without it ``enabled()`` is False, the callers skip their span work
(no database reads for spans), and the API's tracer is the no-op one: nothing is sent.

A span's context crosses processes and restarts as a W3C ``traceparent`` string (``traceparent``,
``context_of``): a review keeps the one of the run that raised it, so its span, written when it
is resumed (maybe by another worker), joins that run's trace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_STATE: dict[str, trace.TracerProvider | None] = {"provider": None}
_PROPAGATOR = TraceContextTextMapPropagator()
_NO_OP = trace.NoOpTracerProvider()


def wanted(environ: Mapping[str, str]) -> str | None:
    """The exporter ``environ`` asks for (``"otlp"`` or ``"console"``), None when traces are off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    if "none" in names:
        return None
    if "console" in names:
        return "console"
    if "otlp" in names or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return "otlp"
    return None


def configure_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Install a batching SDK ``TracerProvider`` when ``environ`` (default: the process's) asks for
    traces; True when this call installed one (the caller then ``shutdown``s it). A provider
    installed before (``use_provider``) stays, and False is returned."""
    if _STATE["provider"] is not None:
        return False
    kind = wanted(os.environ if environ is None else environ)
    if kind is None:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    exporter: SpanExporter
    if kind == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "hitl_app")}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    use_provider(provider)
    return True


def use_provider(provider: trace.TracerProvider | None) -> None:
    """Trace to ``provider`` (an SDK provider, e.g. a test's with an in-memory exporter); None
    turns tracing off again."""
    _STATE["provider"] = provider


def enabled() -> bool:
    """True when spans are recorded (a provider is installed)."""
    return _STATE["provider"] is not None


def tracer() -> trace.Tracer:
    """The app's tracer (``hitl_app``): the installed provider's, else the API's no-op one."""
    return trace.get_tracer("hitl_app", tracer_provider=_STATE["provider"] or _NO_OP)


def note(**attributes: str | int | float | bool) -> None:
    """Set attributes on the current span (nothing when tracing is off)."""
    if _STATE["provider"] is not None:
        trace.get_current_span().set_attributes(attributes)


def traceparent() -> str | None:
    """The current span as a W3C ``traceparent`` (``00-<trace id>-<span id>-<flags>``), None when
    no span is recording."""
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


def context_of(parent: str | None) -> Context | None:
    """The context of a stored ``traceparent`` (None for None or text that is not one)."""
    if not parent:
        return None
    ctx = _PROPAGATOR.extract({"traceparent": parent})
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def shutdown() -> None:
    """Flush and stop the installed provider (the app's end)."""
    provider, _STATE["provider"] = _STATE["provider"], None
    if provider is not None and hasattr(provider, "shutdown"):
        provider.shutdown()
