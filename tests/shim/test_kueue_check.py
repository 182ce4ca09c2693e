"""The decider-backed Kueue AdmissionCheck's decisions, without a cluster (shim/kueue_check).

The decider answers in-process (the contract's own methods); the Workload's pod sets are built
as Kueue v0.17's JobSet integration builds them (kueue pkg/controller/jobs/jobset PodSets():
one per replicated Job, its name lower-cased, count = replicas x min(parallelism, completions),
the pod template copied, and with TopologyAwareScheduling on the topology request from the
template's annotations, the completion-index label, the job-index label and the replicas).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import grpc
import pytest

from decider.contract.limits import DEFAULT as LIMITS
from decider.contract.methods import METHODS
from decider_api.v1 import decider_pb2 as pb
from shim.kube_errors import KubeError
from shim.kube_resource import Resource
from shim.kueue_check import workloads as wl
from shim.kueue_check.controller import AdmissionCheckController, CheckConfig, ask
from shim.kueue_check.podsets import differences
from shim.kueue_check.verdict import (
    PENDING,
    READY,
    REJECTED,
    RETRY,
    CallFailed,
    Verdict,
    failed,
    pushback_seconds,
)

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


CFG = CheckConfig(retry_after=30)
KUEUE = kueue_pod_sets(TRAINER)


@pytest.mark.parametrize(("workload_pod_sets", "state", "said"), [
    (KUEUE, READY, "pod sets agree (leader 1, workers 4)"),
    (edited(KUEUE, 1, ("count",), 6), REJECTED,
     "spec.podSets[1] (workers).count: the Workload has 6, the decider 4"),
    (edited(KUEUE, 0, ("minCount",), 1), REJECTED,
     "spec.podSets[0] (leader).minCount: the Workload has 1, the decider none"),
    (edited(KUEUE, 0, ("topologyRequest", "required"), "block"), REJECTED,
     "(leader).topologyRequest"),
    (edited(KUEUE, 1, ("template", "spec", "nodeSelector"), {"pool": "cpu"}), REJECTED,
     "(workers).nodeSelector: the Workload has {'pool': 'cpu'}, the decider {'pool': 'gpu'}"),
    (edited(KUEUE, 1, ("template", "spec", "tolerations"), []), REJECTED,
     "(workers).tolerations"),
    (list(reversed(KUEUE)), REJECTED,
     "spec.podSets names: the Workload has ['workers', 'leader'], the decider "
     "['leader', 'workers']"),
    (KUEUE[:1], REJECTED, "the Workload has ['leader'], the decider ['leader', 'workers']"),
], ids=["agree-ready", "count-differs", "min-count-differs", "topology-differs",
        "node-selector-differs", "tolerations-differ", "order-differs", "pod-set-missing"])
def test_pod_sets_compared(workload_pod_sets: list[dict[str, Any]], state: str,
                           said: str) -> None:
    verdict = ask(InProcess(), CFG, TRAINER, workload_pod_sets)
    assert verdict.state == state, verdict
    assert said in verdict.message, verdict.message
    assert verdict.requeue_after_seconds is None


@pytest.mark.parametrize(("toleration_a", "toleration_b", "agree"), [
    ({"key": "gpu", "operator": "Exists"}, {"key": "gpu", "operator": "Exists", "value": ""},
     True),
    ({"key": "gpu", "value": "a"}, {"key": "gpu", "operator": "Equal", "value": "a"}, True),
    ({"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
     {"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
     False),
], ids=["empty-value-is-absent", "empty-operator-is-equal", "seconds-compared"])
def test_tolerations_as_kubernetes_means_them(toleration_a: dict[str, Any],
                                              toleration_b: dict[str, Any],
                                              agree: bool) -> None:
    js = jobset(rjob("w", 1, 1, 1, tolerations=[toleration_a]))
    answer = InProcess().pod_sets(pb.PodSetsRequest(object_json=json.dumps(js)))
    workload = edited(kueue_pod_sets(js), 0, ("template", "spec", "tolerations"),
                      [toleration_b])
    assert (differences(answer.pod_sets, workload) == []) is agree


INVALID = jobset(rjob("workers", 1, 1, 1), rjob("workers", 1, 1, 1))


@pytest.mark.parametrize(("decider", "js", "state", "requeue", "said"), [
    (InProcess(), INVALID, REJECTED, None, "decider Validate: JobSet team-a/trainer is invalid"),
    (Failing(RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, "server busy",
                        (("grpc-retry-pushback-ms", "100"),))), TRAINER, RETRY, 1,
     "shedding load; pushback 1s"),
    (Failing(RpcFailure(grpc.StatusCode.UNAVAILABLE, "draining",
                        (("grpc-retry-pushback-ms", "2500"),))), TRAINER, RETRY, 3,
     "UNAVAILABLE: draining"),
    (Failing(RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy",
                        (("grpc-retry-pushback-ms", "500"),)), only_pod_sets=True),
     TRAINER, RETRY, 1, "decider PodSets"),
    (Failing(RpcFailure(grpc.StatusCode.UNAVAILABLE, "connection refused")), TRAINER, RETRY,
     30, "connection refused"),
    (Failing(RpcFailure(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline")), TRAINER, RETRY, 30,
     "DEADLINE_EXCEEDED"),
    (Failing(RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, "request past --max-request-bytes")),
     TRAINER, REJECTED, None, "past --max-request-bytes"),
    (Failing(RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, "spec.replicatedJobs[0]: bad")),
     TRAINER, REJECTED, None, "INVALID_ARGUMENT: spec.replicatedJobs[0]: bad"),
], ids=["invalid-jobset-rejected-with-decider-message", "shed-retry-after-pushback",
        "unavailable-with-pushback-retry-rounded-up", "pod-sets-shed-retry",
        "unreachable-retry-after-default", "deadline-retry-after-default",
        "past-a-limit-rejected", "refused-input-rejected"])
def test_decider_answers(decider: Any, js: dict[str, Any], state: str, requeue: int | None,
                         said: str) -> None:
    verdict = ask(decider, CFG, js, kueue_pod_sets(js))
    assert (verdict.state, verdict.requeue_after_seconds) == (state, requeue), verdict
    assert said in verdict.message, verdict.message


def test_invalid_names_the_field() -> None:
    verdict = ask(InProcess(), CFG, INVALID, kueue_pod_sets(INVALID))
    assert "spec.replicatedJobs" in verdict.message, verdict.message


@pytest.mark.parametrize(("trailers", "seconds"), [
    ((("grpc-retry-pushback-ms", "100"),), 1),
    ((("grpc-retry-pushback-ms", "1000"),), 1),
    ((("grpc-retry-pushback-ms", "1001"),), 2),
    ((("grpc-retry-pushback-ms", "0"),), 1),
    ((("Grpc-Retry-Pushback-Ms", "3000"),), 3),
    ((("grpc-retry-pushback-ms", "-1"),), None),
    ((("grpc-retry-pushback-ms", "soon"),), None),
    ((), None),
], ids=["100ms-is-1s", "exact-second", "rounded-up", "zero-is-at-least-1s",
        "key-any-case", "negative-is-none", "malformed-is-none", "absent"])
def test_pushback_seconds(trailers: tuple[tuple[str, str], ...], seconds: int | None) -> None:
    assert pushback_seconds(trailers) == seconds


@pytest.mark.parametrize(("code", "trailers", "state"), [
    (grpc.StatusCode.RESOURCE_EXHAUSTED, (("grpc-retry-pushback-ms", "-1"),), REJECTED),
    (grpc.StatusCode.INTERNAL, (), RETRY),
    (grpc.StatusCode.FAILED_PRECONDITION, (), REJECTED),
], ids=["exhausted-told-not-to-retry-is-a-limit", "internal-is-transient",
        "failed-precondition-is-final"])
def test_failed_calls(code: grpc.StatusCode, trailers: tuple[tuple[str, str], ...],
                      state: str) -> None:
    assert failed(CallFailed("Validate", code, "x", trailers), 30).state == state


def test_message_within_kueues_limit() -> None:
    # Kueue's AdmissionCheckState.message is at most 32768 characters; the API server refuses more.
    verdict = failed(CallFailed("Validate", grpc.StatusCode.INVALID_ARGUMENT, "e" * 40000), 30)
    assert len(verdict.message) == 32768 and verdict.message.endswith("...")


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


OURS = {"decider"}


@pytest.mark.parametrize(("obj", "expected"), [
    (workload({"QuotaReserved": "True"}, [("decider", PENDING)]), ["decider"]),
    (workload({"QuotaReserved": "True"}, [("other", PENDING), ("decider", PENDING)]),
     ["decider"]),
    (workload({}, [("decider", PENDING)]), []),
    (workload({"QuotaReserved": "False"}, [("decider", PENDING)]), []),
    (workload({"QuotaReserved": "True"}, [("decider", READY)]), []),
    (workload({"QuotaReserved": "True"}, [("decider", RETRY)]), []),
    (workload({"QuotaReserved": "True", "Finished": "True"}, [("decider", PENDING)]), []),
    (workload({"QuotaReserved": "True", "Evicted": "True"}, [("decider", PENDING)]), []),
], ids=["reserved-and-pending", "only-our-checks", "no-quota-yet", "quota-not-reserved",
        "already-ready", "retry-is-kueues-to-reset", "finished", "evicted"])
def test_pending(obj: dict[str, Any], expected: list[str]) -> None:
    assert wl.pending(obj, OURS) == expected


def test_ours_by_controller_name() -> None:
    checks = [{"metadata": {"name": "decider"}, "spec": {"controllerName": "x/check"}},
              {"metadata": {"name": "prov"},
               "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}]
    assert wl.ours(checks, "x/check") == {"decider"}


@pytest.mark.parametrize(("refs", "owner"), [
    ([{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "a",
       "controller": True}], "a"),
    ([{"apiVersion": "batch/v1", "kind": "Job", "name": "a", "controller": True}], None),
    ([{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "a"}], None),
    ([], None),
], ids=["jobset-controller", "a-job", "not-the-controller", "no-owner"])
def test_jobset_owner(refs: list[dict[str, Any]], owner: str | None) -> None:
    assert wl.jobset_owner({"metadata": {"ownerReferences": refs}}) == owner


@pytest.mark.parametrize(("verdict", "entry"), [
    (Verdict(READY, "ok"), {"name": "decider", "state": READY, "message": "ok",
                            "lastTransitionTime": NOW}),
    (Verdict(RETRY, "busy", 2), {"name": "decider", "state": RETRY, "message": "busy",
                                 "lastTransitionTime": NOW, "requeueAfterSeconds": 2}),
    (Verdict(PENDING, "still"), {"name": "decider", "state": PENDING, "message": "still",
                                 "lastTransitionTime": "2025-12-31T00:00:00Z"}),
], ids=["ready-transition-now", "retry-carries-requeue", "same-state-keeps-transition-time"])
def test_state_patch(verdict: Verdict, entry: dict[str, Any]) -> None:
    patch = wl.state_patch(workload({"QuotaReserved": "True"}, [("decider", PENDING)]),
                           "decider", verdict, NOW)
    assert patch["status"] == {"admissionChecks": [entry]}
    # Guarded: a Workload Kueue changed since it was read is a conflict, not overwritten.
    assert patch["metadata"] == {"name": "jobset-trainer-1a2b3", "namespace": "team-a",
                                 "resourceVersion": "42"}
    assert (patch["apiVersion"], patch["kind"]) == ("kueue.x-k8s.io/v1beta2", "Workload")


@pytest.mark.parametrize(("conditions", "generation", "patched"), [
    ([], 1, True),
    ([{"type": "Active", "status": "True", "observedGeneration": 1}], 1, False),
    ([{"type": "Active", "status": "True", "observedGeneration": 1}], 2, True),
    ([{"type": "Active", "status": "False", "observedGeneration": 1}], 1, True),
], ids=["new-check", "already-active", "new-generation", "inactive"])
def test_active_patch(conditions: list[dict[str, Any]], generation: int, patched: bool) -> None:
    check = {"metadata": {"name": "decider", "generation": generation},
             "status": {"conditions": conditions}}
    patch = wl.active_patch(check, NOW)
    assert (patch is not None) is patched
    if patch is not None:
        (cond,) = patch["status"]["conditions"]
        assert (cond["type"], cond["status"], cond["observedGeneration"]) == (
            "Active", "True", generation)


class RecordingKube:
    """The API as the controller uses it: kinds resolved, JobSets read, writes recorded."""

    PLURALS = {"AdmissionCheck": ("admissionchecks", False), "Workload": ("workloads", True),
               "JobSet": ("jobsets", True), "Event": ("events", True)}

    def __init__(self, jobsets: dict[str, dict[str, Any]]) -> None:
        self.jobsets = jobsets
        self.writes: list[tuple[str, str, dict[str, str], dict[str, Any], str]] = []
        self.events: list[dict[str, Any]] = []

    def resource(self, api_version: str, kind: str) -> Any:
        plural, namespaced = self.PLURALS[kind]
        return Resource(api_version, kind, plural, namespaced)

    def get(self, res: Any, namespace: str, name: str) -> dict[str, Any]:
        if name not in self.jobsets:
            raise KubeError("GET", res.path(namespace, name), status=404, reason="NotFound")
        return self.jobsets[name]

    def request(self, method: str, path: str, query: dict[str, str], body: dict[str, Any],
                content_type: str) -> None:
        self.writes.append((method, path, query, body, content_type))

    def create(self, res: Any, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        assert res.kind == "Event", res
        self.events.append(body)
        return body


def controller_with(jobsets: dict[str, dict[str, Any]], objects: list[dict[str, Any]]) -> Any:
    kube = RecordingKube(jobsets)
    ctl = AdmissionCheckController(kube, InProcess(), CheckConfig(controller_name="x/check"),
                                   clock=lambda: NOW)
    ctl.checks._put(("", "decider"), {"metadata": {"name": "decider", "generation": 1},
                                      "spec": {"controllerName": "x/check"}})
    for obj in objects:
        ctl.workloads._put((obj["metadata"]["namespace"], obj["metadata"]["name"]), obj)
    return ctl, kube


WL_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/jobset-trainer-1a2b3/status"


@pytest.mark.parametrize(("owner", "jobsets", "writes", "events"), [
    ("trainer", {"trainer": TRAINER}, [(WL_PATH, READY)], [("Normal", "AdmissionCheckReady")]),
    ("trainer", {"trainer": INVALID}, [(WL_PATH, REJECTED)],
     [("Warning", "AdmissionCheckRejected")]),
    (None, {}, [(WL_PATH, READY)], []),
    ("trainer", {}, [], []),
], ids=["jobset-judged-ready", "invalid-jobset-rejected", "not-a-jobsets-workload-ready",
        "jobset-gone-nothing-written"])
def test_reconcile_writes_one_apply(owner: str | None, jobsets: dict[str, dict[str, Any]],
                                    writes: list[tuple[str, str]],
                                    events: list[tuple[str, str]]) -> None:
    obj = workload({"QuotaReserved": "True"}, [("decider", PENDING), ("other", PENDING)],
                   owner=owner)
    obj["spec"] = {"podSets": kueue_pod_sets(TRAINER)}
    ctl, kube = controller_with(jobsets, [obj])
    ctl.reconcile(("team-a", "jobset-trainer-1a2b3"))
    assert [(w[1], w[3]["status"]["admissionChecks"][0]["state"]) for w in kube.writes] == writes
    # The verdict is told on the JobSet: Kueue resets a Rejected or Retry entry at once.
    assert [(e["type"], e["reason"]) for e in kube.events] == events
    assert all(e["involvedObject"]["name"] == "trainer" and e["message"].startswith(
        "decider on Workload jobset-trainer-1a2b3: decider") for e in kube.events)
    for method, _, query, body, content_type in kube.writes:
        # A server-side apply of our entry alone, forced, as the check's own field manager.
        assert (method, content_type) == ("PATCH", "application/apply-patch+yaml")
        assert query == {"fieldManager": "x-check", "force": "true"}
        assert [e["name"] for e in body["status"]["admissionChecks"]] == ["decider"]


def test_reconcile_marks_our_check_active() -> None:
    ctl, kube = controller_with({}, [])
    ctl.reconcile(("admissionchecks", "decider"))
    ((method, path, _, body, _),) = kube.writes
    assert (method, path) == ("PATCH",
                              "/apis/kueue.x-k8s.io/v1beta2/admissionchecks/decider/status")
    assert body["status"]["conditions"][0]["type"] == "Active"
