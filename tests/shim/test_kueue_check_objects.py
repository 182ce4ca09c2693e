"""The check's reading and writing of Kueue's objects, and its controller's reconcile against a
recording API, without a cluster (shim/kueue_check)."""

from __future__ import annotations

from typing import Any

import pytest

from shim.kube_errors import KubeError
from shim.kube_resource import Resource
from shim.kueue_check import workloads as wl
from shim.kueue_check.controller import AdmissionCheckController, CheckConfig
from shim.kueue_check.verdict import PENDING, READY, REJECTED, RETRY, Verdict
from tests.shim.kueue_check_support import (
    INVALID,
    NOW,
    TRAINER,
    InProcess,
    kueue_pod_sets,
    workload,
)

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
