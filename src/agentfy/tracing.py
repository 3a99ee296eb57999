"""OpenTelemetry traces of requests and database statements, on only when an exporter is configured.

Why off by default and not merely a no-op tracer: a span, even a non-recording one, costs around a
microsecond, and the cached agent read this project measures costs little more; with no exporter nothing is
wrapped at all.  ``telemetry.otel_exporter``:

* ``none`` — no tracing;
* ``console`` — spans printed to stdout (a quick look);
* ``otlp`` — spans sent over OTLP/HTTP, configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables (the
  exporter package comes with ``pip install 'agentfy[otel]'``).

Spans carry IDs, never display names: ``agent_id`` and ``tenant_id`` on request spans once the request
resolved them (agent spans of :mod:`agentfy.agents.telemetry` add the key and slug as display-only
attributes), so traces join across sessions on what never changes.
"""

from __future__ import annotations

import threading
from typing import Literal

from opentelemetry import trace
from opentelemetry.trace import Tracer
from pydantic import BaseModel, ConfigDict


class TelemetrySettings(BaseModel):
    """``metrics``: serve ``/metrics`` in the Prometheus text format.  ``otel_exporter``: send OpenTelemetry
    spans of requests and database calls (``otlp`` reads the standard ``OTEL_EXPORTER_OTLP_*`` variables;
    ``console`` prints them; ``none`` leaves tracing off and costs nothing).
    The ``telemetry`` section of the settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metrics: bool = True
    otel_exporter: Literal["none", "console", "otlp"] = "none"


_configured: dict[str, Tracer] = {}
_lock = threading.Lock()


class TracingSetupError(RuntimeError):
    """The configured exporter cannot be used (its package is not installed)."""


def tracer_for(settings: TelemetrySettings) -> Tracer | None:
    """This process's tracer for ``settings`` (the provider is installed once per process), or ``None``
    when tracing is off."""
    exporter_name = settings.otel_exporter
    if exporter_name == "none":
        return None
    with _lock:
        if exporter_name not in _configured:
            _configured[exporter_name] = _install(exporter_name)
        return _configured[exporter_name]


def _install(exporter_name: str) -> Tracer:
    try:
        from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
        from opentelemetry.sdk.trace.export import (  # noqa: PLC0415
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SpanExporter,
        )
    except ImportError:
        raise TracingSetupError("telemetry.otel_exporter needs the OpenTelemetry SDK: pip install 'agentfy[otel]'"
                                ) from None
    exporter: SpanExporter
    if exporter_name == "console":
        exporter = ConsoleSpanExporter()
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: PLC0415
        except ImportError:
            raise TracingSetupError("telemetry.otel_exporter = otlp needs the OTLP exporter: "
                                    "pip install 'agentfy[otel]'") from None
        exporter = OTLPSpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agentfy"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider.get_tracer("agentfy")
