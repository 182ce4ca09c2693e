"""Gang objects must converge: no plan repeats itself against what the server serves back.

Two hot loops measured with the shim, for every target and API generation:
- a deleted Workload/PodGroup lingers with a ``deletionTimestamp`` (a protection finalizer);
  planning its delete again on every pass sent ~1,500 DELETEs in 3 s after a suspend. Upstream
  skips children that are already terminating (spec §2.2), and waits for one to be gone before
  creating its same-named successor;
- a server fills in PodGroup fields the decider never sets (Volcano's webhook: ``queue:
  default``; scheduler-plugins: ``scheduleTimeoutSeconds``; Priority admission: ``priority``,
  ``priorityClassName``, ``preemptionPolicy``); reading them as drift deleted and recreated the
  object forever. Only the fields the decider sets are compared.

Each case drives Decide with what a server would serve after applying the previous plan, and
checks that the pass after it plans no gang action at all.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from decider.core.decide import decide
from decider.core.model import Observed, ObservedJob, ObservedObject, Options, Plan
from decider.core.state import merge_patch
from support.builders import NOW, UID, job, jobset, rjob

A1, A2, B1 = (f"scheduling.k8s.io/{v}" for v in ("v1alpha1", "v1alpha2", "v1beta1"))
GANG = "jobset-decider.io/gang-policy"
GANG_ACTIONS = {"CreateWorkload", "CreatePodGroup", "DeleteWorkload", "DeletePodGroup",
                "PatchWorkload", "PatchPodGroup"}
DELETED_AT = "2026-01-01T11:59:00Z"
PROTECTION = "scheduling.k8s.io/podgroup-protection"

Serve = Callable[[dict[str, Any]], None]

# (api_version, target) of every way the decider spells a gang.
TARGETS: list[tuple[str, str, str]] = [
    ("v1alpha1", A1, "kubernetes"),
    ("v1alpha2", A2, "kubernetes"),
    ("v1beta1", B1, "kubernetes"),
    ("scheduler-plugins", B1, "scheduler-plugins"),
    ("volcano", B1, "volcano"),
]


def gang_jobset(*, suspend: bool = False, completed: bool = False) -> dict[str, Any]:
    js = jobset(rjob("leader", 1, parallelism=1, completions=1),
                rjob("workers", 2, parallelism=2, completions=2))
    js["metadata"]["annotations"] = {GANG: "JobSetGangPerReplicatedJob"}
    if suspend:
        js["spec"]["suspend"] = True
    if completed:
        js["status"] = {"terminalState": "Completed", "conditions": [
            {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
             "message": "jobset completed successfully",
             "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
    return js


def child_jobs(suspend: bool = False) -> list[ObservedJob]:
    return [job("leader", 0, suspend=suspend),
            job("workers", 0, suspend=suspend, parallelism=2, completions=2),
            job("workers", 1, suspend=suspend, parallelism=2, completions=2)]


def run(js: dict[str, Any], jobs: list[ObservedJob], objects: list[ObservedObject],
        api_version: str, target: str) -> Plan:
    return decide(Observed(jobset=copy.deepcopy(js), now=NOW, jobs=list(jobs),
                           objects=copy.deepcopy(objects),
                           options=Options(gang_api_version=api_version, gang_target=target)))


def gang(plan: Plan) -> list[tuple[str, str]]:
    return [(a.type, a.name) for a in plan.actions if a.type in GANG_ACTIONS]


def no_defaults(obj: dict[str, Any]) -> None:
    """A server that serves back exactly what was created."""


def apply(plan: Plan, objects: list[ObservedObject], serve: Serve = no_defaults,
          ) -> list[ObservedObject]:
    """What the server holds after the plan's gang actions: creates get a uid and the server's
    defaults, deletes leave the object terminating (its protection finalizer), patches merge."""
    out = copy.deepcopy(objects)
    by_name = {o.name: o for o in out}
    for a in plan.actions:
        if a.type in ("CreateWorkload", "CreatePodGroup"):
            assert a.name not in by_name, f"{a.name} would meet AlreadyExists"
            obj = copy.deepcopy(a.object)
            obj["metadata"]["uid"] = f"uid-{a.name}"
            obj["metadata"]["finalizers"] = [PROTECTION]
            for ref in obj["metadata"].get("ownerReferences", []):
                ref["uid"] = UID if ref.get("controller") else f"uid-{ref['name']}"
            serve(obj)
            o = ObservedObject(api_version=obj["apiVersion"], kind=obj["kind"], name=a.name,
                               uid=f"uid-{a.name}", controller_uid=UID, obj=obj)
            out.append(o)
            by_name[a.name] = o
        elif a.type in ("DeleteWorkload", "DeletePodGroup"):
            meta = by_name[a.name].obj["metadata"]
            assert a.uid == meta["uid"]
            meta["deletionTimestamp"] = DELETED_AT
        elif a.type in ("PatchWorkload", "PatchPodGroup"):
            o = by_name[a.name]
            o.obj = merge_patch(o.obj, a.patch)
    return out


def gone(objects: list[ObservedObject]) -> list[ObservedObject]:
    """The finalizer is lifted: terminating objects disappear."""
    return [o for o in objects if not o.obj["metadata"].get("deletionTimestamp")]


def running(api_version: str, target: str, serve: Serve = no_defaults) -> list[ObservedObject]:
    """The gang objects of a running JobSet, as the server serves them."""
    first = run(gang_jobset(), [], [], api_version, target)
    assert gang(first)
    return apply(first, [], serve)


# --- bug A: an object already being deleted is never deleted again ------------------------

@pytest.mark.parametrize(("api_version", "target"),
                         [pytest.param(v, t, id=f"{k}/suspend-deletes-once")
                          for k, v, t in TARGETS])
def test_suspend_deletes_each_object_once(api_version: str, target: str) -> None:
    objects = running(api_version, target)
    plan = run(gang_jobset(suspend=True), child_jobs(), objects, api_version, target)
    assert sorted(n for _, n in gang(plan)) == sorted(o.name for o in objects)
    assert all(t.startswith("Delete") for t, _ in gang(plan))
    terminating = apply(plan, objects)
    again = run(gang_jobset(suspend=True), child_jobs(suspend=True), terminating,
                api_version, target)
    assert gang(again) == []
    assert any("already being deleted" in s for s in again.explanation)
    # Gone: a suspended JobSet keeps no objects and asks for none.
    assert gang(run(gang_jobset(suspend=True), child_jobs(suspend=True), gone(terminating),
                    api_version, target)) == []


@pytest.mark.parametrize(("api_version", "target"),
                         [pytest.param(v, t, id=f"{k}/finished-deletes-once")
                          for k, v, t in TARGETS])
def test_finished_jobset_deletes_each_object_once(api_version: str, target: str) -> None:
    objects = running(api_version, target)
    done = gang_jobset(completed=True)
    plan = run(done, [], objects, api_version, target)
    assert len(gang(plan)) == len(objects)
    assert gang(run(done, [], apply(plan, objects), api_version, target)) == []


@pytest.mark.parametrize(("api_version", "target"),
                         [pytest.param(v, t, id=f"{k}/some-terminating-only-the-rest-deleted")
                          for k, v, t in TARGETS])
def test_only_objects_not_yet_terminating_are_deleted(api_version: str, target: str) -> None:
    objects = running(api_version, target)
    objects[0].obj["metadata"]["deletionTimestamp"] = DELETED_AT
    plan = run(gang_jobset(suspend=True), child_jobs(), objects, api_version, target)
    assert sorted(n for _, n in gang(plan)) == sorted(o.name for o in objects[1:])


@pytest.mark.parametrize(("api_version", "target"),
                         [pytest.param(v, t, id=f"{k}/resume-waits-for-terminating")
                          for k, v, t in TARGETS])
def test_resume_waits_until_the_old_objects_are_gone(api_version: str, target: str) -> None:
    objects = running(api_version, target)
    suspend = run(gang_jobset(suspend=True), child_jobs(), objects, api_version, target)
    terminating = apply(suspend, objects)
    # Resumed while the old objects linger: creating them would meet AlreadyExists, and pods
    # of resumed Jobs would join (and keep alive, through the finalizer) the dying groups.
    waiting = run(gang_jobset(), child_jobs(suspend=True), terminating, api_version, target)
    assert gang(waiting) == []
    assert not [a for a in waiting.actions if a.type in ("ResumeJob", "CreateJob")]
    assert any("still being deleted" in s for s in waiting.explanation)
    # Also when only some of them linger: nothing is created until all are gone.
    partly = terminating[:1]
    assert gang(run(gang_jobset(), child_jobs(suspend=True), partly, api_version, target)) == []
    # Gone: recreated with the same names, then Jobs resumed; the next pass plans nothing.
    resumed = run(gang_jobset(), child_jobs(suspend=True), gone(terminating),
                  api_version, target)
    assert sorted(n for _, n in gang(resumed)) == sorted(o.name for o in objects)
    assert len([a for a in resumed.actions if a.type == "ResumeJob"]) == 3
    after = apply(resumed, gone(terminating))
    assert gang(run(gang_jobset(), child_jobs(), after, api_version, target)) == []


# --- bug B: what the server fills in is not drift ------------------------------------------

def _priority_admission(fields: dict[str, Any]) -> Serve:
    """Priority admission (global default class) and other defaults on every group."""
    def serve(obj: dict[str, Any]) -> None:
        spec = obj["spec"]
        if obj["kind"] == "PodGroup":
            spec.update(copy.deepcopy(fields))
        for key in ("podGroupTemplates", "podGroups"):
            for t in spec.get(key) or []:
                t.update(copy.deepcopy(fields))
    return serve


def _spec_defaults(fields: dict[str, Any]) -> Serve:
    def serve(obj: dict[str, Any]) -> None:
        obj["spec"].update(copy.deepcopy(fields))
    return serve


SERVED: dict[str, tuple[str, Serve]] = {
    # 1.35 has no defaults of its own; a newer server or a mutating webhook may still add fields.
    "v1alpha1": ("webhook-added-fields",
                 _priority_admission({"priorityClassName": "cluster-default",
                                      "priority": 1000})),
    "v1alpha2": ("priority-admission-and-disruption-default",
                 _priority_admission({"priorityClassName": "cluster-default",
                                      "priority": 1000, "disruptionMode": "Pod"})),
    "v1beta1": ("priority-admission-and-disruption-default",
                _priority_admission({"priorityClassName": "cluster-default", "priority": 1000,
                                     "preemptionPolicy": "PreemptLowerPriority",
                                     "disruptionMode": {"single": {}}})),
    "scheduler-plugins": ("schedule-timeout-and-min-resources",
                          _spec_defaults({"scheduleTimeoutSeconds": 60,
                                          "minResources": {"cpu": "2"}})),
    "volcano": ("webhook-default-queue", _spec_defaults({"queue": "default"})),
}


@pytest.mark.parametrize(("api_version", "target", "serve"),
                         [pytest.param(v, t, SERVED[k][1], id=f"{k}/{SERVED[k][0]}-not-drift")
                          for k, v, t in TARGETS])
def test_server_filled_fields_are_not_drift(api_version: str, target: str,
                                            serve: Serve) -> None:
    objects = running(api_version, target, serve)
    plan = run(gang_jobset(), child_jobs(), objects, api_version, target)
    assert gang(plan) == []
    assert len([s for s in plan.explanation if "controlled by the JobSet: kept" in s]) == len(
        objects)


def _change_min(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    if "minMember" in spec:
        spec["minMember"] = 99
    for policy in [spec.get("schedulingPolicy"),
                   *(t.get("schedulingPolicy") for t in spec.get("podGroupTemplates") or []),
                   *(t.get("policy") for t in spec.get("podGroups") or [])]:
        if policy and "gang" in policy:
            policy["gang"]["minCount"] = 99


def _change_variant(obj: dict[str, Any]) -> None:
    """gang -> basic: a field the decider sets, immutable."""
    spec = obj["spec"]
    for key in ("podGroups", "podGroupTemplates"):
        for t in spec.get(key) or []:
            t["policy" if key == "podGroups" else "schedulingPolicy"] = {"basic": {}}
    if "schedulingPolicy" in spec:
        spec["schedulingPolicy"] = {"basic": {}}


# (label, mutation, expected gang action types on the next pass)
CHANGES: dict[str, tuple[str, Callable[[dict[str, Any]], None], set[str]]] = {
    "v1alpha1": ("changed-policy-replaced", _change_variant, {"DeleteWorkload"}),
    "v1alpha2": ("changed-policy-replaced", _change_variant,
                 {"DeleteWorkload", "DeletePodGroup"}),
    "v1beta1": ("changed-minCount-patched-in-place", _change_min,
                {"PatchWorkload", "PatchPodGroup"}),
    # docs/gang.md: minMember is patched in place, as minCount is (both servers allow it).
    "scheduler-plugins": ("changed-minMember-patched-in-place", _change_min, {"PatchPodGroup"}),
    "volcano": ("changed-minMember-patched-in-place", _change_min, {"PatchPodGroup"}),
}


@pytest.mark.parametrize(
    ("api_version", "target", "serve", "change", "expected"),
    [pytest.param(v, t, SERVED[k][1], CHANGES[k][1], CHANGES[k][2],
                  id=f"{k}/{SERVED[k][0]}-but-{CHANGES[k][0]}")
     for k, v, t in TARGETS])
def test_a_real_change_beside_server_fields_is_still_drift(
    api_version: str, target: str, serve: Serve, change: Callable[[dict[str, Any]], None],
    expected: set[str],
) -> None:
    objects = running(api_version, target, serve)
    for o in objects:
        change(o.obj)
    plan = run(gang_jobset(), child_jobs(), objects, api_version, target)
    assert {t for t, _ in gang(plan)} == expected
    # Replaced objects are terminating on the next pass: waited for, not deleted again; a
    # patched one now matches. Either way the pass after plans nothing.
    after = apply(plan, objects, serve)
    assert gang(run(gang_jobset(), child_jobs(), after, api_version, target)) == []


@pytest.mark.parametrize(("api_version", "target"),
                         [pytest.param(v, t, id=f"{k}/changed-minMember-or-minCount-converges")
                          for k, v, t in TARGETS])
def test_a_changed_min_is_repaired_for_good(api_version: str, target: str) -> None:
    """Replace or patch, then whatever the server serves back is final: no second round."""
    serve = SERVED[next(k for k, v, t in TARGETS if (v, t) == (api_version, target))][1]
    objects = running(api_version, target, serve)
    for o in objects:
        _change_min(o.obj)
    objects = apply(run(gang_jobset(), child_jobs(), objects, api_version, target), objects,
                    serve)
    for _ in range(3):  # terminating -> gone -> recreated -> kept
        objects = gone(objects)
        objects = apply(run(gang_jobset(), child_jobs(), objects, api_version, target),
                        objects, serve)
    assert gang(run(gang_jobset(), child_jobs(), objects, api_version, target)) == []
    assert sorted(o.name for o in objects) == sorted(o.name for o in running(api_version,
                                                                             target))
