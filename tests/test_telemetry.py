"""Traces and metrics of the decider (issue 9), through the OpenTelemetry SDK (issue 21): spans
and metrics through the SDK's in-memory exporter and reader, then over the wire to real OTLP
receivers (gRPC and http/protobuf) and to a Prometheus scrape, and health under every telemetry
setting. Nothing here bounds wall time tightly: a test waits for what it checks."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from properties.strategies import to_request

import decider_telemetry as telemetry
from decider.core.model import Observed, Options
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe, render
from support.builders import NOW, job, jobset, rjob
from support.otlp import GrpcReceiver, HttpReceiver

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "leader-workers.yaml"
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture(scope="module")
def observed() -> Iterator[tuple[pb_grpc.DeciderStub, InMemorySpanExporter, InMemoryMetricReader]]:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tel = telemetry.setup("jobset-decider", env={}, span_exporters=[spans],
                          metric_readers=[reader])
    with BackgroundServer(telemetry=tel) as srv, grpc.insecure_channel(srv.target) as channel:
        yield pb_grpc.DeciderStub(channel), spans, reader


def _example() -> pb.DecideRequest:
    return observe.build_decide_request(yaml.safe_load(EXAMPLE.read_text()), [], NOW)


def _failing(action: str) -> pb.DecideRequest:
    """A JobSet whose worker failed with PodFailurePolicy, which the rule 'oom' matches."""
    js = jobset(rjob("workers", 2), failurePolicy={"maxRestarts": 3, "rules": [
        {"name": "oom", "action": action, "onJobFailureReasons": ["PodFailurePolicy"]}]})
    jobs = [job("workers", 0, state="failed", reason="PodFailurePolicy"), job("workers", 1)]
    return to_request(Observed(jobset=js, now=NOW, jobs=jobs))


def _span(spans: InMemorySpanExporter, decision_id: str) -> object:
    for span in spans.get_finished_spans():
        if span.attributes.get("decider.decision_id") == decision_id:
            return span
    raise AssertionError(f"no span for decision {decision_id}")


def _points(reader: InMemoryMetricReader) -> dict[str, list[tuple[dict, object]]]:
    out: dict[str, list[tuple[dict, object]]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(
                    (dict(p.attributes), p) for p in metric.data.data_points)
    return out


def _sum(points: list[tuple[dict, object]], **attrs: str) -> float:
    return sum(p.value for a, p in points if all(a.get(k) == v for k, v in attrs.items()))


def test_a_decide_span_has_the_decision_and_its_callers_parent(observed) -> None:
    stub, spans, _ = observed
    resp = stub.Decide(_example(), timeout=10, metadata=[("traceparent", PARENT)])
    span = _span(spans, resp.decision_id)
    assert span.name == "decider.v1.Decider/Decide" and span.kind == SpanKind.SERVER
    assert format(span.context.trace_id, "032x") == PARENT.split("-")[1]
    assert format(span.parent.span_id, "016x") == PARENT.split("-")[2]
    attrs = span.attributes
    assert attrs["rpc.system"] == "grpc" and attrs["rpc.service"] == "decider.v1.Decider"
    assert attrs["rpc.method"] == "Decide" and attrs["rpc.grpc.status_code"] == 0
    assert (attrs["k8s.namespace.name"], attrs["jobset.name"]) == ("default", "trainer")
    assert attrs["jobset.uid"] == "6f1d2c3b-0a9e-4c47-9a43-8d7b3f2e1a05"
    assert attrs["decider.actions.CreateJob"] == 4
    assert attrs["decider.actions.CreateService"] == 1
    assert attrs["decider.actions.total"] == len(resp.actions)
    assert span.status.status_code == StatusCode.UNSET


def test_a_restart_span_names_the_rule_and_the_restart_counters(observed) -> None:
    stub, spans, _ = observed
    resp = stub.Decide(_failing("RestartJobSet"), timeout=10)
    attrs = _span(spans, resp.decision_id).attributes
    assert attrs["decider.failure_policy.rule"] == "oom"
    assert attrs["decider.failure_policy.action"] == "RestartJobSet"
    assert (attrs["jobset.restarts.before"], attrs["jobset.restarts.after"]) == (0, 1)
    assert attrs["jobset.restarts_count_towards_max.after"] == 1
    # Not finished: no terminal state, and an empty one is not recorded.
    assert "jobset.terminal_state" not in attrs


def test_invalid_argument_sets_the_span_status_with_the_field_error(observed) -> None:
    stub, spans, _ = observed
    spans.clear()
    req = _example()
    req.jobset_json = json.dumps({"kind": "Job"})
    with pytest.raises(grpc.RpcError) as exc:
        stub.Decide(req, timeout=10)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    (span,) = [s for s in spans.get_finished_spans() if s.name.endswith("/Decide")]
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == f"INVALID_ARGUMENT: {exc.value.details()}"
    assert span.attributes["rpc.grpc.status_code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    # The field error, not "AbortError: Locally aborted." exception events.
    assert not span.events


def test_a_failed_jobset_span_has_its_terminal_state(observed) -> None:
    stub, spans, _ = observed
    resp = stub.Decide(_failing("FailJobSet"), timeout=10)
    attrs = _span(spans, resp.decision_id).attributes
    assert attrs["jobset.terminal_state"] == "Failed"
    assert attrs["decider.failure_policy.action"] == "FailJobSet"


@pytest.fixture(scope="module")
def metered() -> Iterator[tuple[pb_grpc.DeciderStub, None, InMemoryMetricReader]]:
    """Metrics alone: the worker sends only what the decision adds to the counters, and the
    server adds it from a cache keyed by its bytes (rpc_telemetry._count)."""
    reader = InMemoryMetricReader()
    tel = telemetry.setup("jobset-decider", env={}, metric_readers=[reader])
    with BackgroundServer(telemetry=tel) as srv, grpc.insecure_channel(srv.target) as channel:
        yield pb_grpc.DeciderStub(channel), None, reader


@pytest.mark.parametrize("server", ["observed", "metered"])
def test_metrics_count_decisions_actions_restarts_and_finished_jobsets(
        server: str, request: pytest.FixtureRequest) -> None:
    stub, _, reader = request.getfixturevalue(server)
    before = _points(reader)
    stub.Decide(_example(), timeout=10)
    for _ in range(2):  # the second from the server's cache, where it has one
        stub.Decide(_failing("RestartJobSet"), timeout=10)
    stub.Decide(_failing("FailJobSet"), timeout=10)
    bad = _example()
    bad.jobset_json = "{"
    with pytest.raises(grpc.RpcError):
        stub.Decide(bad, timeout=10)
    stub.Validate(pb.ValidateRequest(object_json=_example().jobset_json), timeout=10)
    after = _points(reader)

    def delta(name: str, **attrs: str) -> float:
        return _sum(after.get(name, []), **attrs) - _sum(before.get(name, []), **attrs)

    assert delta("decider.decisions", **{"rpc.method": "Decide", "outcome": "ok"}) == 4
    assert delta("decider.decisions", **{"rpc.method": "Decide", "outcome": "invalid"}) == 1
    assert delta("decider.decisions", **{"rpc.method": "Validate", "outcome": "ok"}) == 1
    assert delta("decider.actions", **{"action.type": "CreateJob"}) == 4
    assert delta("decider.restarts", **{"failure_policy.rule": "oom",
                                        "failure_policy.action": "RestartJobSet"}) == 2
    assert delta("decider.jobsets.finished", terminal_state="Failed") == 1
    durations = [p for a, p in after["decider.decision.duration"]
                 if a.get("rpc.method") == "Decide"]
    assert sum(p.count for p in durations) >= 4
    assert "decider.workers.busy" in after and "decider.requests.waiting" in after


@pytest.mark.parametrize("server", ["observed", "metered"])
def test_an_exceeded_active_deadline_is_counted_by_jobset(server: str,
                                                          request: pytest.FixtureRequest) -> None:
    """jobset_active_deadline_exceeded_total (KEP-1186), by upstream's labels, counted from the
    decision that fails the JobSet for its deadline, not from any later pass."""
    stub, spans, reader = request.getfixturevalue(server)
    js = jobset(rjob("workers", 1), name=f"late-{server}", activeDeadlineSeconds=10,
                status={"startTime": "2026-01-01T11:00:00Z"})
    running = job("workers", 0, js_name=js["metadata"]["name"])
    req = to_request(Observed(jobset=js, now=NOW, jobs=[running], options=req_options()))
    before = _points(reader)
    resp = stub.Decide(req, timeout=10)
    assert resp.status.terminal_state == "Failed"
    # The JobSet as it is afterwards: the next pass only cleans up, counts nothing.
    js["status"] = render.status_to_dict(resp.status)
    again = to_request(Observed(jobset=js, now=NOW, options=req_options()))
    stub.Decide(again, timeout=10)
    stub.Decide(_failing("FailJobSet"), timeout=10)  # another Failed, not by the deadline
    after = _points(reader)
    name = "jobset.active_deadline_exceeded"
    labels = {"jobset_name": f"late-{server}", "namespace": "default"}
    assert _sum(after.get(name, []), **labels) - _sum(before.get(name, []), **labels) == 1
    assert _sum(after.get(name, [])) - _sum(before.get(name, [])) == 1
    if spans is not None:
        assert _span(spans, resp.decision_id).attributes["jobset.active_deadline.exceeded"]


def req_options() -> Options:
    return Options(feature_gates={"JobSetActiveDeadlineSeconds": True})


# --- the process, over the wire ---------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(env: dict[str, str], *flags: str) -> tuple[subprocess.Popen[str], str, float]:
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--workers", "1", "--drain-delay", "0", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, **env})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "serving" in line, proc.stderr.read() if proc.stderr else ""
    return proc, line.strip().rsplit(" ", 1)[-1], time.monotonic() - started


def _stop(proc: subprocess.Popen[str], within: float = 60) -> float:
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"still running {within:g}s after SIGTERM") from None
    assert code == 0, proc.stderr.read() if proc.stderr else code
    took = time.monotonic() - started
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return took


def _every_rpc(target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "decider.v1.Decider"):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert status.status == health_pb2.HealthCheckResponse.SERVING
        stub = pb_grpc.DeciderStub(channel)
        assert stub.Decide(_example(), timeout=10).actions
        text = _example().jobset_json
        assert stub.Validate(pb.ValidateRequest(object_json=text), timeout=10).valid
        stub.PlanGang(pb.PlanGangRequest(object_json=text), timeout=10)
        stub.PodSets(pb.PodSetsRequest(object_json=text), timeout=10)


class _HungCollector:
    """A collector that accepts connections and never answers: an export to it waits for as
    long as the exporter's timeout allows. It counts the connections the exporters open."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_health_and_every_rpc_with_otlp_on_and_the_collector_hung_or_down() -> None:
    """Tracing once broke health (UNKNOWN on every Check); a collector that never answers, or
    is not there, must cost neither answers nor the shutdown. Exports to the hung collector
    would wait 600 s (OTEL_EXPORTER_OTLP_TIMEOUT): exiting within a minute shows the shutdown
    does not wait for them, on any machine (the figures are in bench/telemetry_bench.py)."""
    hung = _HungCollector()
    try:
        for endpoint in (hung.endpoint, f"http://127.0.0.1:{_free_port()}"):
            proc, target, _ = _serve({"OTEL_TRACES_EXPORTER": "otlp",
                                      "OTEL_METRICS_EXPORTER": "otlp",
                                      "OTEL_LOGS_EXPORTER": "otlp",
                                      "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                                      "OTEL_EXPORTER_OTLP_TIMEOUT": "600",
                                      "OTEL_METRIC_EXPORT_INTERVAL": "200",
                                      "OTEL_BSP_SCHEDULE_DELAY": "100"})
            try:
                _every_rpc(target)
                if endpoint == hung.endpoint:
                    # The exporters are stuck in an export when the server is told to stop.
                    deadline = time.monotonic() + 60
                    while not hung.held and time.monotonic() < deadline:
                        time.sleep(0.05)
                    assert hung.held, "no exporter connected to the collector"
                    _every_rpc(target)
            finally:
                _stop(proc, within=60)
    finally:
        hung.close()


