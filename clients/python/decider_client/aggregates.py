"""Histograms the process aggregates itself, added to what each metric reader collects.

The SDK's histogram cleans and sorts a measurement's attributes and walks its views on every
record: ~8 µs on a quiet core, two to three times that on a loaded one, paid on the decider's
event loop once per RPC. A duration recorded here is a dictionary lookup, a bisection and a few
additions under a lock; the readers see the same cumulative histogram points the SDK would
have made (tests/test_aggregates.py compares the two).

Cumulative temporality only: where an exporter asks for delta histograms
(OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE), telemetry.py keeps the SDK's instrument.
The SDK calls a reader only when its own instruments report something; the decider's
observable gauges always do.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.metrics import Histogram as SdkHistogram
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.metrics.export import Histogram as HistogramData


class _Series:
    __slots__ = ("counts", "total", "count", "low", "high", "start_ns")

    def __init__(self, buckets: int) -> None:
        self.counts = [0] * buckets
        self.total = 0.0
        self.count = 0
        self.low = float("inf")
        self.high = float("-inf")
        self.start_ns = time.time_ns()


class Histogram:
    """Explicit-bucket histogram by attribute values (in the order of `keys`); a bucket holds
    the values up to and including its bound, as the SDK's does."""

    def __init__(self, name: str, unit: str, description: str, keys: Sequence[str],
                 bounds: Sequence[float]) -> None:
        self.name = name
        self.unit = unit
        self.description = description
        self.keys = tuple(keys)
        self.bounds = tuple(bounds)
        self._series: dict[tuple[str, ...], _Series] = {}
        self._lock = threading.Lock()

    def record(self, value: float, *values: str) -> None:
        with self._lock:
            series = self._series.get(values)
            if series is None:
                series = self._series[values] = _Series(len(self.bounds) + 1)
            series.counts[bisect.bisect_left(self.bounds, value)] += 1
            series.total += value
            series.count += 1
            if value < series.low:
                series.low = value
            if value > series.high:
                series.high = value

    def metric(self) -> Metric | None:
        """The cumulative points so far; None before the first record."""
        now = time.time_ns()
        with self._lock:
            points = [HistogramDataPoint(
                attributes=dict(zip(self.keys, values, strict=True)),
                start_time_unix_nano=s.start_ns, time_unix_nano=now, count=s.count,
                sum=s.total, bucket_counts=list(s.counts), explicit_bounds=self.bounds,
                min=s.low, max=s.high) for values, s in self._series.items()]
        if not points:
            return None
        return Metric(name=self.name, description=self.description, unit=self.unit,
                      data=HistogramData(data_points=points,
                                         aggregation_temporality=AggregationTemporality.CUMULATIVE))


class Aggregates:
    """The histograms of one meter (its resource and instrumentation scope)."""

    def __init__(self, resource: Any, scope: Any) -> None:
        self.resource = resource
        self.scope = scope
        self.histograms: list[Histogram] = []

    def merge(self, data: MetricsData | None) -> MetricsData | None:
        """`data` with this meter's histograms added to its scope."""
        metrics = [m for m in (h.metric() for h in self.histograms) if m is not None]
        if not metrics:
            return data
        resources = list(data.resource_metrics) if data is not None else []
        for i, rm in enumerate(resources):
            if rm.resource != self.resource:
                continue
            scopes = list(rm.scope_metrics)
            for j, sm in enumerate(scopes):
                if (sm.scope.name, sm.scope.version) == (self.scope.name, self.scope.version):
                    scopes[j] = ScopeMetrics(sm.scope, [*sm.metrics, *metrics], sm.schema_url)
                    break
            else:
                scopes.append(ScopeMetrics(self.scope, metrics, ""))
            resources[i] = ResourceMetrics(rm.resource, scopes, rm.schema_url)
            break
        else:
            resources.append(ResourceMetrics(self.resource,
                                             [ScopeMetrics(self.scope, metrics, "")], ""))
        return MetricsData(resources)


def wants_cumulative(preferred: dict[type, AggregationTemporality] | None) -> bool:
    """Whether an exporter or reader with these preferences takes cumulative histograms."""
    return (preferred or {}).get(SdkHistogram, AggregationTemporality.CUMULATIVE) == \
        AggregationTemporality.CUMULATIVE


class AggregatingExporter(MetricExporter):
    """A metric exporter that adds the process's own histograms to each export."""

    def __init__(self, exporter: MetricExporter, aggregates: Aggregates) -> None:
        super().__init__(preferred_temporality=exporter._preferred_temporality,
                         preferred_aggregation=exporter._preferred_aggregation)
        self.exporter = exporter
        self.aggregates = aggregates

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000,
               **kwargs: Any) -> MetricExportResult:
        merged = self.aggregates.merge(metrics_data)
        assert merged is not None
        return self.exporter.export(merged, timeout_millis=timeout_millis, **kwargs)

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self.exporter.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self.exporter.shutdown(timeout_millis=timeout_millis, **kwargs)


class MemoryMetricReader(InMemoryMetricReader):
    """The SDK's in-memory reader, seeing the process's own histograms too (for tests)."""

    aggregates: Aggregates | None = None

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000,
                         **kwargs: Any) -> None:
        if self.aggregates is not None:
            metrics_data = self.aggregates.merge(metrics_data)  # type: ignore[assignment]
        super()._receive_metrics(metrics_data, timeout_millis=timeout_millis, **kwargs)

    def get_metrics_data(self) -> MetricsData | None:
        data = super().get_metrics_data()
        # The SDK hands a reader nothing when its own instruments have nothing to say.
        return self.aggregates.merge(data) if data is None and self.aggregates else data
