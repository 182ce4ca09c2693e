"""Pod sets carry what Kueue reads from each pod template: requests per pod (Kubernetes'
PodRequests after Kueue's limits-as-requests), totals, node selector, tolerations, topology.

Expected values are worked by hand from the rules in decider/core/gang/kueue.py; each row names
the rule.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from decider.contract import gang as gang_contract
from decider.core.errors import InvalidInput
from decider.core.gang import pod_sets
from decider.core.quantity import INT64_MAX
from decider_client import observe, render

GI = 2**30
MI = 2**20


def container(requests: dict | None = None, limits: dict | None = None,
              restart_policy: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "c", "image": "i", "resources": {}}
    if requests is not None:
        out["resources"]["requests"] = requests
    if limits is not None:
        out["resources"]["limits"] = limits
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def jobset(pod_spec: dict[str, Any], *, replicas: int = 2, parallelism: int = 3,
           annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "default", "uid": "u"},
            "spec": {"replicatedJobs": [{
                "name": "Workers", "replicas": replicas,
                "template": {"spec": {"parallelism": parallelism, "completions": parallelism,
                                      "template": {"metadata": {"annotations": annotations or {}},
                                                   "spec": pod_spec}}}}]}}


def requests_of(pod_spec: dict[str, Any]) -> dict[str, int]:
    return pod_sets(jobset(pod_spec))[0].pod_requests


@pytest.mark.parametrize("pod_spec,expected", [
    ({"containers": [container({"cpu": "500m", "memory": "1Gi"}),
                     container({"cpu": "1", "memory": "512Mi"})]},
     {"cpu": 1500, "memory": GI + 512 * MI}),
    ({"containers": [container(limits={"cpu": "2", "nvidia.com/gpu": "1"})]},
     {"cpu": 2000, "nvidia.com/gpu": 1}),
    ({"containers": [container({"cpu": "1"}, {"cpu": "2", "memory": "1Gi"})]},
     {"cpu": 1000, "memory": GI}),
    ({"initContainers": [container({"cpu": "4", "memory": "100Mi"})],
      "containers": [container({"cpu": "1", "memory": "1Gi"})]},
     {"cpu": 4000, "memory": GI}),
    ({"initContainers": [container({"cpu": "1"}, restart_policy="Always"),
                         container({"cpu": "2"})],
      "containers": [container({"cpu": "1"})]},
     {"cpu": 3000}),
    ({"initContainers": [container({"cpu": "2"}),
                         container({"cpu": "1"}, restart_policy="Always")],
      "containers": [container({"cpu": "1"})]},
     {"cpu": 2000}),
    ({"containers": [container({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"})],
      "resources": {"requests": {"cpu": "4"}, "limits": {"memory": "8Gi"}}},
     {"cpu": 4000, "memory": 8 * GI, "nvidia.com/gpu": 2}),
    ({"containers": [container({"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "120Mi"}},
     {"cpu": 1250, "memory": 120 * MI}),
    ({"containers": [container({"cpu": "0.1m", "memory": "100m"})]},
     {"cpu": 1, "memory": 1}),
    ({"containers": [container({"cpu": "1e-1", "memory": "1.5Gi", "ephemeral-storage": "2k",
                                "example.com/foo": "+3", "hugepages-2Mi": ".5Ki"})]},
     {"cpu": 100, "memory": 3 * GI // 2, "ephemeral-storage": 2000, "example.com/foo": 3,
      "hugepages-2Mi": 512}),
    ({"containers": [container({"cpu": 2, "memory": 0.5})]}, {"cpu": 2000, "memory": 1}),
    ({"containers": [container()]}, {}),
], ids=["containers-add-up", "limits-stand-in-for-missing-requests", "requests-win-over-limits",
        "the-larger-init-container-wins", "sidecars-add-to-containers-and-later-inits",
        "an-init-before-a-sidecar-does-not-count-it", "pod-level-resources-replace-cpu-memory",
        "overhead-is-added", "values-round-up", "quantity-spellings", "json-numbers",
        "no-resources"])
def test_pod_requests(pod_spec, expected) -> None:
    assert requests_of(pod_spec) == expected


def test_totals_are_per_pod_times_count_saturating() -> None:
    spec = {"containers": [container({"cpu": "500m", "memory": "4Ei"})]}
    info = pod_sets(jobset(spec, replicas=2, parallelism=3))[0]
    assert info.count == 6
    assert info.total_requests == {"cpu": 3000, "memory": INT64_MAX}


def test_node_selector_and_tolerations_are_the_templates() -> None:
    spec = {"containers": [container()], "nodeSelector": {"pool": "gpu", "arch": "amd64"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "spot", "value": "true", "effect": "NoExecute",
                             "tolerationSeconds": 30}]}
    info = pod_sets(jobset(spec))[0]
    assert info.node_selector == {"arch": "amd64", "pool": "gpu"}
    assert [t.to_dict() for t in info.tolerations] == spec["tolerations"]


SUB = {"podIndexLabel": "batch.kubernetes.io/job-completion-index",
       "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index", "subGroupCount": 2}
P = "kueue.x-k8s.io/podset-"


@pytest.mark.parametrize("annotations,expected", [
    ({}, SUB),
    ({P + "required-topology": "rack", P + "preferred-topology": "block"},
     {"required": "rack", **SUB}),
    ({P + "preferred-topology": "block", P + "unconstrained-topology": "true"},
     {"preferred": "block", **SUB}),
    ({P + "unconstrained-topology": "T"}, {"unconstrained": True, **SUB}),
    ({P + "unconstrained-topology": "0"}, {"unconstrained": False, **SUB}),
    ({P + "required-topology": "rack", P + "group-name": "g"},
     {"required": "rack", **SUB, "podSetGroupName": "g"}),
    ({P + "unconstrained-topology": "true", P + "group-name": "g"},
     {"unconstrained": True, **SUB}),
    ({P + "required-topology": "block", P + "slice-required-topology": "rack",
      P + "slice-size": "4"},
     {"required": "block", **SUB, "podSetSliceRequiredTopology": "rack", "podSetSliceSize": 4}),
    ({P + "slice-required-topology": "rack"}, SUB),
], ids=["always-the-index-labels", "required-wins", "preferred-before-unconstrained",
        "unconstrained-reads-go-booleans", "unconstrained-false", "group-name-with-required",
        "group-name-needs-required-or-preferred", "slice-topology-and-size",
        "slice-topology-needs-its-size"])
def test_topology_request(annotations, expected) -> None:
    info = pod_sets(jobset({"containers": [container()]}, annotations=annotations))[0]
    assert info.topology_request == expected
    assert list(info.topology_request) == [k for k in (
        "required", "preferred", "unconstrained", "podIndexLabel", "subGroupIndexLabel",
        "subGroupCount", "podSetGroupName", "podSetSliceRequiredTopology", "podSetSliceSize")
        if k in expected]


def test_a_job_has_only_the_pod_index_label() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 2, "template": {"spec": {"containers": [
               container({"cpu": "1"})]}}}}
    info = pod_sets(job)[0]
    assert info.topology_request == {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    assert (info.pod_requests, info.total_requests) == ({"cpu": 1000}, {"cpu": 2000})


T = "spec.replicatedJobs[0].template.spec.template"


@pytest.mark.parametrize("mutate,field", [
    (lambda s, a: s["containers"][0]["resources"].update(requests={"cpu": "lots"}),
     T + ".spec.containers[0].resources.requests[cpu]"),
    (lambda s, a: s["containers"][0]["resources"].update(requests={"cpu": "1 Gi"}),
     T + ".spec.containers[0].resources.requests[cpu]"),
    (lambda s, a: s["containers"][0]["resources"].update(requests={"cpu": "1e3m"}),
     T + ".spec.containers[0].resources.requests[cpu]"),
    (lambda s, a: s["containers"][0]["resources"].update(limits={"memory": "-1Gi"}),
     T + ".spec.containers[0].resources.limits[memory]"),
    (lambda s, a: s.update(overhead={"cpu": True}), T + ".spec.overhead[cpu]"),
    (lambda s, a: s.update(tolerations=[{"key": 1}]), T + ".spec.tolerations[0].key"),
    (lambda s, a: a.update({P + "unconstrained-topology": "yes"}),
     T + f".metadata.annotations[{P}unconstrained-topology]"),
    (lambda s, a: a.update({P + "slice-required-topology": "r", P + "slice-size": "4x"}),
     T + f".metadata.annotations[{P}slice-size]"),
    (lambda s, a: a.update({P + "slice-required-topology": "r", P + "slice-size": "3000000000"}),
     T + f".metadata.annotations[{P}slice-size]"),
], ids=["quantity-not-a-number", "quantity-with-a-space", "exponent-and-suffix",
        "negative-request",
        "quantity-of-the-wrong-type", "toleration-key-not-a-string",
        "unconstrained-not-a-go-boolean", "slice-size-not-an-integer", "slice-size-over-int32"])
def test_bad_templates_are_invalid_naming_the_field(mutate, field) -> None:
    spec = {"containers": [container({"cpu": "1"})]}
    annotations: dict[str, str] = {}
    mutate(spec, annotations)
    with pytest.raises(InvalidInput) as err:
        pod_sets(jobset(spec, annotations=annotations))
    assert err.value.errors[0].field == field


def test_the_cli_shape_is_the_cores_whichever_way_it_travels() -> None:
    spec = {"containers": [container({"cpu": "1"}, {"memory": "2Gi"})],
            "nodeSelector": {"pool": "a"},
            "tolerations": [{"key": "k", "operator": "Exists"}]}
    js = jobset(spec, annotations={P + "required-topology": "rack"})
    js["spec"]["replicatedJobs"].append(copy.deepcopy(js["spec"]["replicatedJobs"][0]))
    js["spec"]["replicatedJobs"][1]["name"] = "leader"
    got = render.pod_sets_to_dict(
        gang_contract.pod_sets_response(observe.build_pod_sets_request(js)))
    assert json.dumps(got) == json.dumps({"podSets": [p.to_dict() for p in pod_sets(js)]})
    assert got["podSets"][0]["totalRequests"] == {"cpu": 6000, "memory": 6 * 2 * GI}


MIN = "kueue.x-k8s.io/job-min-parallelism"


def job_with(annotations: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "j"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"parallelism": 8, "template": {"spec": {"containers": [
                container({"cpu": "1"})]}}}}


# Kueue's job integration: PodSets' MinCount is minPodsCount(), strconv.Atoi of the Job's
# annotation then int32(), or nil when Atoi refuses it; its webhook, not PodSets, judges it.
@pytest.mark.parametrize("annotations,expected", [
    ({MIN: "3"}, 3),
    ({MIN: "+3"}, 3),
    ({MIN: "-1"}, -1),
    ({MIN: "0"}, 0),
    ({MIN: "4294967299"}, 3),
    ({MIN: "2147483648"}, -(2**31)),
    ({MIN: "9223372036854775808"}, None),
    ({MIN: "3.0"}, None),
    ({MIN: " 3"}, None),
    ({MIN: "0x10"}, None),
    ({MIN: "1_000"}, None),
    ({MIN: "٣"}, None),
    ({MIN: ""}, None),
    ({}, None),
    (None, None),
], ids=["minPodsCount-atoi", "atoi-takes-a-plus-sign", "atoi-takes-a-minus-sign", "zero",
        "int32-conversion-wraps", "int32-conversion-wraps-to-negative", "atoi-out-of-range-nil",
        "atoi-refuses-a-fraction", "atoi-refuses-a-space", "atoi-base-10-only",
        "atoi-no-underscores-in-base-10", "atoi-ascii-digits-only", "atoi-refuses-empty",
        "no-annotation-no-min-count", "no-annotations-at-all"])
def test_a_jobs_min_count_is_kueues(annotations, expected) -> None:
    info = pod_sets(job_with(annotations))[0]
    assert info.min_count == expected
    # Through the contract and back, as the CLI and --server print it: absent when unset.
    got = render.pod_sets_to_dict(gang_contract.pod_sets_response(
        observe.build_pod_sets_request(job_with(annotations))))["podSets"][0]
    assert got.get("minCount", None) == expected
    assert ("minCount" in got) == (expected is not None)
    assert json.dumps(got) == json.dumps(info.to_dict())


def test_a_jobset_has_no_min_count_whatever_its_annotations() -> None:
    # Kueue's JobSet integration sets no MinCount (no partial admission for JobSets).
    js = jobset({"containers": [container({"cpu": "1"})]})
    js["metadata"]["annotations"] = {MIN: "1"}
    js["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {MIN: "1"}}
    assert [p.min_count for p in pod_sets(js)] == [None]