def test_spans_are_sampled_as_they_start_and_follow_the_callers_flag() -> None:
    """parentbased_always_off: only the RPCs whose caller sampled its trace have a span, a child
    of the caller's, carrying the decision's attributes (the worker sends those only for a span
    sampled in). The batch processor exports spans in the order they end, so once the last
    call's span has arrived, a span wrongly kept from the calls before it would have too."""
    trace_id, parent_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    last = "2" * 32
    with GrpcReceiver() as rx:
        proc, target, _ = _serve({"OTEL_TRACES_EXPORTER": "otlp",
                                  "OTEL_TRACES_SAMPLER": "parentbased_always_off",
                                  "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint,
                                  "OTEL_BSP_SCHEDULE_DELAY": "100"})
        try:
            with grpc.insecure_channel(target) as channel:
                stub = pb_grpc.DeciderStub(channel)
                stub.Decide(_example(), timeout=10)
                stub.Decide(_example(), timeout=10, metadata=[
                    ("traceparent", f"00-{'1' * 32}-{parent_id}-00")])
                stub.Decide(_example(), timeout=10, metadata=[
                    ("traceparent", f"00-{trace_id}-{parent_id}-01")])
                stub.Decide(_example(), timeout=10, metadata=[
                    ("traceparent", f"00-{last}-{parent_id}-01")])
            got = rx.received
            assert got.wait(lambda: any(s.trace_id.hex() == last for _, s in got.spans()))
        finally:
            _stop(proc)
    spans = [span for _, span in got.spans()]
    assert [s.trace_id.hex() for s in spans] == [trace_id, last]
    assert all(s.parent_span_id.hex() == parent_id for s in spans)
    attrs = {kv.key for kv in spans[0].attributes}
    assert {"rpc.method", "k8s.namespace.name", "decider.decision_id"} <= attrs


