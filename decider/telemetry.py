"""OpenTelemetry for the server, configured only by the standard OTEL_* environment.

Tracing is off unless OTEL_TRACES_EXPORTER names an exporter ("otlp" or "console"): a span costs
about 100 us of CPU per RPC (pitfalls.md), so nobody pays it without asking.
"""

from __future__ import annotations

import os
from typing import Any

_provider: Any = None


def server_interceptors() -> list[Any]:
    global _provider
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
    if exporter_name in ("", "none"):
        return []
    from opentelemetry import trace
    from opentelemetry.instrumentation.grpc import aio_server_interceptor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                               "jobset-decider")})
    _provider = TracerProvider(resource=resource)
    if exporter_name == "console":
        exporter: Any = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    _provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(_provider)
    return [aio_server_interceptor(tracer_provider=_provider)]


def shutdown() -> None:
    if _provider is not None:
        _provider.shutdown()
