"""deploy/observability: the Grafana dashboard queries only metrics the code exports (and shows
every one), holds to Grafana's classic dashboard model, and the collector configuration wires
only components it defines."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from decider.service.rpc_telemetry import METRICS as DECIDER_METRICS
from shim.telemetry import METRICS as SHIM_METRICS

ASSETS = Path(__file__).resolve().parent.parent / "deploy" / "observability"
DASHBOARD = json.loads((ASSETS / "grafana-dashboard.json").read_text())
# PromQL words that look like metric names.
PROMQL = {"sum", "by", "rate", "increase", "histogram_quantile", "le", "without", "avg", "max",
          "min", "count", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
          "unless", "offset"}


def _exprs() -> list[str]:
    return [t["expr"] for p in DASHBOARD["panels"] for t in p.get("targets", [])]


def _series(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what is left once strings, label matchers,
    ranges and grouping clauses are taken out, less PromQL's own words."""
    text = re.sub(r'"[^"]*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", text)
    text = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", "", text)
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text))
    return {n for n in names if n not in PROMQL}


EXPORTED = {name: spec for spec in (*DECIDER_METRICS, *SHIM_METRICS)
            for name in spec.prometheus_series()}


@pytest.mark.parametrize("expr", _exprs())
def test_every_query_reads_exported_metrics(expr: str) -> None:
    names = _series(expr)
    assert names, expr
    assert names <= set(EXPORTED), f"{expr}: not exported: {sorted(names - set(EXPORTED))}"


def test_every_exported_metric_is_on_the_dashboard() -> None:
    queried = {EXPORTED[n].name for e in _exprs() for n in _series(e) if n in EXPORTED}
    declared = {spec.name for spec in (*DECIDER_METRICS, *SHIM_METRICS)}
    assert declared == queried, f"not on the dashboard: {sorted(declared - queried)}"


def test_the_dashboard_holds_to_grafanas_classic_model() -> None:
    d = DASHBOARD
    assert isinstance(d["title"], str) and d["title"]
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", d["uid"])
    assert isinstance(d["schemaVersion"], int) and d["schemaVersion"] >= 36
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in d["panels"]:
        assert panel["type"] in {"timeseries", "stat", "gauge", "table", "row"}
        assert panel["title"] and panel["datasource"]["uid"] == "${datasource}"
        pos = panel["gridPos"]
        assert set(pos) == {"h", "w", "x", "y"} and all(isinstance(v, int) for v in pos.values())
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24 and pos["h"] > 0
        # Panels do not overlap on Grafana's 24-column grid.
        mine = {(pos["x"] + dx, pos["y"] + dy) for dx in range(pos["w"])
                for dy in range(pos["h"])}
        assert not mine & cells, panel["title"]
        cells |= mine
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and all(t["expr"] for t in panel["targets"])


def test_the_collector_configuration_wires_only_what_it_defines() -> None:
    config = yaml.safe_load((ASSETS / "otel-collector-config.yaml").read_text())
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces", "metrics", "logs"}
    for name, pipeline in pipelines.items():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in config[kind], f"{name}: {kind} {component} is not defined"
    assert "prometheus" in pipelines["metrics"]["exporters"]