@pytest.mark.parametrize("name,arg,traced", [
    ("always_off", "", 0), ("always_on", "", 20), ("traceidratio", "0", 0),
    ("traceidratio", "1", 20), ("parentbased_traceidratio", "0", 0),
], ids=["always_off", "always_on", "ratio-0", "ratio-1", "parentbased-ratio-0"])
def test_the_sdks_samplers_are_chosen_by_the_environment(name: str, arg: str,
                                                          traced: int) -> None:
    spans = InMemorySpanExporter()
    tel = telemetry.setup("jobset-decider", env={"OTEL_TRACES_SAMPLER": name,
                                                 "OTEL_TRACES_SAMPLER_ARG": arg},
                          span_exporters=[spans])
    try:
        with BackgroundServer(telemetry=tel) as srv, grpc.insecure_channel(srv.target) as ch:
            stub = pb_grpc.DeciderStub(ch)
            for _ in range(20):
                stub.Decide(_example(), timeout=10)
    finally:
        tel.shutdown(5.0)
    decides = [s for s in spans.get_finished_spans() if s.name == "decider.v1.Decider/Decide"]
    assert len(decides) == traced
    assert all(s.attributes["decider.actions.total"] >= 1 for s in decides)


@pytest.mark.parametrize("protocol,receiver", [("grpc", GrpcReceiver),
                                               ("http/protobuf", HttpReceiver)])
