"""The headless Service's ports (#1300, merged; ungated), ported from upstream's
TestHeadlessSvcPorts (#1300 @b73b81b3) and the sync of an existing Service the JobSet controls
that jobset_controller.go @4f0cbded added (createHeadlessSvcIfNecessary). Ids name the upstream
case."""

from __future__ import annotations

from typing import Any

import pytest

from decider.core.model import ObservedObject
from support.builders import UID, jobset, rjob, run
from upstream.fixtures import two_rjobs
from upstream.sim import World


def _js(*containers: dict[str, Any], rjobs: int = 1) -> dict[str, Any]:
    pod = {"spec": {"restartPolicy": "OnFailure", "containers": list(containers)}}
    return jobset(*[rjob(f"r{i}", 1, pod=pod) for i in range(rjobs)])


def _c(*ports: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {"name": name, "image": "busybox", "ports": list(ports)}


def _port(name: str, port: int, protocol: str = "TCP") -> dict[str, Any]:
    return {"name": name, "protocol": protocol, "port": port, "targetPort": port}


def _created(plan: Any) -> dict[str, Any]:
    (svc,) = [a.object for a in plan.actions if a.type == "CreateService"]
    return svc["spec"]


@pytest.mark.parametrize(("js", "want"), [
    pytest.param(_js(_c()), None, id="no container ports"),
    pytest.param(_js(_c({"containerPort": 8080})), [_port("tcp-8080", 8080)],
                 id="single port defaults to TCP"),
    pytest.param(_js(_c({"containerPort": 8080, "protocol": "TCP"}),
                     _c({"containerPort": 8080, "protocol": "TCP"}, name="d")),
                 [_port("tcp-8080", 8080)], id="duplicate port and protocol are deduplicated"),
    pytest.param(_js(_c({"containerPort": 53, "protocol": "TCP"},
                        {"containerPort": 53, "protocol": "UDP"})),
                 [_port("tcp-53", 53), _port("udp-53", 53, "UDP")],
                 id="same port number with different protocols are kept"),
    pytest.param(_js(_c({"containerPort": 0}, {"containerPort": 9090})),
                 [_port("tcp-9090", 9090)], id="zero container port is skipped"),
    pytest.param(_js(_c({"containerPort": 8080}, {"containerPort": 9090, "protocol": "SCTP"}),
                     rjobs=2),
                 [_port("tcp-8080", 8080), _port("sctp-9090", 9090, "SCTP")],
                 id="across replicated jobs, once each, in the order met"),
])
def test_headless_svc_ports(js: dict[str, Any], want: list[dict[str, Any]] | None) -> None:
    spec = _created(run(js))
    assert spec.get("ports") == want


def _service(ports: list[dict[str, Any]] | None, owner: str = UID) -> ObservedObject:
    spec: dict[str, Any] = {"clusterIP": "None", "selector": {"jobset.sigs.k8s.io/jobset-name":
                                                              "js"}}
    if ports is not None:
        spec["ports"] = ports
    obj = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "js", "namespace": "default", "uid": "svc-uid",
                        "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                                             "kind": "JobSet", "name": "js", "uid": owner,
                                             "controller": True}]},
           "spec": spec}
    return ObservedObject(api_version="v1", kind="Service", name="js", uid="svc-uid",
                          controller_uid=owner, obj=obj)


PORTED = _js(_c({"containerPort": 8080}))


@pytest.mark.parametrize(("service", "js", "patch"), [
    pytest.param(_service(None), PORTED, {"spec": {"ports": [_port("tcp-8080", 8080)]}},
                 id="a Service created before #1300 gets the ports"),
    pytest.param(_service([_port("tcp-8080", 8080)]), PORTED, None,
                 id="ports already in sync: nothing to do"),
    pytest.param(_service([{**_port("tcp-8080", 8080), "nodePort": 0}]), PORTED, None,
                 id="zero values count as unset (Semantic.DeepEqual)"),
    pytest.param(_service([_port("tcp-9090", 9090)]), PORTED,
                 {"spec": {"ports": [_port("tcp-8080", 8080)]}}, id="other ports are replaced"),
    pytest.param(_service([_port("tcp-8080", 8080)]), _js(_c()), {"spec": {"ports": None}},
                 id="no container ports any more: the ports go"),
    pytest.param(_service([]), _js(_c()), None, id="none and none: nil and empty alike"),
    pytest.param(_service(None, owner="someone-else"), PORTED, None,
                 id="a Service someone else controls is never changed"),
])
def test_existing_service_ports_are_kept_in_sync(service: ObservedObject, js: dict[str, Any],
                                                 patch: dict[str, Any] | None) -> None:
    plan = run(js, objects=[service])
    assert [a.type for a in plan.actions if a.type.endswith("Service")] == \
        ([] if patch is None else ["UpdateService"])
    if patch is not None:
        (update,) = [a for a in plan.actions if a.type == "UpdateService"]
        assert (update.name, update.uid, update.patch) == ("js", "svc-uid", patch)


def test_the_ports_follow_the_containers_through_passes() -> None:
    w = World(jobset=two_rjobs())
    w.settle()
    assert "ports" not in w.others[("Service", "test-js")]["spec"]
    # The Service controlled by the JobSet (as the API server stores a create with a
    # controller reference).
    w.others[("Service", "test-js")]["metadata"]["ownerReferences"][0]["uid"] = \
        w.jobset["metadata"]["uid"]
    pod = w.jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["ports"] = [{"containerPort": 29500}]
    plan = w.step()
    assert [a.type for a in plan.actions] == ["UpdateService"]
    assert w.others[("Service", "test-js")]["spec"]["ports"] == [_port("tcp-29500", 29500)]
    assert w.step().actions == []
