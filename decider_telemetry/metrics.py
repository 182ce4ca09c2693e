"""Metrics as the decider and the shim declare them, made with the SDK's instruments.

Each metric is declared once (MetricSpec), so that the docs' names and the dashboard's queries
can be checked against what the code makes. A counter whose label values are known in advance
is created with every one of them at 0 (`counter`): Prometheus' `increase()` and `rate()` see a
series' first event only against an earlier sample, so a series born at 1 hides that event (the
first restart of a fresh decider read 0), as the Prometheus client libraries' conventions warn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics

# Decisions and API calls take from a fraction of a millisecond to seconds; every histogram
# in seconds gets these buckets (a View on the unit, decider_telemetry.sdk).
SECONDS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0)
SECONDS = "s"


@dataclass(frozen=True)
class MetricSpec:
    """One metric the decider or the shim exports."""

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

    def counter(self, meter: metrics.Meter, labels: Sequence[str] = (),
                known: Iterable[Sequence[str]] = ((),)) -> Any:
        """A counter whose series for the `known` label values exist at 0 from now on. An
        unlabelled counter exists at 0 by default."""
        made = self.create(meter)
        for values in known:
            made.add(0, dict(zip(labels, values, strict=True)))
        return made

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