def test_spans_and_metrics_arrive_at_a_real_otlp_receiver(protocol: str, receiver: type) -> None:
    with receiver() as rx:
        proc, target, _ = _serve({"OTEL_TRACES_EXPORTER": "otlp",
                                  "OTEL_METRICS_EXPORTER": "otlp",
                                  "OTEL_LOGS_EXPORTER": "otlp",
                                  "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                                  "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint,
                                  "OTEL_METRIC_EXPORT_INTERVAL": "200",
                                  "OTEL_BSP_SCHEDULE_DELAY": "100",
                                  "OTEL_BLRP_SCHEDULE_DELAY": "100"})
        try:
            _every_rpc(target)
            # A refused request is logged (INFO), and the log record travels too.
            with grpc.insecure_channel(target) as channel, pytest.raises(grpc.RpcError):
                pb_grpc.DeciderStub(channel).Decide(pb.DecideRequest(jobset_json="{"),
                                                    timeout=10)
            got = rx.received
            assert got.wait(lambda: any(s.name == "decider.v1.Decider/Decide"
                                        for _, s in got.spans()))
            assert got.wait(lambda: {"decider.decisions", "decider.decision.duration",
                                     "decider.actions"} <= got.metric_names())
            assert got.data_points("decider.decisions")
            assert got.wait(lambda: any(
                "INVALID_ARGUMENT" in r.body.string_value
                for req in got.logs for rl in req.resource_logs for sl in rl.scope_logs
                for r in sl.log_records))
        finally:
            _stop(proc)
        services = {service for service, _ in got.spans()}
        assert services == {"jobset-decider"}
        # The SDK's span, the decision's attributes from the worker.
        decides = [s for _, s in got.spans() if s.name == "decider.v1.Decider/Decide"]
        ok = [s for s in decides if s.status.code != s.status.STATUS_CODE_ERROR]
        attrs = {kv.key: kv.value for kv in ok[0].attributes}
        assert attrs["rpc.method"].string_value == "Decide"
        assert attrs["rpc.grpc.status_code"].int_value == 0
        assert attrs["network.peer.address"].string_value == "127.0.0.1"
        assert attrs["k8s.namespace.name"].string_value == "default"
        assert attrs["decider.actions.total"].int_value >= 1
        assert len(attrs["decider.decision_id"].string_value) == 32
        assert ok[0].end_time_unix_nano > ok[0].start_time_unix_nano
        refused = [s for s in decides if s.status.code == s.status.STATUS_CODE_ERROR]
        assert refused[0].status.message.startswith("INVALID_ARGUMENT: ")
        assert {kv.key: kv.value.int_value for kv in refused[0].attributes}[
            "rpc.grpc.status_code"] == 3
        # The SDK's duration histogram, with the seconds buckets.
        durations = got.data_points("decider.decision.duration")
        assert sum(p.count for p in durations) >= 2
        assert tuple(durations[0].explicit_bounds) == telemetry.SECONDS_BUCKETS
        if protocol == "http/protobuf":
            assert {"/v1/traces", "/v1/metrics", "/v1/logs"} <= set(rx.paths)


