"""The gRPC server: health, reflection, error mapping, and parity with the in-process path."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from decider.contract import convert
from decider.service.server import BackgroundServer
from decider_api.v1 import decider_pb2 as pb
from decider_api.v1 import decider_pb2_grpc as pb_grpc
from decider_client import observe, render
from support.builders import NOW

pytestmark = pytest.mark.waits

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "leader-workers.yaml"


@pytest.fixture(scope="module")
def channel():
    with BackgroundServer(max_message_bytes=4 * 1024 * 1024) as srv:
        ch = grpc.insecure_channel(srv.target)
        yield ch
        ch.close()


def _request(**changes) -> pb.DecideRequest:
    js = yaml.safe_load(EXAMPLE.read_text())
    js["spec"].update(changes)
    return observe.build_decide_request(js, [], NOW)


def test_health_reports_serving(channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    for service in ("", "decider.v1.Decider"):
        resp = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert resp.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_service(channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
    names = {s.name for r in responses for s in r.list_services_response.service}
    assert "decider.v1.Decider" in names
    assert "grpc.health.v1.Health" in names


def test_grpc_and_in_process_give_identical_plans(channel) -> None:
    stub = pb_grpc.DeciderStub(channel)
    for req in (_request(), _request(suspend=True), _request(network={
            "enableDNSHostnames": False})):
        remote = stub.Decide(req, timeout=10)
        local = convert.decide_response(req)
        assert remote == local
        assert render.dumps(render.plan_to_dict(remote)) == render.dumps(
            render.plan_to_dict(local))


@pytest.mark.parametrize("mutate,field", [
    (lambda r: setattr(r, "jobset_json", "{not json"), "jobset_json"),
    (lambda r: setattr(r, "jobset_json", ""), "jobset_json"),
    (lambda r: r.ClearField("now"), "now"),
    (lambda r: setattr(r, "jobset_json", json.dumps({"kind": "Job"})), "kind"),
    (lambda r: setattr(r, "jobset_json", json.dumps(
        {"kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v1alpha2", "metadata": {"name": "x"},
         "spec": {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": {}}}},
                                     {"name": "a", "template": {"spec": {"template": {}}}}]}})),
     "spec.replicatedJobs[1].name"),
    (lambda r: r.jobs.add(name=""), "jobs[0].name"),
    (lambda r: r.jobs.add(name="js-a-0", controller_uid="6f1d2c3b-0a9e-4c47-9a43-8d7b3f2e1a05",
                          labels={"jobset.sigs.k8s.io/restart-attempt": "x"}),
     "jobs[0].labels[jobset.sigs.k8s.io/restart-attempt]"),
    (lambda r: setattr(r, "jobset_json", "[" * 5000 + "]" * 5000), "jobset_json"),
], ids=["bad-json", "missing-jobset", "missing-now", "wrong-kind", "duplicate-rjob",
        "job-without-name", "bad-restart-label", "deeply-nested"])
def test_bad_requests_are_invalid_argument_naming_the_field(channel, mutate, field) -> None:
    req = _request()
    mutate(req)
    with pytest.raises(grpc.RpcError) as info:
        pb_grpc.DeciderStub(channel).Decide(req, timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in info.value.details()


def test_message_size_limit_is_configurable(channel) -> None:
    req = _request()
    req.jobset_json = json.dumps({"pad": "x" * (5 * 1024 * 1024)})
    with pytest.raises(grpc.RpcError) as info:
        pb_grpc.DeciderStub(channel).Decide(req, timeout=10)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.mark.parametrize(("timeout", "code"), [
    pytest.param(0, grpc.StatusCode.DEADLINE_EXCEEDED, id="zero-is-a-deadline-already-past"),
    pytest.param(None, None, id="none-is-the-clients-default"),
])
def test_the_python_clients_timeout(timeout: float | None, code: grpc.StatusCode | None) -> None:
    """`timeout=0` became the client's default 5 s (an `or`), not the deadline it says."""
    from decider_client import DeciderClient

    request = observe.build_decide_request(yaml.safe_load(EXAMPLE.read_text()), [], NOW)
    with BackgroundServer() as srv, DeciderClient(srv.target, timeout=30) as client:
        if code is None:
            assert client.decide(request, timeout=timeout).decision_id
        else:
            with pytest.raises(grpc.RpcError) as caught:
                client.decide(request, timeout=timeout)
            assert caught.value.code() == code
