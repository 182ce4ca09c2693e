"""The process's own histograms (aggregates.py) read as the SDK's would, through every reader."""

from __future__ import annotations

import random

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from decider_api.version import VERSION
from decider_client import telemetry
from decider_client.aggregates import (
    Aggregates,
    AggregatingExporter,
    Histogram,
    MemoryMetricReader,
)
from decider_client.telemetry_metrics import SECONDS_BUCKETS, MetricSpec

RESOURCE = Resource.create({"service.name": "jobset-decider"})
SCOPE = InstrumentationScope("jobset-decider", VERSION)
SPEC = MetricSpec("decider.decision.duration", "histogram", "s", "Time to answer")
KEYS = ("rpc.method", "outcome")


def _values() -> list[tuple[float, str, str]]:
    rng = random.Random(3)
    out = [(b, "Decide", "ok") for b in SECONDS_BUCKETS]  # exactly on each bound
    out += [(rng.expovariate(200), rng.choice(["Decide", "Validate"]),
             rng.choice(["ok", "invalid"])) for _ in range(500)]
    return out + [(0.0, "Decide", "ok"), (99.0, "Decide", "error")]


def _points(data: MetricsData | None, name: str) -> dict[tuple, tuple]:
    assert data is not None
    out = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name != name:
                    continue
                assert metric.data.aggregation_temporality == AggregationTemporality.CUMULATIVE
                for p in metric.data.data_points:
                    key = tuple(sorted(p.attributes.items()))
                    out[key] = (p.count, round(p.sum, 9), tuple(p.bucket_counts),
                                tuple(p.explicit_bounds), p.min, p.max)
    return out


def test_the_histogram_reads_as_the_sdks() -> None:
    sdk_reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[sdk_reader], resource=RESOURCE, views=[
        View(instrument_name=SPEC.name,
             aggregation=ExplicitBucketHistogramAggregation(SECONDS_BUCKETS))])
    sdk = provider.get_meter("jobset-decider", VERSION).create_histogram(SPEC.name, unit="s")
    own = Histogram(SPEC.name, "s", SPEC.description, KEYS, SECONDS_BUCKETS)
    aggregates = Aggregates(RESOURCE, SCOPE)
    aggregates.histograms.append(own)
    for value, method, result in _values():
        sdk.record(value, {"rpc.method": method, "outcome": result})
        own.record(value, method, result)
    expected = _points(sdk_reader.get_metrics_data(), SPEC.name)
    assert len(expected) == 5
    assert _points(aggregates.merge(None), SPEC.name) == expected
    provider.shutdown()


def test_merge_adds_to_the_meters_scope_or_makes_one() -> None:
    aggregates = Aggregates(RESOURCE, SCOPE)
    assert aggregates.merge(None) is None  # nothing recorded: nothing added
    own = Histogram(SPEC.name, "s", "", KEYS, (0.1,))
    aggregates.histograms.append(own)
    own.record(0.05, "Decide", "ok")
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], resource=RESOURCE)
    provider.get_meter("jobset-decider", VERSION).create_counter("c").add(1)
    provider.get_meter("other").create_counter("d").add(1)
    merged = aggregates.merge(reader.get_metrics_data())
    assert merged is not None
    [rm] = merged.resource_metrics
    by_scope = {sm.scope.name: [m.name for m in sm.metrics] for sm in rm.scope_metrics}
    assert by_scope == {"jobset-decider": ["c", SPEC.name], "other": ["d"]}
    provider.shutdown()


class _Kept(MetricExporter):
    def __init__(self, temporality: AggregationTemporality) -> None:
        from opentelemetry.sdk.metrics import Histogram as SdkHistogram

        super().__init__(preferred_temporality={SdkHistogram: temporality})
        self.exported: list[MetricsData] = []

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000,
               **kwargs: object) -> MetricExportResult:
        self.exported.append(metrics_data)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        pass


def test_the_exporter_wrapper_adds_the_histograms_and_keeps_preferences() -> None:
    inner = _Kept(AggregationTemporality.CUMULATIVE)
    aggregates = Aggregates(RESOURCE, SCOPE)
    own = Histogram(SPEC.name, "s", "", KEYS, (0.1,))
    aggregates.histograms.append(own)
    own.record(0.5, "Decide", "ok")
    wrapper = AggregatingExporter(inner, aggregates)
    assert wrapper._preferred_temporality == inner._preferred_temporality
    assert wrapper.export(MetricsData([])) == MetricExportResult.SUCCESS
    assert _points(inner.exported[0], SPEC.name) == {
        (("outcome", "ok"), ("rpc.method", "Decide")): (1, 0.5, (0, 1), (0.1,), 0.5, 0.5)}


@pytest.mark.parametrize("env,extra,own", [
    ({"OTEL_METRICS_EXPORTER": "otlp"}, None, True),
    ({"OTEL_METRICS_EXPORTER": "otlp",
      "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta"}, None, False),
    ({}, MemoryMetricReader, True),
    ({}, InMemoryMetricReader, False),  # a reader that cannot merge: the SDK's histogram
], ids=["otlp-cumulative", "otlp-delta", "memory-reader", "sdk-memory-reader"])
def test_setup_aggregates_only_where_every_reader_can_take_it(
        monkeypatch: pytest.MonkeyPatch, env: dict, extra: type | None, own: bool) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the SDK's exporters read the environment
    readers = [extra()] if extra is not None else []
    t = telemetry.setup("t", env=env, metric_readers=readers)
    try:
        histogram = t.histogram(SPEC, KEYS)
        histogram.record(0.002, "Decide", "ok")
        assert isinstance(histogram, Histogram) is own
        if readers:
            points = _points(readers[0].get_metrics_data(), SPEC.name)
            assert [p[0] for p in points.values()] == [1]
    finally:
        t.shutdown()
