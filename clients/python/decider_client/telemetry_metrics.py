"""Metrics: the ones declared (MetricSpec), and the meter provider telemetry.setup builds: its
readers (OTLP or console, pushed on an interval; Prometheus, scraped) and whether they take
the process's own histograms (aggregates.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics

from decider_api.version import VERSION

if TYPE_CHECKING:
    from decider_client.aggregates import Aggregates

# Decisions take from a fraction of a millisecond to seconds.
SECONDS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0)
# Histograms measured in seconds, for the bucket view above.
SECONDS_HISTOGRAMS = ("decider.decision.duration", "shim.reconcile.duration",
                      "shim.api.request.duration", "shim.decider.duration")


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


class SdkHistogram:
    """The SDK's histogram, recorded as the process's own are (aggregates.Histogram)."""

    def __init__(self, instrument: Any, keys: tuple[str, ...]) -> None:
        self.instrument = instrument
        self.keys = keys

    def record(self, value: float, *values: str) -> None:
        self.instrument.record(value, dict(zip(self.keys, values, strict=True)))


def meter_provider(resource: Any, names: Sequence[str], protocol: str, metrics_port: int,
                   env: Mapping[str, str], extra: Sequence[Any]) -> tuple[Any, Aggregates | None]:
    """The provider, and the Aggregates its readers merge; None where one cannot (an exporter
    asking for delta histograms, a reader given by a caller): then every histogram is the
    SDK's."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from decider_client.aggregates import (
        Aggregates,
        AggregatingExporter,
        MemoryMetricReader,
        wants_cumulative,
    )
    from decider_client.telemetry import METER_NAME, _otlp

    aggregates = Aggregates(resource, InstrumentationScope(METER_NAME, VERSION))
    exporters = [ConsoleMetricExporter() if name == "console" else _otlp("metrics", protocol)
                 for name in names if name != "prometheus"]
    merging = all(wants_cumulative(e._preferred_temporality) for e in exporters) and all(
        isinstance(r, MemoryMetricReader) for r in extra)
    own = aggregates if merging else None
    readers = list(extra)
    for reader in extra:
        if isinstance(reader, MemoryMetricReader):
            reader.aggregates = own
    for exporter in exporters:
        readers.append(PeriodicExportingMetricReader(
            AggregatingExporter(exporter, aggregates) if own is not None else exporter))
    if metrics_port:
        readers.append(_prometheus(metrics_port, env, own))
    views = [View(instrument_name=name,
                  aggregation=ExplicitBucketHistogramAggregation(SECONDS_BUCKETS))
             for name in SECONDS_HISTOGRAMS]
    # Shut down by Telemetry.shutdown, bounded; the SDK's own exit hook would wait on an
    # unreachable collector for as long as its retries take.
    provider = MeterProvider(metric_readers=readers, resource=resource, views=views,
                             shutdown_on_exit=False)
    return provider, own


def _prometheus(port: int, env: Mapping[str, str], aggregates: Aggregates | None) -> Any:
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import start_http_server

    class Reader(PrometheusMetricReader):
        """OpenTelemetry's Prometheus reader, seeing the process's own histograms too."""

        def _receive_metrics(self, metrics_data: Any, timeout_millis: float = 10_000,
                             **kwargs: Any) -> None:
            if aggregates is not None:
                metrics_data = aggregates.merge(metrics_data)
            super()._receive_metrics(metrics_data, timeout_millis=timeout_millis, **kwargs)

    from decider_api.listen import bind_every_address

    host = env.get("OTEL_EXPORTER_PROMETHEUS_HOST") or "0.0.0.0"
    bind_every_address(lambda addr: start_http_server(port, addr=addr), host)
    return Reader()
