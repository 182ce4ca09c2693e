"""One trace from the shim's reconcile through its Decide call (a client span, issue 23) and the
decider's decision to the API calls, and the shim's metrics (issue 9): in memory, then over the
wire to a real OTLP receiver."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import decider_telemetry as telemetry
from decider.service.server import BackgroundServer
from shim.telemetry import api_verb, parse_path
from support.otlp import GrpcReceiver
from tests.shim.helpers import NS, jobset, rjob, wait_for

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("method,path,expected", [
    ("POST", "/apis/batch/v1/namespaces/ns/jobs", ("create", "ns", "jobs", "", "")),
    ("GET", "/apis/batch/v1/namespaces/ns/jobs/j", ("get", "ns", "jobs", "j", "")),
    ("GET", "/apis/batch/v1/namespaces/ns/jobs", ("list", "ns", "jobs", "", "")),
    ("PUT", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/js/status",
     ("update", "ns", "jobsets", "js", "status")),
    ("PATCH", "/api/v1/namespaces/ns/pods/p", ("patch", "ns", "pods", "p", "")),
    ("DELETE", "/api/v1/namespaces/ns", ("delete", "", "namespaces", "ns", "")),
    ("GET", "/apis/scheduling.k8s.io/v1alpha2/podgroups", ("list", "", "podgroups", "", "")),
], ids=["create", "get", "list", "update-status", "patch", "delete-namespace", "cluster-list"])
def test_api_calls_are_named_by_verb_and_resource(method: str, path: str,
                                                  expected: tuple[str, ...]) -> None:
    namespace, resource, name, sub = parse_path(path)
    assert (api_verb(method, name), namespace, resource, name, sub) == expected


def _attribute(span: object, key: str) -> object:
    for kv in span.attributes:  # type: ignore[attr-defined]
        if kv.key == key:
            return getattr(kv.value, kv.value.WhichOneof("value"))
    return None


def _by_id(spans: list) -> dict[int, object]:
    return {s.context.span_id: s for s in spans}


def test_reconcile_is_the_parent_of_the_decision_and_of_the_api_calls(cluster, shims) -> None:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    decider_tel = telemetry.setup("jobset-decider", env={}, span_exporters=[spans])
    shim_tel = telemetry.setup("decider-shim", env={}, span_exporters=[spans],
                               metric_readers=[reader])
    with BackgroundServer(telemetry=decider_tel) as decider:
        shims.start(decider_target=decider.target, telemetry=shim_tel)
        cluster.create_jobset(jobset("tr", rjob("workers", 2)))
        wait_for(lambda: cluster.job_names("tr-") == ["tr-workers-0", "tr-workers-1"],
                 what="jobs created")
        wait_for(lambda: (cluster.jobset("tr").get("status") or {}).get("replicatedJobsStatus"),
                 what="status written")
        shims.stop_all()
    finished = spans.get_finished_spans()
    by_id = _by_id(finished)
    # The pass that created the Jobs (a pass cut short by the shutdown ends NotLeader):
    # reconcile -> the shim's client span of its Decide call -> the decider's server span.
    passes = [(by_id[by_id[s.parent.span_id].parent.span_id], by_id[s.parent.span_id], s)
              for s in finished
              if s.name == "decider.v1.Decider/Decide" and s.kind == SpanKind.SERVER
              and s.attributes.get("decider.actions.CreateJob") == 2
              and by_id[by_id[s.parent.span_id].parent.span_id].attributes[
                  "shim.reconcile.result"] == "ok"]
    assert passes, [s.name for s in finished]
    reconcile, client, decide = passes[0]
    assert reconcile.name == "shim.reconcile"
    assert reconcile.context.trace_id == client.context.trace_id == decide.context.trace_id
    assert reconcile.parent is None  # the root of the trace
    assert dict(reconcile.attributes) == {"k8s.namespace.name": NS, "jobset.name": "tr",
                                          "shim.reconcile.result": "ok"}
    # OpenTelemetry's gRPC client conventions, as the instrumentation writes them.
    assert client.name == "decider.v1.Decider/Decide" and client.kind == SpanKind.CLIENT
    host, port = decider.target.rsplit(":", 1)
    assert dict(client.attributes) == {
        "rpc.system": "grpc", "rpc.service": "decider.v1.Decider", "rpc.method": "Decide",
        "rpc.grpc.status_code": 0, "server.address": host, "server.port": int(port)}
    assert client.status.status_code == StatusCode.UNSET
    # Admission's Validate call, asked in the same pass, is traced the same way.
    validates = [s for s in finished if s.name == "decider.v1.Decider/Validate"
                 and s.kind == SpanKind.SERVER]
    assert validates
    for server in validates:
        caller = by_id[server.parent.span_id]
        assert caller.kind == SpanKind.CLIENT and caller.attributes["rpc.method"] == "Validate"
        assert by_id[caller.parent.span_id].name == "shim.reconcile"
    calls = [s for s in finished if s.parent is not None
             and s.parent.span_id == reconcile.context.span_id and s.name != client.name]
    creates = [s for s in calls if s.name == "create jobs"]
    assert len(creates) == 2
    assert all(s.attributes["http.response.status_code"] == 201 for s in creates)
    assert {s.name for s in calls} >= {"create jobs", "create services", "update jobsets/status"}

    points: dict[str, list] = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    created = [p for p in points["shim.api.requests"]
               if dict(p.attributes) == {"verb": "create", "resource": "jobs", "code": "201"}]
    assert sum(p.value for p in created) == 2
    assert sum(p.count for p in points["shim.reconcile.duration"]) >= 1
    assert "shim.queue.depth" in points


def test_one_trace_over_the_wire_from_shim_to_decider_to_api(cluster, shims,
                                                           monkeypatch) -> None:
    """The acceptance: a real OTLP receiver gets a trace in which the shim's reconcile span is
    the parent of the decider's Decide span (another process), and both services' metrics."""
    with GrpcReceiver() as rx:
        env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp",
               "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, "OTEL_METRIC_EXPORT_INTERVAL": "300",
               "OTEL_BSP_SCHEDULE_DELAY": "100"}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host",
                                 "127.0.0.1", "--port", "0", "--workers", "1",
                                 "--drain-delay", "0"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                                env={**os.environ, **env})
        try:
            assert proc.stdout is not None
            target = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
            shim_tel = telemetry.setup("decider-shim")
            shims.start(decider_target=target, telemetry=shim_tel)
            cluster.create_jobset(jobset("wire", rjob("workers", 2)))
            wait_for(lambda: len(cluster.job_names("wire-")) == 2, what="jobs created")
            got = rx.received

            def linked() -> list:
                """(reconcile, client, decide) of the pass that created the Jobs: the shim's
                client span of its Decide call, the decider's server span its child."""
                spans = got.spans()
                reconciles = {s.span_id: s for svc, s in spans
                              if svc == "decider-shim" and s.name == "shim.reconcile"}
                clients = {s.span_id: s for svc, s in spans
                           if svc == "decider-shim" and s.name == "decider.v1.Decider/Decide"
                           and s.kind == s.SPAN_KIND_CLIENT and s.parent_span_id in reconciles}
                return [(reconciles[clients[s.parent_span_id].parent_span_id],
                         clients[s.parent_span_id], s) for svc, s in spans
                        if svc == "jobset-decider" and s.name == "decider.v1.Decider/Decide"
                        and s.kind == s.SPAN_KIND_SERVER and s.parent_span_id in clients
                        and _attribute(s, "decider.actions.CreateJob") == 2]

            assert got.wait(linked, timeout=60), [(svc, s.name) for svc, s in got.spans()]
            reconcile, client, decide = linked()[0]
            assert reconcile.trace_id == client.trace_id == decide.trace_id
            assert _attribute(client, "rpc.grpc.status_code") == 0
            assert _attribute(client, "rpc.service") == "decider.v1.Decider"

            def creates() -> list:
                return [s for svc, s in got.spans() if svc == "decider-shim"
                        and s.name == "create jobs" and s.parent_span_id == reconcile.span_id]

            assert got.wait(lambda: len(creates()) == 2, timeout=60)
            assert all(s.trace_id == reconcile.trace_id for s in creates())
            assert got.wait(lambda: {"shim.api.requests", "shim.reconcile.duration",
                                     "decider.decisions"} <= got.metric_names(), timeout=60)
            assert got.data_points("shim.api.requests") and got.data_points("decider.decisions")
            shims.stop_all()
            shim_tel.shutdown(2.0)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()
