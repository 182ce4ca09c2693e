"""OpenTelemetry for the decider and the shim, configured by the standard OTEL_* environment.

- OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER, OTEL_LOGS_EXPORTER: comma-separated `otlp`,
  `console`, `none` (and `prometheus` for metrics). Unset means none: a span costs CPU on every
  RPC, so nobody pays for telemetry without asking.
- OTEL_EXPORTER_OTLP_PROTOCOL (or the per-signal OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_PROTOCOL):
  `grpc` (the default here) or `http/protobuf`. The SDK does not read it for exporters built by
  hand (pitfalls.md), so the exporter class is chosen from it here.
- Endpoints, headers, timeouts, batch sizes, the export interval and the resource
  (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) are read by the SDK itself.
- `--metrics-port` (or `prometheus` in OTEL_METRICS_EXPORTER) serves the metrics for Prometheus
  to scrape, through OpenTelemetry's Prometheus exporter.

Telemetry must never hurt a decision: an unreachable collector costs one log line a minute, and
shutdown waits at most half a second for the last export.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider

from decider.version import VERSION

log = logging.getLogger("decider.telemetry")

PROTOCOLS = ("grpc", "http/protobuf")
SIGNAL_EXPORTERS = {"traces": ("otlp", "console", "none"),
                    "metrics": ("otlp", "console", "prometheus", "none"),
                    "logs": ("otlp", "console", "none")}
DEFAULT_PROMETHEUS_PORT = 9464
SHUTDOWN_SECONDS = 0.5
# Decisions take from a fraction of a millisecond to seconds.
SECONDS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0)
# Histograms measured in seconds, for the bucket view above.
SECONDS_HISTOGRAMS = ("decider.decision.duration", "shim.reconcile.duration",
                      "shim.api.request.duration", "shim.decider.duration")


class TelemetryConfigError(ValueError):
    """An OTEL_* variable names an exporter or protocol this build does not offer."""


def _exporters(env: Mapping[str, str], signal: str) -> list[str]:
    name = f"OTEL_{signal.upper()}_EXPORTER"
    chosen = [e.strip().lower() for e in env.get(name, "none").split(",") if e.strip()]
    for e in chosen:
        if e not in SIGNAL_EXPORTERS[signal]:
            raise TelemetryConfigError(f"{name}: unsupported exporter {e!r} (supported: "
                                       f"{', '.join(SIGNAL_EXPORTERS[signal])})")
    return [e for e in chosen if e != "none"]


def _protocol(env: Mapping[str, str], signal: str) -> str:
    name = f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL"
    value = (env.get(name) or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc").strip().lower()
    if value not in PROTOCOLS:
        raise TelemetryConfigError(f"{name if env.get(name) else 'OTEL_EXPORTER_OTLP_PROTOCOL'}:"
                                   f" unsupported protocol {value!r} (supported: "
                                   f"{', '.join(PROTOCOLS)})")
    return value


def _otlp(signal: str, protocol: str) -> Any:
    if protocol == "grpc":
        if signal == "traces":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            return OTLPSpanExporter()
        if signal == "metrics":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter,
            )
            return OTLPMetricExporter()
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        return OTLPLogExporter()
    if signal == "traces":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HTTPSpanExporter,
        )
        return HTTPSpanExporter()
    if signal == "metrics":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
            OTLPMetricExporter as HTTPMetricExporter,
        )
        return HTTPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HTTPLogExporter,
    )
    return HTTPLogExporter()


class _OncePerInterval(logging.Filter):
    """Lets one record per logger through per interval: a collector that is down must not
    flood the log with a warning per failed export."""

    def __init__(self, interval: float = 60.0) -> None:
        super().__init__()
        self.interval = interval
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and "exporter" not in record.name:
            return True
        now = time.monotonic()
        with self._lock:
            last = self._last.get(record.name)
            if last is not None and now - last < self.interval:
                return False
            self._last[record.name] = now
        return True


def _quiet_exporter_logs() -> None:
    flt = _OncePerInterval()
    for name in ("opentelemetry.exporter.otlp.proto.grpc.exporter",
                 "opentelemetry.exporter.otlp.proto.http.trace_exporter",
                 "opentelemetry.exporter.otlp.proto.http.metric_exporter",
                 "opentelemetry.exporter.otlp.proto.http._log_exporter",
                 "opentelemetry.sdk._shared_internal", "opentelemetry.sdk.trace.export",
                 "opentelemetry.sdk.metrics._internal.export"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _OncePerInterval) for f in logger.filters):
            logger.addFilter(flt)


@dataclass
class Telemetry:
    tracer: trace.Tracer
    meter: metrics.Meter
    tracing: bool = False
    metering: bool = False
    metrics_port: int = 0
    _shutdowns: list[Callable[[], Any]] = field(default_factory=list)

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> None:
        """Flush what can be flushed in `timeout`, then give up: an unreachable collector must
        not hold the process (the exporters' threads are daemons)."""
        if not self._shutdowns:
            return
        calls, self._shutdowns = self._shutdowns, []

        def run() -> None:
            for call in calls:
                try:
                    call()
                except Exception as exc:  # noqa: BLE001 - shutting down; nothing else to do
                    log.debug("telemetry shutdown: %s", exc)

        thread = threading.Thread(target=run, name="telemetry-shutdown", daemon=True)
        thread.start()
        thread.join(timeout)


def disabled() -> Telemetry:
    return Telemetry(tracer=NoOpTracerProvider().get_tracer("decider"),
                     meter=NoOpMeterProvider().get_meter("decider"))


def setup(service_name: str, *, metrics_port: int = 0, env: Mapping[str, str] | None = None,
          span_exporters: Sequence[Any] = (), metric_readers: Sequence[Any] = (),
          log_exporters: Sequence[Any] = ()) -> Telemetry:
    """Telemetry as the environment asks (plus exporters and readers given by tests).

    Raises TelemetryConfigError naming the variable for an unsupported exporter or protocol.
    """
    env = os.environ if env is None else env
    traces = _exporters(env, "traces")
    metric_names = _exporters(env, "metrics")
    logs = _exporters(env, "logs")
    if "prometheus" in metric_names and not metrics_port:
        metrics_port = int(env.get("OTEL_EXPORTER_PROMETHEUS_PORT") or DEFAULT_PROMETHEUS_PORT)
    if not (traces or metric_names or logs or metrics_port or span_exporters or metric_readers
            or log_exporters):
        return disabled()
    protocols = {s: _protocol(env, s) for s in ("traces", "metrics", "logs")}
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or service_name,
                                "service.version": VERSION})
    _quiet_exporter_logs()
    out = disabled()
    out.tracer, out.tracing = _tracing(resource, traces, protocols["traces"], span_exporters,
                                       out._shutdowns) or (out.tracer, False)
    readers = list(metric_readers)
    for name in metric_names:
        if name == "prometheus":
            continue
        from opentelemetry.sdk.metrics.export import (
            ConsoleMetricExporter,
            PeriodicExportingMetricReader,
        )

        exporter = ConsoleMetricExporter() if name == "console" else _otlp(
            "metrics", protocols["metrics"])
        readers.append(PeriodicExportingMetricReader(exporter))
    if metrics_port:
        readers.append(_prometheus(metrics_port, env))
        out.metrics_port = metrics_port
    if readers:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

        views = [View(instrument_name=name,
                      aggregation=ExplicitBucketHistogramAggregation(SECONDS_BUCKETS))
                 for name in SECONDS_HISTOGRAMS]
        # Shut down by Telemetry.shutdown, bounded; the SDK's own exit hook would wait on an
        # unreachable collector for as long as its retries take.
        provider = MeterProvider(metric_readers=readers, resource=resource, views=views,
                                 shutdown_on_exit=False)
        out.meter, out.metering = provider.get_meter("jobset-decider", VERSION), True
        out._shutdowns.append(provider.shutdown)
    if logs or log_exporters:
        _logging(resource, logs, protocols["logs"], log_exporters, out._shutdowns)
    return out