def test_prometheus_scrape_on_metrics_port() -> None:
    """The series a scrape shows are the names the code declares (decider.service.rpc_telemetry
    METRICS), which the dashboard is checked against."""
    from decider.service.rpc_telemetry import METRICS

    port = _free_port()
    proc, target, _ = _serve({}, "--metrics-port", str(port))
    try:
        _every_rpc(target)
        with grpc.insecure_channel(target) as channel:
            stub = pb_grpc.DeciderStub(channel)
            stub.Decide(_failing("RestartJobSet"), timeout=10)
            stub.Decide(_failing("FailJobSet"), timeout=10)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        _stop(proc)
    scraped = {line.split("{", 1)[0].split(" ", 1)[0] for line in text.splitlines()
               if line.startswith(("decider_", "shim_"))}
    declared = {name for spec in METRICS for name in spec.prometheus_series()}
    assert scraped <= declared, sorted(scraped - declared)
    # Everything these calls exercised (a dropped log line, say, they did not).
    exercised = {"decider.decisions", "decider.decision.duration", "decider.actions",
                 "decider.restarts", "decider.jobsets.finished", "decider.workers.busy",
                 "decider.requests.waiting", "decider.workers.replaced"}
    expected = {n for spec in METRICS if spec.name in exercised for n in spec.prometheus_series()}
    assert expected <= scraped, sorted(expected - scraped)
    decisions = [line for line in text.splitlines()
                 if line.startswith("decider_decisions_total{")]
    assert any('rpc_method="Decide"' in line and 'outcome="ok"' in line for line in decisions)
    assert any('failure_policy_rule="oom"' in line for line in text.splitlines()
               if line.startswith("decider_restarts_total{"))


@pytest.mark.parametrize("env,needle", [
    ({"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER: unsupported exporter 'jaeger'"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
     "OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol 'http/json'"),
    ({"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "udp"},
     "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: unsupported protocol 'udp'"),
    # The SDK's batch processors and periodic reader raised ValueError out of setup (a
    # traceback and exit 1), or logged a traceback and went on with the default.
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_BSP_MAX_QUEUE_SIZE": "256"},
     "OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 512 is more than OTEL_BSP_MAX_QUEUE_SIZE (256)"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_BSP_SCHEDULE_DELAY": "0"},
     "OTEL_BSP_SCHEDULE_DELAY: 0 must be above 0"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_BSP_MAX_QUEUE_SIZE": "lots"},
     "OTEL_BSP_MAX_QUEUE_SIZE: 'lots' is not an integer"),
    ({"OTEL_LOGS_EXPORTER": "otlp", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "-1"},
     "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: -1 must be above 0"),
    ({"OTEL_METRICS_EXPORTER": "otlp", "OTEL_METRIC_EXPORT_INTERVAL": "0"},
     "OTEL_METRIC_EXPORT_INTERVAL: 0 must be above 0"),
    ({"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_PORT": "http"},
     "OTEL_EXPORTER_PROMETHEUS_PORT: 'http' is not a port"),
], ids=["unknown-exporter", "unsupported-protocol", "unsupported-signal-protocol",
        "batch-over-queue", "zero-delay", "queue-not-an-integer", "log-batch-negative",
        "zero-export-interval", "prometheus-port-not-a-number"])
def test_a_bad_otel_variable_exits_2_naming_it(env: dict[str, str], needle: str) -> None:
    done = subprocess.run([sys.executable, "-m", "decider.cli", "serve", "--port", "0"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT":
                               "http://127.0.0.1:9", **env})
    assert done.returncode == 2
    assert needle in done.stderr and "Traceback" not in done.stderr


def test_a_callers_bad_tracestate_is_warned_about_once_not_per_rpc(observed, caplog) -> None:
    """OpenTelemetry warns on each malformed tracestate member: a client sending one on every
    call flooded the log with a warning per RPC."""
    stub, _, _ = observed
    with caplog.at_level(logging.WARNING, logger="opentelemetry.trace.span"):
        for _ in range(20):
            stub.Decide(_example(), timeout=10, metadata=[("traceparent", PARENT),
                                                          ("tracestate", "BAD KEY=1")])
    warned = [r for r in caplog.records if r.name == "opentelemetry.trace.span"]
    assert len(warned) <= 1, [r.getMessage() for r in warned]
