"""OpenTelemetry for the decider, the shim and any Python client, configured by the standard
OTEL_* environment. It lives in the client package so that the shim, a client of the contract
like any other, shares it without importing the decider.

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
shutdown waits at most a quarter of a second for the last export.
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

from decider_client.version import VERSION

log = logging.getLogger("decider.telemetry")

PROTOCOLS = ("grpc", "http/protobuf")
SIGNAL_EXPORTERS = {"traces": ("otlp", "console", "none"),
                    "metrics": ("otlp", "console", "prometheus", "none"),
                    "logs": ("otlp", "console", "none")}
DEFAULT_PROMETHEUS_PORT = 9464
SHUTDOWN_SECONDS = 0.25
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
            # The SDK's exporter with a faster encoding (span_encoding.py: the same messages).
            from decider_client.span_encoding import FastOTLPSpanExporter
            return FastOTLPSpanExporter()
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
    # For record_span: the provider (its sampler, id generator, resource) and its processors.
    _provider: Any = None
    _processors: list[Any] = field(default_factory=list)
    _scope: Any = None

    def record_span(self, name: str, kind: trace.SpanKind, parent: Any,
                    attributes: Mapping[str, Any], start_ns: int, end_ns: int,
                    status: Any = None,
                    more: Callable[[], Mapping[str, Any]] | None = None,
                    ) -> trace.SpanContext | None:
        """A finished span, made in one step: for a span whose every attribute is known when
        it ends (a decider RPC). It skips what a live SDK span costs per attribute and per
        update (~55 µs for twenty attributes), while keeping the provider's sampler, ids,
        resource and processors. Returns its context, or None when it is not sampled.

        The sampler sees `attributes`; `more` is called only for a sampled span, so a span
        that is sampled out costs no more than its sampling decision."""
        if self._provider is None:
            return None
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, TraceFlags

        parent_ctx = trace.get_current_span(parent).get_span_context()
        trace_id = parent_ctx.trace_id if parent_ctx.is_valid else \
            self._provider.id_generator.generate_trace_id()
        sampled = self._provider.sampler.should_sample(parent, trace_id, name, kind, attributes)
        if not sampled.decision.is_sampled():
            return None
        ctx = SpanContext(trace_id, self._provider.id_generator.generate_span_id(),
                          is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED),
                          trace_state=sampled.trace_state)
        attributes = {**attributes, **more()} if more is not None else dict(attributes)
        span = ReadableSpan(name, ctx, parent_ctx if parent_ctx.is_valid else None,
                            self._provider.resource, attributes, kind=kind,
                            status=status or trace.Status(trace.StatusCode.UNSET),
                            start_time=start_ns, end_time=end_ns,
                            instrumentation_scope=self._scope)
        for processor in self._processors:
            processor.on_end(span)
        return ctx

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
    tracing = _tracing(resource, traces, protocols["traces"], span_exporters, out._shutdowns)
    if tracing is not None:
        out.tracer, out._provider, out._processors = tracing
        out.tracing = True
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        out._scope = InstrumentationScope("jobset-decider", VERSION)
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
             shutdowns: list[Callable[[], Any]]) -> tuple[trace.Tracer, Any, list[Any]] | None:
    if not (names or extra):
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    processors: list[Any] = []
    for name in names:
        exporter = ConsoleSpanExporter() if name == "console" else _otlp("traces", protocol)
        processors.append(BatchSpanProcessor(exporter))
    processors.extend(SimpleSpanProcessor(exporter) for exporter in extra)
    for processor in processors:
        provider.add_span_processor(processor)
    shutdowns.append(provider.shutdown)
    return provider.get_tracer("jobset-decider", VERSION), provider, processors


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


@dataclass(frozen=True)
class MetricSpec:
    """One metric the decider or the shim exports: declared once, created from here, so the
    README's names and the dashboard's queries can be checked against what the code makes."""

    name: str
    kind: str  # counter | histogram | gauge | observable_counter
    unit: str
    description: str

    def create(self, meter: metrics.Meter, callback: Callable[..., Any] | None = None) -> Any:
        if self.kind == "counter":
            return meter.create_counter(self.name, unit=self.unit, description=self.description)
        if self.kind == "histogram":
            return meter.create_histogram(self.name, unit=self.unit,
                                          description=self.description)
        if callback is None:
            raise ValueError(f"{self.name}: an observable {self.kind} needs a callback")
        if self.kind == "gauge":
            return meter.create_observable_gauge(self.name, [callback], unit=self.unit,
                                                 description=self.description)
        return meter.create_observable_counter(self.name, [callback], unit=self.unit,
                                               description=self.description)

    def prometheus_series(self) -> tuple[str, ...]:
        """The series names a Prometheus scrape shows for this metric (OpenTelemetry's
        Prometheus exporter: dots to underscores, a unit suffix, `_total` on counters)."""
        from opentelemetry.exporter.prometheus import map_unit, sanitize_full_name

        base = sanitize_full_name(self.name)
        unit = map_unit(self.unit)
        if unit and not base.endswith("_" + unit):
            base = f"{base}_{unit}"
        if self.kind in ("counter", "observable_counter"):
            return (f"{base}_total",)
        if self.kind == "histogram":
            return (f"{base}_bucket", f"{base}_sum", f"{base}_count")
        return (base,)
