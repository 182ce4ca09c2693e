"""A Job update wakes its JobSet's pass only when the decider would read something new of the
Job (shim/job_events.py): the Job controller's bookkeeping (uncounted pods, terminating,
finalizers, managedFields, a new resourceVersion) does not."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from shim.job_events import same_for_decider
from tests.shim.helpers import NS, jobset, rjob, settle, wait_for

Obj = dict[str, Any]


def job() -> Obj:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "js-w-0", "namespace": NS, "uid": "u1", "resourceVersion": "10",
                     "creationTimestamp": "2026-11-29T00:00:00Z",
                     "labels": {"jobset.sigs.k8s.io/restart-attempt": "0"},
                     "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                                          "kind": "JobSet", "name": "js", "uid": "js1",
                                          "controller": True}]},
        "spec": {"parallelism": 1, "completions": 1,
                 "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"active": 1, "ready": 0, "startTime": "2026-11-29T00:00:01Z"},
    }


def change(fn: Callable[[Obj], None], base: Callable[[], Obj] = job) -> tuple[Obj, Obj]:
    old = base()
    new = copy.deepcopy(old)
    fn(new)
    new["metadata"]["resourceVersion"] = "11"
    return old, new


def suspended() -> Obj:
    out = job()
    out["spec"]["suspend"] = True
    return out


@pytest.mark.parametrize(("fn", "same"), [
    pytest.param(lambda j: None, True, id="resource-version-only"),
    pytest.param(lambda j: j["status"].update(uncountedTerminatedPods={"succeeded": ["p1"]}),
                 True, id="uncounted-terminated-pods-are-bookkeeping"),
    pytest.param(lambda j: j["status"].update(terminating=0), True, id="terminating-count"),
    pytest.param(lambda j: j["metadata"].update(finalizers=["x"], managedFields=[{}]), True,
                 id="finalizers-and-managed-fields"),
    pytest.param(lambda j: j["status"].update(ready=1), False, id="a-pod-ready"),
    pytest.param(lambda j: j["status"].update(succeeded=1, active=0), False, id="a-pod-done"),
    pytest.param(lambda j: j["status"].update(conditions=[{"type": "Complete",
                                                           "status": "True"}]),
                 False, id="a-condition"),
    pytest.param(lambda j: j["metadata"].update(deletionTimestamp="2026-11-29T00:01:00Z"),
                 False, id="being-deleted"),
    pytest.param(lambda j: j["metadata"]["labels"].update(x="y"), False, id="a-label"),
    pytest.param(lambda j: j["metadata"].update(annotations={"a": "b"}), False,
                 id="an-annotation"),
    pytest.param(lambda j: j["spec"].update(suspend=True), False, id="suspended"),
    pytest.param(lambda j: j["metadata"]["ownerReferences"][0].update(uid="js2"), False,
                 id="another-controller"),
    pytest.param(lambda j: j["status"].update(ready="x"), False,
                 id="malformed-is-left-to-a-pass"),
])
def test_same_for_decider(fn: Callable[[Obj], None], same: bool) -> None:
    assert same_for_decider(*change(fn)) is same


def test_a_suspended_jobs_containers_count() -> None:
    """A resume rewrites a suspended Job's containers: their change is read."""
    old, new = change(lambda j: j["spec"]["template"]["spec"]["containers"][0].update(
        resources={"limits": {"cpu": "2"}}), suspended)
    assert same_for_decider(old, new) is False


def test_no_previous_object() -> None:
    assert same_for_decider(None, job()) is False


@pytest.mark.waits
def test_bookkeeping_updates_wake_no_pass_and_a_pod_ready_does(cluster, shims) -> None:
    shim = shims.start()
    key = (NS, "quiet")
    cluster.create_jobset(jobset("quiet", rjob("w", 1)))
    wait_for(lambda: [s.get("ready") for s in (cluster.jobset("quiet").get("status") or {})
                      .get("replicatedJobsStatus", [])] == [1], what="the JobSet's Job ready")

    def writes_seen() -> bool:
        if not shim.expectations.pending(key):
            return True
        shim.queue.add(key)  # a pass is what drops the expectations it finds met
        return False

    wait_for(writes_seen, what="the shim's own writes seen")
    settle(shim)
    passes, unchanged = shim.stats.reconciles, shim.stats.unchanged

    cluster.store.mutate(cluster.jobs_rt, NS, "quiet-w-0", lambda j: j["status"].update(
        uncountedTerminatedPods={"succeeded": []}, terminating=0), status=True)
    wait_for(lambda: shim.stats.unchanged > unchanged,
             what=f"the update filtered (unchanged {shim.stats.unchanged})")
    settle(shim)
    assert shim.stats.reconciles == passes

    cluster.store.mutate(cluster.jobs_rt, NS, "quiet-w-0", lambda j: j["metadata"].setdefault(
        "annotations", {}).update(seen="yes"), status=False)
    wait_for(lambda: shim.stats.reconciles > passes,
             what=f"a pass for the annotation (passes {shim.stats.reconciles})")
