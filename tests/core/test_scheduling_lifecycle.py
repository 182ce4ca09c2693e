"""Decide on a JobSet with upstream's spec.scheduling, ported from jobset@4f0cbded:
pkg/controllers/scheduling_reconcile_test.go (reconcileSchedulingObjects, schedulingObjectsReady)
and the lifecycle cases of test/integration/scheduling/scheduling_test.go, as passes of Decide
over what the cluster serves after each. Ids name the upstream test."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from decider.core.decide import decide
from decider.core.gang import names as n
from decider.core.model import Observed, ObservedJob, ObservedObject, Options, Plan
from support.builders import NOW, UID, job, jobset, rjob, service, types

ON = {"JobSetWorkloadAwareSchedulingAPI": True}
GT = "scheduling.k8s.io/group-template-name"
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
B1 = "scheduling.k8s.io/v1beta1"
WL = n.jobset_workload_name("default", "js")


def sched_js(*rjobs: dict[str, Any], scheduling: Any = None, suspend: bool = False,
             status: dict[str, Any] | None = None) -> dict[str, Any]:
    js = jobset(*(rjobs or (rjob("workers", 1, parallelism=1, completions=1),)), status=status)
    js["spec"]["scheduling"] = {} if scheduling is None else scheduling
    if suspend:
        js["spec"]["suspend"] = True
    return js


def run(js: dict[str, Any], objects: list[ObservedObject] = (), jobs: list[ObservedJob] = (),
        gates: dict[str, bool] | None = None) -> Plan:
    return decide(Observed(jobset=copy.deepcopy(js), now=NOW, jobs=list(jobs),
                           objects=[service(), *objects],
                           options=Options(feature_gates=ON if gates is None else gates)))


def served(plan: Plan, *, owner: str = UID, deleting: tuple[str, ...] = ()) -> list[ObservedObject]:
    """What the API server holds after the plan's scheduling creates."""
    out = []
    for a in plan.actions:
        if a.type in ("CreateWorkload", "CreatePodGroup", "CreateCompositePodGroup"):
            obj = copy.deepcopy(a.object)
            assert obj is not None
            obj["metadata"]["uid"] = f"uid-{a.name}"
            if a.name in deleting:
                obj["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
            for ref in obj["metadata"]["ownerReferences"]:
                ref["uid"] = owner
            out.append(ObservedObject(api_version=obj["apiVersion"], kind=obj["kind"],
                                      name=a.name, uid=f"uid-{a.name}", controller_uid=owner,
                                      obj=obj))
    return out


def created_jobs(plan: Plan) -> dict[str, dict[str, Any]]:
    return {a.name: a.object for a in plan.actions if a.type == "CreateJob" and a.object}


def kinds(plan: Plan) -> list[str]:
    return [t for t, _ in types(plan)]


def as_observed(plan: Plan, **changes: Any) -> list[ObservedJob]:
    """The Jobs the plan created, as observed (annotations and pod schedulingGroup kept)."""
    out = []
    for obj in created_jobs(plan).values():
        rj, idx = obj["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"], \
            int(obj["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"])
        observed = job(rj, idx)
        group = obj["spec"]["template"]["spec"].get("schedulingGroup")
        pt = replace(observed.pod_template or _empty_template(),
                     scheduling_group=group is not None,
                     pod_group_name=(group or {}).get("podGroupName"))
        out.append(replace(observed, annotations=dict(obj["metadata"].get("annotations") or {}),
                           pod_template=pt, **changes))
    return out


def _empty_template() -> Any:
    from decider.core.model import PodTemplateSummary

    return PodTemplateSummary()


# --- reconcileSchedulingObjects -----------------------------------------------------------------

def test_creates_workload_and_podgroup_together_and_no_job_before_they_are_there() -> None:
    """TestReconcileSchedulingObjects/creates Workload and PodGroup together, then the readiness
    gate (schedulingObjectsReady): the Jobs come on the pass the objects are seen."""
    first = run(sched_js())
    assert kinds(first) == ["CreateWorkload", "CreatePodGroup", "UpdateStatus"]
    wl, pg = first.actions[0].object, first.actions[1].object
    assert wl["metadata"]["labels"] == {NAME_LABEL: "js"}  # LabelsCreatedWorkload
    assert pg["metadata"]["labels"] == {NAME_LABEL: "js"}
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 1}}
    second = run(sched_js(), served(first))
    jobs = created_jobs(second)
    assert list(jobs) == ["js-workers-0"]
    assert jobs["js-workers-0"]["metadata"]["annotations"][GT] == WL
    assert jobs["js-workers-0"]["spec"]["template"]["spec"]["schedulingGroup"] == {
        "podGroupName": WL}
    assert "CreateWorkload" not in kinds(second)  # matching objects are retained


