"""What the decider-backed Kueue AdmissionCheck's tests share: the decider in-process (the
contract's own methods), deciders that fail as a shedding or unreachable one does, JobSets, and
the Workload's pod sets built as Kueue v0.17's JobSet integration builds them (kueue
pkg/controller/jobs/jobset PodSets(): one per replicated Job, its name lower-cased, count =
replicas x min(parallelism, completions), the pod template copied, and with
TopologyAwareScheduling on the topology request from the template's annotations, the
completion-index label, the job-index label and the replicas).
"""

from __future__ import annotations

import copy
from typing import Any

import grpc

from decider.contract.limits import DEFAULT as LIMITS
from decider.contract.methods import METHODS
from decider_api.v1 import decider_pb2 as pb

NOW = "2026-01-01T00:00:00Z"


class InProcess:
    """The decider, answering through its contract as the server's workers do."""

    def validate(self, request: pb.ValidateRequest, timeout: float | None = None) -> Any:
        return METHODS["Validate"].answer(request, LIMITS)

    def pod_sets(self, request: pb.PodSetsRequest, timeout: float | None = None) -> Any:
        return METHODS["PodSets"].answer(request, LIMITS)


class RpcFailure(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str = "",
                 trailers: tuple[tuple[str, str], ...] = ()) -> None:
        self._code, self._details, self._trailers = code, details, trailers

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._trailers


class Failing:
    """A decider whose every call (or only PodSets) ends with `error`."""

    def __init__(self, error: RpcFailure, only_pod_sets: bool = False) -> None:
        self.error = error
        self.only_pod_sets = only_pod_sets

    def validate(self, request: pb.ValidateRequest, timeout: float | None = None) -> Any:
        if self.only_pod_sets:
            return InProcess().validate(request)
        raise self.error

    def pod_sets(self, request: pb.PodSetsRequest, timeout: float | None = None) -> Any:
        raise self.error


def rjob(name: str, replicas: int, parallelism: int, completions: int,
         annotations: dict[str, str] | None = None, node_selector: dict[str, str] | None = None,
         tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"restartPolicy": "Never",
                           "containers": [{"name": "main", "image": "busybox",
                                           "resources": {"requests": {"cpu": "1"}}}]}
    if node_selector:
        pod["nodeSelector"] = node_selector
    if tolerations:
        pod["tolerations"] = tolerations
    template: dict[str, Any] = {"spec": pod}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {"name": name, "replicas": replicas,
            "template": {"spec": {"parallelism": parallelism, "completions": completions,
                                  "completionMode": "Indexed", "template": template}}}


def jobset(*rjobs: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "trainer", "namespace": "team-a",
                         "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
            "spec": {"suspend": True, "replicatedJobs": list(rjobs)}}


TRAINER = jobset(
    rjob("leader", 1, 1, 1, annotations={"kueue.x-k8s.io/podset-required-topology": "rack"}),
    rjob("workers", 2, 3, 2, node_selector={"pool": "gpu"},
         tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]))


def kueue_pod_sets(js: dict[str, Any]) -> list[dict[str, Any]]:
    """The Workload's spec.podSets as Kueue v0.17 writes them for this JobSet."""
    out = []
    for r in js["spec"]["replicatedJobs"]:
        job = r["template"]["spec"]
        parallelism = job.get("parallelism", 1)
        per_job = min(parallelism, job.get("completions", parallelism))
        template = copy.deepcopy(job["template"])
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        topology: dict[str, Any] = {}
        if "kueue.x-k8s.io/podset-required-topology" in annotations:
            topology["required"] = annotations["kueue.x-k8s.io/podset-required-topology"]
        topology.update({"podIndexLabel": "batch.kubernetes.io/job-completion-index",
                         "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
                         "subGroupCount": r["replicas"]})
        out.append({"name": r["name"].lower(), "count": r["replicas"] * per_job,
                    "template": template, "topologyRequest": topology})
    return out


def edited(pod_sets: list[dict[str, Any]], index: int, path: tuple[str, ...],
           value: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(pod_sets)
    node = out[index]
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return out


INVALID = jobset(rjob("workers", 1, 1, 1), rjob("workers", 1, 1, 1))


def workload(conditions: dict[str, str], checks: list[tuple[str, str]],
             owner: str | None = "trainer") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "jobset-trainer-1a2b3", "namespace": "team-a",
                            "resourceVersion": "42"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                    "name": owner, "uid": "u", "controller": True}]
    return {"metadata": meta, "status": {
        "conditions": [{"type": t, "status": s} for t, s in conditions.items()],
        "admissionChecks": [{"name": n, "state": st, "lastTransitionTime": "2025-12-31T00:00:00Z",
                             "message": ""} for n, st in checks]}}
