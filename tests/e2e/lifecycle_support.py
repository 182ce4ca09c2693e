"""Helpers for the lifecycle scenarios (InOrder, DependsOn, TTL, per-Job suspend, the active
deadline, execution attempts, the Service's ports): pods held back and let go, pods ended on
the test's terms, times read from the API, and a control plane of its own whose product runs
with the alpha gates these scenarios need (the session's runs with none, so that nothing else
changes meaning)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.e2e.conftest import E2E, failed
from tests.e2e.framework import EXIT_CODE, TIMEOUT, Kube, eventually, phases
from tests.e2e.planes import fresh_namespace, own_plane
from tools.controlplane import product

# A pod scheduling gate the kube-scheduler waits on: a pod carrying it stays Pending (and not
# ready) until the test removes it, so "before the first replicated Job is ready" lasts as long
# as the test wants, not as long as KWOK happens to take.
HOLD = "e2e.jobset-decider.io/hold"
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
EXECUTION_ATTEMPT = "jobset.sigs.k8s.io/execution-attempt"


def held(rjob: dict[str, Any]) -> dict[str, Any]:
    """The replicated Job with its pods gated: they are created but never scheduled."""
    rjob["template"]["spec"]["template"]["spec"]["schedulingGates"] = [{"name": HOLD}]
    return rjob


def release(kube: Kube, ns: str, pod: dict[str, Any]) -> None:
    """Remove the pod's scheduling gates (the one change the API allows to them)."""
    kube.call("PATCH", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
              [{"op": "remove", "path": "/spec/schedulingGates"}],
              content_type="application/json-patch+json")


def end(kube: Kube, ns: str, pods: list[dict[str, Any]], code: int = 0) -> None:
    """KWOK ends each pod with this exit code (kwok-stages.yaml)."""
    for pod in pods:
        kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: str(code)}}})


def pods_of(kube: Kube, ns: str, jobset: str, rjob: str | None = None,
            job: str | None = None) -> list[dict[str, Any]]:
    selector = f"jobset.sigs.k8s.io/jobset-name={jobset}"
    if rjob is not None:
        selector += f",{REPLICATED_JOB}={rjob}"
    if job is not None:
        selector += f",batch.kubernetes.io/job-name={job}"
    return kube.items(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)


def alive(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods not being deleted."""
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def running(kube: Kube, ns: str, jobset: str, count: int, rjob: str | None = None,
            job: str | None = None) -> list[dict[str, Any]]:
    what = f"{count} pods of {jobset}" + (f"/{rjob}" if rjob else "") + (
        f" (Job {job})" if job else "") + " Running"
    return eventually(what, lambda: alive(pods_of(kube, ns, jobset, rjob, job)),
                      lambda ps: len(ps) == count and set(phases(ps).values()) == {"Running"},
                      show=phases)


def job_names(jobs: list[dict[str, Any]]) -> list[str]:
    return sorted(j["metadata"]["name"] for j in jobs)


def rjob_jobs(jobs: list[dict[str, Any]], rjob: str) -> list[dict[str, Any]]:
    return [j for j in jobs if j["metadata"]["labels"].get(REPLICATED_JOB) == rjob]


def rjob_status(js: dict[str, Any] | None, rjob: str) -> dict[str, Any]:
    for entry in ((js or {}).get("status") or {}).get("replicatedJobsStatus") or []:
        if entry["name"] == rjob:
            return entry
    return {}


def when(stamp: str) -> datetime:
    """An RFC 3339 time the API server wrote (whole seconds, UTC)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def ready_since(pod: dict[str, Any]) -> datetime:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready" and c["status"] == "True":
            return when(c["lastTransitionTime"])
    raise AssertionError(f"pod {pod['metadata']['name']} is not Ready: {pod.get('status')}")


def created(obj: dict[str, Any]) -> datetime:
    return when(obj["metadata"]["creationTimestamp"])


def now() -> datetime:
    return datetime.now(UTC)


# The gates of the features that have one (docs/upstream-features.md); #1300's Service ports
# have none and run on the session's control plane.
GATES = "JobSetActiveDeadlineSeconds=true,ExecutionAttemptsTracking=true"


@contextlib.contextmanager
def gated_control_plane(version: str, gates: str = GATES, nodes: int = 2,
                        tag: str = "gated") -> Iterator[E2E]:
    """A control plane of its own with the product installed from deploy/ exactly as the
    session's is, but the decider's webhook and the shim given `gates` (the Deployments'
    `--webhook-feature-gates` / `--feature-gates`, product.install's feature_gates). Checked
    at the end as the session's (planes.own_plane)."""
    with own_plane(tag, version, nodes) as plane:
        yield E2E(plane.cluster, plane.kube, product.install(plane.cluster, feature_gates=gates))


@contextlib.contextmanager
def own_namespace(plane: E2E, request: pytest.FixtureRequest, prefix: str) -> Iterator[str]:
    """The conftest's `ns`, on a module's own control plane."""
    base = f"{prefix.removeprefix('e2e-')}-{request.node.name[5:25].replace('_', '-')}"
    with fresh_namespace(plane.kube, base, lambda: [plane.log("shim"), plane.log("decider", 15)],
                         lambda: failed(request)) as name:
        yield name


def gone(kube: Kube, path: str, what: str, timeout: float = TIMEOUT) -> None:
    eventually(f"{what} gone", lambda: kube.maybe(path), lambda obj: obj is None, timeout,
               show=lambda obj: (obj or {}).get("metadata", {}))