def test_scaling_patches_both_min_counts_in_one_pass() -> None:
    """TestReconcileSchedulingObjects/scaling patches both minCounts in one reconcile (the
    integration test's ElasticJobSet parallelism 2 -> 4: same objects, minCount 4)."""
    small = sched_js(rjob("workers", 1, parallelism=2, completions=2))
    objects = served(run(small))
    big = sched_js(rjob("workers", 1, parallelism=4, completions=4))
    plan = run(big, objects, gates={**ON, "ElasticJobSet": True})
    patches = {a.kind: a.patch for a in plan.actions if a.type.startswith("Patch")}
    assert patches["PodGroup"] == {"spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}}
    (tpl,) = patches["Workload"]["spec"]["podGroupTemplates"]
    assert tpl["schedulingPolicy"] == {"gang": {"minCount": 4}} and tpl["name"] == WL
    assert not [k for k in kinds(plan) if k.startswith(("Delete", "Create"))
                and k != "CreateJob"]


def test_workload_drift_deletes_everything_and_the_next_pass_recreates() -> None:
    """TestReconcileSchedulingObjects/Workload drift stops before materializing PodGroups, and
    TestReconcileSchedulingObjectsDeletesOwnedStalePodGroup (a policy switched while
    suspended): both objects go, no Job is created, the next pass makes them anew."""
    objects = served(run(sched_js()))
    basic = sched_js(scheduling={"schedulingPolicy": {"basic": {}}})
    plan = run(basic, objects)
    assert kinds(plan)[:2] == ["DeletePodGroup", "DeleteWorkload"]
    assert "CreateJob" not in kinds(plan)
    again = run(basic)
    assert kinds(again)[:2] == ["CreateWorkload", "CreatePodGroup"]
    assert again.actions[1].object["spec"]["schedulingPolicy"] == {"basic": {}}


@pytest.mark.parametrize("kind", ["Workload", "PodGroup"])
def test_a_same_named_object_not_ours_fails_the_reconcile(kind: str) -> None:
    """TestReconcileSchedulingObjectsRejectsUnownedExistingWorkload and
    TestReconcileSchedulingObjects/rejects an unowned PodGroup: a Warning event with the
    error's text, nothing created past it, no status write, retried with backoff."""
    objects = served(run(sched_js()))
    foreign = [o for o in objects if o.kind == kind]
    foreign[0].obj["metadata"]["ownerReferences"][0]["uid"] = "another-uid"
    foreign[0].controller_uid = "another-uid"
    keep = [o for o in objects if o.kind != kind] if kind == "Workload" else objects
    if kind == "Workload":
        keep = foreign
    plan = run(sched_js(), keep)
    events = [a.event for a in plan.actions if a.type == "Event"]
    assert [(e.type, e.reason) for e in events] == [("Warning",
                                                     "SchedulingObjectsReconcileFailed")]
    assert events[0].message == (f"{kind.lower()} default/{WL} already exists and is not "
                                 "controlled by JobSet default/js")
    assert "UpdateStatus" not in kinds(plan) and "CreateJob" not in kinds(plan)
    assert "CreatePodGroup" not in kinds(plan)
    assert plan.requeue_after is not None and plan.requeue_after.total_seconds() >= 1


@pytest.mark.parametrize(("omit", "deleting", "ready"), [
    pytest.param((), (), True, id="TestSchedulingObjectsReady/Workload-and-PodGroup-live"),
    pytest.param(("Workload",), (), False, id="TestSchedulingObjectsReady/Workload-missing"),
    pytest.param(("PodGroup",), (), False, id="TestSchedulingObjectsReady/PodGroup-missing"),
    pytest.param((), ("Workload",), False, id="TestSchedulingObjectsReady/Workload-terminating"),
    pytest.param((), ("PodGroup",), False, id="TestSchedulingObjectsReady/PodGroup-terminating"),
])
def test_readiness_gate(omit: tuple[str, ...], deleting: tuple[str, ...], ready: bool) -> None:
    first = run(sched_js())
    names = {a.kind: a.name for a in first.actions if a.object}
    objects = [o for o in served(first, deleting=tuple(names[k] for k in deleting))
               if o.kind not in omit]
    plan = run(sched_js(), objects)
    assert ("CreateJob" in kinds(plan)) is ready
    if deleting:
        # TestReconcileSchedulingObjectsWaitsForTerminatingObjects: no patch, no error, wait.
        assert not [k for k in kinds(plan) if k.startswith(("Patch", "Delete", "Create"))]
        assert "Event" not in kinds(plan)


# --- suspend, resume, finish (integration) ------------------------------------------------------

def test_created_suspended_makes_no_objects_and_its_jobs_carry_the_mapping() -> None:
    """integration: should not create scheduling objects when JobSet is created suspended."""
    plan = run(sched_js(rjob("workers", 2, parallelism=2, completions=2), suspend=True))
    assert not [k for k in kinds(plan) if "Workload" in k or "PodGroup" in k]
    jobs = created_jobs(plan)
    assert len(jobs) == 2 and all(j["spec"]["suspend"] is True for j in jobs.values())
    assert all(j["metadata"]["annotations"][GT] == WL for j in jobs.values())


def test_suspend_deletes_and_resume_recreates_with_the_same_names() -> None:
    """integration: should delete and recreate scheduling objects across suspend-resume cycle
    (PodGroups first, then the Workload; the same names come back)."""
    js = sched_js(scheduling={"replicatedJobs": [
        {"targetReplicatedJobs": ["driver"], "schedulingPolicy": {"basic": {}}},
        {"targetReplicatedJobs": ["workers"], "schedulingPolicy": {"gang": {}}}]})
    js["spec"]["replicatedJobs"] = [rjob("driver", 1, parallelism=1, completions=1),
                                    rjob("workers", 2, parallelism=2, completions=2)]
    first = run(js)
    objects = served(first)
    made = [(a.kind, a.name) for a in first.actions if a.object]
    suspended = copy.deepcopy(js)
    suspended["spec"]["suspend"] = True
    plan = run(suspended, objects)
    assert [(a.kind, a.name) for a in plan.actions if a.type.startswith("Delete")
            and a.kind != "Job"] == [made[1], made[2], made[0]]
    resumed = run(js)
    assert [(a.kind, a.name) for a in resumed.actions if a.object] == made
    workers = [o for o in resumed.actions if o.kind == "PodGroup"][1].object
    assert workers["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}


def test_finished_jobset_deletes_active_jobs_then_its_objects() -> None:
    """jobset_controller.go@4f0cbded: a finished JobSet deletes its active Jobs, then its
    scheduling objects (new since the alpha's first code)."""
    done = {"conditions": [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                            "message": "jobset completed successfully",
                            "lastTransitionTime": "2026-01-01T11:00:00Z"}]}
    objects = served(run(sched_js()))
    plan = run(sched_js(status=done), objects, [job("workers", 0)])
    assert kinds(plan)[:3] == ["DeleteJob", "DeletePodGroup", "DeleteWorkload"]


def test_deletion_goes_by_label_and_controller() -> None:
    """deleteSchedulingObjects lists PodGroups by the jobset-name label and checks the
    controller; the Workload by its name."""
    objects = served(run(sched_js()))
    unlabelled = copy.deepcopy(objects[1])
    unlabelled.obj["metadata"]["labels"] = {}
    plan = run(sched_js(suspend=True), [objects[0], unlabelled])
    assert [a.kind for a in plan.actions if a.type.startswith("Delete")] == ["Workload"]


def test_gate_off_changes_nothing_for_a_jobset_with_spec_scheduling() -> None:
    """integration (gate disabled): the JobSet runs as if it had no spec.scheduling."""
    with_field = run(sched_js(), gates={})
    without = jobset(rjob("workers", 1, parallelism=1, completions=1))
    plain = decide(Observed(jobset=without, now=NOW, objects=[service()],
                            options=Options()))
    assert [(a.type, a.name) for a in with_field.actions] == \
        [(a.type, a.name) for a in plain.actions]


# --- stale-Job recreation -------------------------------------------------------------------

def _running(js: dict[str, Any]) -> tuple[list[ObservedObject], list[ObservedJob]]:
    first = run(js)
    objects = served(first)
    return objects, as_observed(run(js, objects))


def test_jobs_made_for_an_earlier_scheduling_are_recreated() -> None:
    """integration: recreates child Jobs when scheduling changes while suspended. On the
    resumed pass the new objects are made first; the pass after deletes the stale Job; the
    one after that creates it with the new mapping."""
    gang = sched_js()
    _, jobs = _running(gang)
    basic = sched_js(scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["workers"],
                                                     "schedulingPolicy": {"basic": {}}}]})
    new_objects = served(run(basic))
    plan = run(basic, new_objects, jobs)
    deletes = [(a.name, a.propagation_policy) for a in plan.actions if a.type == "DeleteJob"]
    assert deletes == [("js-workers-0", "Foreground")]
    assert "CreateJob" not in kinds(plan)
    after = run(basic, new_objects)
    (recreated,) = created_jobs(after).values()
    template = n.jobset_group_template("default", "js", ["workers"])
    assert recreated["metadata"]["annotations"][GT] == template
    assert recreated["spec"]["template"]["spec"]["schedulingGroup"] == {
        "podGroupName": n.jobset_podgroup_name("js", template)}


