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
from typing import Any, NamedTuple

from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider

from decider_api.version import VERSION
from decider_client.telemetry_metrics import (
    SECONDS_BUCKETS,
    SECONDS_HISTOGRAMS,
    MetricSpec,
    SdkHistogram,
)

log = logging.getLogger("decider.telemetry")

PROTOCOLS = ("grpc", "http/protobuf")
SIGNAL_EXPORTERS = {"traces": ("otlp", "console", "none"),
                    "metrics": ("otlp", "console", "prometheus", "none"),
                    "logs": ("otlp", "console", "none")}
DEFAULT_PROMETHEUS_PORT = 9464
SHUTDOWN_SECONDS = 0.25
# The instrumentation scope of every span and metric this package makes.
METER_NAME = "jobset-decider"


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
        from decider_client.span_encoding import FastHTTPSpanExporter
        return FastHTTPSpanExporter()
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
                 "opentelemetry.sdk.metrics._internal.export",
                 # A caller's malformed tracestate header: a warning per RPC it sends.
                 "opentelemetry.trace.span"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _OncePerInterval) for f in logger.filters):
            logger.addFilter(flt)


class Sampled(NamedTuple):
    """A span's trace, decided as it starts: its trace id, its parent (None for a root) and
    the trace state it carries."""

    trace_id: int
    parent: Any
    trace_state: Any


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
    # Set when every span processor exports OTLP: spans are written as bytes (span_wire.py).
    _writer: Any = None
    # Set for a sampler built into the SDK (sampling.py): its decision without its result.
    _quick_sample: Any = None
    # Set when every metric reader takes the process's own histograms (aggregates.py).
    aggregates: Any = None

    @property
    def writes_wire(self) -> bool:
        """Spans are written as OTLP bytes, and may take attributes written elsewhere."""
        return self._writer is not None

    def write_attributes(self, attributes: Mapping[str, Any]) -> bytes:
        """Span attributes written as OTLP, for record_span's `written`; only where
        `writes_wire`."""
        assert self._writer is not None
        return self._writer.attributes.fields(attributes)

    def histogram(self, spec: MetricSpec, keys: Sequence[str]) -> Any:
        """A histogram recorded as `record(value, *attribute values in the order of keys)`:
        aggregated by this process where every reader takes that (aggregates.py), else the
        SDK's instrument."""
        if self.aggregates is not None:
            from decider_client.aggregates import Histogram

            bounds = SECONDS_BUCKETS if spec.name in SECONDS_HISTOGRAMS else ()
            own = Histogram(spec.name, spec.unit, spec.description, keys, bounds)
            self.aggregates.histograms.append(own)
            return own
        return SdkHistogram(spec.create(self.meter), tuple(keys))

    def sample(self, name: str, kind: trace.SpanKind, parent: Any,
               attributes: Mapping[str, Any]) -> Sampled | None:
        """The sampling decision for a span starting now (the sampler sees `attributes`):
        its trace, or None when it is not sampled (or tracing is off). parent: a Context, or
        None for a root span."""
        provider = self._provider
        if provider is None:
            return None
        parent_ctx: Any = None
        if parent is not None:  # None: a root span, whatever the current context
            parent_ctx = trace.get_current_span(parent).get_span_context()
            if not parent_ctx.is_valid:
                parent_ctx = None
        trace_id = parent_ctx.trace_id if parent_ctx is not None else \
            provider.id_generator.generate_trace_id()
        if self._quick_sample is not None:
            if not self._quick_sample(parent_ctx, trace_id):
                return None
            return Sampled(trace_id, parent_ctx,
                           parent_ctx.trace_state if parent_ctx is not None else None)
        sampled = provider.sampler.should_sample(parent, trace_id, name, kind, attributes)
        if not sampled.decision.is_sampled():
            return None
        return Sampled(trace_id, parent_ctx, sampled.trace_state)

    def record_span(self, sampled: Sampled, name: str, kind: trace.SpanKind,
                    attributes: Mapping[str, Any], start_ns: int, end_ns: int,
                    status: Any = None,
                    more: Callable[[], Mapping[str, Any]] | None = None,
                    written: bytes | None = None) -> int:
        """A finished span of a trace `sample` chose as it started, made in one step: for a
        span whose every attribute is known when it ends (a decider RPC). It keeps the
        provider's ids, resource and processors, and skips what a live SDK span costs per
        attribute and per update. Where every exporter is an OTLP one (`writes_wire`), the
        span is written as OTLP bytes at once (span_wire.py) rather than built as an SDK object
        and encoded later. Returns its trace id.

        `more`: attributes worth building only for a span sampled in. `written`, only where
        `writes_wire`: every attribute already written (write_attributes), in place of
        `attributes` and `more`."""
        provider = self._provider
        trace_id, parent_ctx, trace_state = sampled
        span_id = provider.id_generator.generate_span_id()
        span: Any
        if self._writer is not None:
            if written is None:
                written = self._writer.attributes.fields(
                    {**attributes, **more()} if more is not None else attributes)
            span = self._writer.span(
                trace_id=trace_id, span_id=span_id, parent=parent_ctx, name=name,
                kind=kind.value, start_ns=start_ns, end_ns=end_ns, attributes=written,
                status_code=status.status_code.name if status is not None else "UNSET",
                status_message=(status.description or "") if status is not None else "",
                trace_state=trace_state.to_header() if trace_state else "")
        else:
            from opentelemetry.sdk.trace import ReadableSpan
            from opentelemetry.trace import SpanContext, TraceFlags

            ctx = SpanContext(trace_id, span_id, is_remote=False,
                              trace_flags=TraceFlags(TraceFlags.SAMPLED), trace_state=trace_state)
            span = ReadableSpan(name, ctx, parent_ctx, provider.resource,
                                {**attributes, **more()} if more is not None
                                else dict(attributes), kind=kind,
                                status=status or trace.Status(trace.StatusCode.UNSET),
                                start_time=start_ns, end_time=end_ns,
                                instrumentation_scope=self._scope)
        for processor in self._processors:
            processor.on_end(span)
        return trace_id

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
        out.tracer, out._provider, out._processors, wire = tracing
        out.tracing = True
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        from decider_client.sampling import quick_sampler

        out._scope = InstrumentationScope(METER_NAME, VERSION)
        out._quick_sample = quick_sampler(out._provider.sampler)
        if wire:
            from decider_client.span_wire import SpanWriter

            out._writer = SpanWriter(resource, out._scope)
    if metric_names or metrics_port or metric_readers:
        from decider_client.telemetry_metrics import meter_provider

        provider, out.aggregates = meter_provider(resource, metric_names, protocols["metrics"],
                                                  metrics_port, env, metric_readers)
        out.metrics_port = metrics_port
        out.meter, out.metering = provider.get_meter(METER_NAME, VERSION), True
        out._shutdowns.append(provider.shutdown)
    if logs or log_exporters:
        _logging(resource, logs, protocols["logs"], log_exporters, out._shutdowns)
    return out


def _tracing(resource: Any, names: list[str], protocol: str, extra: Sequence[Any],
             shutdowns: list[Callable[[], Any]]
             ) -> tuple[trace.Tracer, Any, list[Any], bool] | None:
    """The tracer, its provider, its processors, and whether spans are written as OTLP
    bytes: where every exporter is an OTLP one (span_encoding.py's take written spans; the
    console's and a test's take the SDK's)."""
    if not (names or extra):
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    from decider_client.span_batch import WireBatchProcessor

    wire = all(name == "otlp" for name in names) and not extra
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    processors: list[Any] = []
    for name in names:
        exporter = ConsoleSpanExporter() if name == "console" else _otlp("traces", protocol)
        processors.append(WireBatchProcessor(exporter) if wire else BatchSpanProcessor(exporter))
    processors.extend(SimpleSpanProcessor(exporter) for exporter in extra)
    for processor in processors:
        provider.add_span_processor(processor)
    shutdowns.append(provider.shutdown)
    return provider.get_tracer(METER_NAME, VERSION), provider, processors, wire


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
