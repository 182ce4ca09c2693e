"""The OpenTelemetry SDK, set up as the standard OTEL_* environment asks, for the decider and
the shim alike.

- Traces: the SDK's TracerProvider with the sampler OTEL_TRACES_SAMPLER(_ARG) names, a
  BatchSpanProcessor per exporter (OTEL_BSP_* read by the SDK) and the OTLP exporter of the
  protocol OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL names, or the console's.
- Metrics: the SDK's MeterProvider with a PeriodicExportingMetricReader per OTLP or console
  exporter (OTEL_METRIC_EXPORT_INTERVAL read by the SDK), and OpenTelemetry's Prometheus reader
  behind the metrics port (`--metrics-port`, or `prometheus` in OTEL_METRICS_EXPORTER).
- Logs: the SDK's LoggerProvider behind a logging handler, as OTEL_LOGS_EXPORTER asks.

Telemetry must never hurt a decision: an unreachable collector costs one log line a minute,
and shutdown waits at most a quarter of a second for the last export.
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

from decider_api.version import VERSION
from decider_telemetry import config
from decider_telemetry.metrics import SECONDS, SECONDS_BUCKETS

log = logging.getLogger("decider.telemetry")

DEFAULT_PROMETHEUS_PORT = 9464
SHUTDOWN_SECONDS = 0.25
# The instrumentation scope of every span and metric the decider and the shim make.
SCOPE = "jobset-decider"


@dataclass
class Telemetry:
    tracer: trace.Tracer
    meter: metrics.Meter
    tracing: bool = False
    metering: bool = False
    # The metrics port, once bound (0: none).
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
    return Telemetry(tracer=NoOpTracerProvider().get_tracer(SCOPE),
                     meter=NoOpMeterProvider().get_meter(SCOPE))


def setup(service_name: str, *, metrics_port: int = 0, metrics_host: str = "",
          env: Mapping[str, str] | None = None, span_exporters: Sequence[Any] = (),
          metric_readers: Sequence[Any] = (), log_exporters: Sequence[Any] = (),
          metrics_idle_seconds: float | None = None) -> Telemetry:
    """Telemetry as the environment asks (plus exporters and readers given by tests).

    metrics_host: where the metrics port listens (the server's --host) unless
    OTEL_EXPORTER_PROMETHEUS_HOST says; empty: every address. Raises TelemetryConfigError
    naming the variable for an unsupported exporter, protocol or sampler, and OSError for a
    metrics port it cannot bind.
    """
    env = os.environ if env is None else env
    traces = config.exporters(env, "traces")
    metric_names = config.exporters(env, "metrics")
    logs = config.exporters(env, "logs")
    if "prometheus" in metric_names and not metrics_port:
        metrics_port = config.prometheus_port(env, DEFAULT_PROMETHEUS_PORT)
    if traces:
        config.batch_settings(env, "traces")
    if logs:
        config.batch_settings(env, "logs")
    if set(metric_names) - {"prometheus"}:
        config.reader_settings(env)
    if not (traces or metric_names or logs or metrics_port or span_exporters or metric_readers
            or log_exporters):
        return disabled()
    protocols = {s: config.protocol(env, s) for s in ("traces", "metrics", "logs")}
    sampler = config.sampler(env) if traces or span_exporters else None
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or service_name,
                                "service.version": VERSION})
    _quiet_exporter_logs()
    out = disabled()
    try:
        if traces or span_exporters:
            out.tracer = _tracing(resource, sampler, traces, protocols["traces"],
                                  span_exporters, out._shutdowns)
            out.tracing = True
        if metric_names or metrics_port or metric_readers:
            host = env.get("OTEL_EXPORTER_PROMETHEUS_HOST") or metrics_host
            out.meter, out.metrics_port = _metering(
                resource, metric_names, protocols["metrics"], metrics_port, host,
                metric_readers, out._shutdowns, metrics_idle_seconds)
            out.metering = True
        if logs or log_exporters:
            _logging(resource, logs, protocols["logs"], log_exporters, out._shutdowns)
    except BaseException:
        out.shutdown()
        raise
    return out


def _otlp(signal: str, protocol: str) -> Any:
    """The SDK's OTLP exporter of a signal over a protocol; it reads its endpoint, headers,
    timeout and compression from the environment itself."""
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


def _tracing(resource: Any, sampler: Any, names: list[str], protocol: str,
             extra: Sequence[Any], shutdowns: list[Callable[[], Any]]) -> trace.Tracer:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    # Shut down by Telemetry.shutdown, bounded; the SDK's own exit hook would wait on an
    # unreachable collector for as long as its retries take.
    provider = TracerProvider(sampler=sampler, resource=resource, shutdown_on_exit=False)
    for name in names:
        exporter = ConsoleSpanExporter() if name == "console" else _otlp("traces", protocol)
        provider.add_span_processor(BatchSpanProcessor(exporter))
    for exporter in extra:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    shutdowns.append(provider.shutdown)
    return provider.get_tracer(SCOPE, VERSION)


def _metering(resource: Any, names: list[str], protocol: str, port: int, host: str,
              extra: Sequence[Any], shutdowns: list[Callable[[], Any]],
              idle_seconds: float | None) -> tuple[metrics.Meter, int]:
    from opentelemetry.sdk.metrics import Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

    readers = list(extra)
    for name in names:
        if name != "prometheus":
            exporter = ConsoleMetricExporter() if name == "console" else \
                _otlp("metrics", protocol)
            readers.append(PeriodicExportingMetricReader(exporter))
    endpoint = None
    if port:
        endpoint, reader = _prometheus(port, host, idle_seconds)
        readers.append(reader)
        shutdowns.append(endpoint.stop)
    seconds = View(instrument_type=Histogram, instrument_unit=SECONDS,
                   aggregation=ExplicitBucketHistogramAggregation(SECONDS_BUCKETS))
    provider = MeterProvider(metric_readers=readers, resource=resource, views=[seconds],
                             shutdown_on_exit=False)
    # Before the endpoint stops: a last scrape must not find a provider gone.
    shutdowns.insert(0, provider.shutdown)
    if endpoint is not None:
        endpoint.start()
    return provider.get_meter(SCOPE, VERSION), endpoint.port if endpoint is not None else 0


def _prometheus(port: int, host: str, idle_seconds: float | None) -> tuple[Any, Any]:
    """The metrics port and the reader it serves, with the process's own collectors (memory,
    CPU, open files, garbage collection) beside it, in a registry of its own."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import (
        CollectorRegistry,
        GCCollector,
        PlatformCollector,
        ProcessCollector,
    )

    from decider_telemetry.scrape import IDLE_SECONDS, MetricsEndpoint

    registry = CollectorRegistry()
    for collector in (ProcessCollector, PlatformCollector, GCCollector):
        collector(registry=registry)
    endpoint = MetricsEndpoint(registry, port, host, idle_seconds or IDLE_SECONDS)
    return endpoint, PrometheusMetricReader(registry=registry)


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
                 "opentelemetry.sdk.metrics._internal.export",
                 # A caller's malformed tracestate header: a warning per RPC it sends.
                 "opentelemetry.trace.span"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _OncePerInterval) for f in logger.filters):
            logger.addFilter(flt)