def test_a_stripped_scheduling_group_is_not_staleness() -> None:
    """schedulingJobsNeedRecreation: a nil schedulingGroup (GenericWorkload off on the API
    server) is judged by the annotation alone."""
    objects, jobs = _running(sched_js())
    stripped = [replace(j, pod_template=replace(j.pod_template, scheduling_group=False,
                                                pod_group_name=None)) for j in jobs]
    assert "DeleteJob" not in kinds(run(sched_js(), objects, stripped))
    other = [replace(j, pod_template=replace(j.pod_template, pod_group_name="elsewhere"))
             for j in jobs]
    assert "DeleteJob" in kinds(run(sched_js(), objects, other))


def test_a_suspended_jobset_keeps_its_jobs_whatever_they_point_at() -> None:
    objects, jobs = _running(sched_js())
    renamed = [replace(j, annotations={GT: "old"}) for j in jobs]
    assert "DeleteJob" not in kinds(run(sched_js(suspend=True), objects, renamed))


# --- what the Jobs and objects carry (integration) ----------------------------------------------

def test_per_job_podgroups_and_a_shared_launcher_group() -> None:
    """integration: should create one PodGroup per Job when job is set (Gang-of-Gangs per-Job
    model), with the launcher's PodGroup shared; and DRA resourceClaims on per-Job PodGroups."""
    js = sched_js(rjob("launcher", 1, parallelism=1, completions=1),
                  rjob("worker", 2, parallelism=2, completions=2),
                  scheduling={"replicatedJobs": [
                      {"targetReplicatedJobs": ["launcher"], "schedulingPolicy": {"gang": {}}},
                      {"targetReplicatedJobs": ["worker"], "job": {
                          "disruptionMode": {"all": {}},
                          "resourceClaims": [{"name": "imex-channel",
                                              "resourceClaimTemplateName": "imex-template"}]}}]})
    first = run(js)
    wl = first.actions[0].object
    names = [t["name"] for t in wl["spec"]["podGroupTemplates"]]
    assert [x.rsplit("-", 1)[0] for x in names] == ["launcher", "worker-0", "worker-1"]
    pgs = {a.name: a.object for a in first.actions if a.kind == "PodGroup"}
    assert len(pgs) == 3
    worker_pgs = [pg for name, pg in pgs.items() if "worker" in name]
    for pg in worker_pgs:
        assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
        assert pg["spec"]["disruptionMode"] == {"all": {}}
        assert pg["spec"]["resourceClaims"] == [{"name": "imex-channel",
                                                 "resourceClaimTemplateName": "imex-template"}]
    jobs = created_jobs(run(js, served(first)))
    seen = {j["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"]
            for name, j in jobs.items() if "worker" in name}
    assert seen == {pg["metadata"]["name"] for pg in worker_pgs}


def test_top_level_basic_is_one_basic_podgroup() -> None:
    """integration: should create a single Basic PodGroup for the whole JobSet when the
    top-level policy is Basic."""
    js = sched_js(rjob("driver", 1, parallelism=1, completions=1),
                  rjob("workers", 2, parallelism=2, completions=2),
                  scheduling={"schedulingPolicy": {"basic": {}}})
    plan = run(js)
    (pg,) = [a.object for a in plan.actions if a.kind == "PodGroup"]
    assert pg["metadata"]["name"] == WL and pg["spec"]["schedulingPolicy"] == {"basic": {}}


def test_no_scheduling_means_no_objects_and_no_annotations() -> None:
    """integration: should not create scheduling objects when scheduling is nil."""
    js = jobset(rjob("workers", 1, parallelism=1, completions=1))
    plan = decide(Observed(jobset=js, now=NOW, objects=[service()], options=Options(
        feature_gates=ON)))
    assert not [k for k in kinds(plan) if "Workload" in k or "PodGroup" in k]
    assert all(GT not in (j["metadata"].get("annotations") or {})
               for j in created_jobs(plan).values())