def _tracing(resource: Any, names: list[str], protocol: str, extra: Sequence[Any],
             shutdowns: list[Callable[[], Any]]) -> tuple[trace.Tracer, bool] | None:
    if not (names or extra):
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    for name in names:
        exporter = ConsoleSpanExporter() if name == "console" else _otlp("traces", protocol)
        provider.add_span_processor(BatchSpanProcessor(exporter))
    for exporter in extra:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    shutdowns.append(provider.shutdown)
    return provider.get_tracer("jobset-decider", VERSION), True


def _prometheus(port: int, env: Mapping[str, str]) -> Any:
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import start_http_server

    host = env.get("OTEL_EXPORTER_PROMETHEUS_HOST") or "0.0.0.0"
    start_http_server(port, addr=host)
    return PrometheusMetricReader()


def _logging(resource: Any, names: list[str], protocol: str, extra: Sequence[Any],
             shutdowns: list[Callable[[], Any]]) -> None:
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import (
        BatchLogRecordProcessor,
        ConsoleLogRecordExporter,
        SimpleLogRecordProcessor,
    )

    provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    for name in names:
        exporter = ConsoleLogRecordExporter() if name == "console" else _otlp("logs", protocol)
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    for exporter in extra:
        provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    handler = LoggingHandler(level=logging.INFO, logger_provider=provider)
    logging.getLogger().addHandler(handler)

    def stop() -> None:
        logging.getLogger().removeHandler(handler)
        provider.shutdown()

    shutdowns.append(stop)
