"""Decide's gang step: Workload/PodGroups around the child Jobs of a gang-scheduled JobSet.

One test per row of the lifecycle (KEP-969 WAS integration): create before the Jobs, the pod
template reference on every created Job, delete on suspend and finish, recreate on resume, keep
across restarts, minCount in place, never adopt a foreign object; and no change at all for a
JobSet that does not ask for gang scheduling.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from decider.core import constants as c
from decider.core import decide as decide_module
from decider.core import scheduling_objects
from decider.core.decide import decide
from decider.core.errors import InvalidInput
from decider.core.gang import API_VERSIONS, jobset_gang
from decider.core.model import Observed, ObservedJob, ObservedObject, Options, Plan
from support.builders import NOW, UID, job, jobset, rjob, service, types

GANG = "jobset-decider.io/gang-policy"
GROUP_TEMPLATE = "scheduling.k8s.io/group-template-name"
GANG_ACTIONS = {"CreateWorkload", "CreatePodGroup", "DeleteWorkload", "DeletePodGroup",
                "PatchWorkload", "PatchPodGroup"}
COMPLETED = {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
             "message": "jobset completed successfully",
             "lastTransitionTime": "2026-01-01T11:00:00Z"}


def gang_jobset(mode: str | None = "JobSetAsGang", *, suspend: bool = False,
                parallelism: int = 2, scheduling: dict[str, Any] | None = None,
                **spec: Any) -> dict[str, Any]:
    js = jobset(rjob("leader", 1, parallelism=1, completions=1),
                rjob("workers", 2, parallelism=parallelism, completions=parallelism), **spec)
    if mode is not None:
        js["metadata"]["annotations"] = {GANG: mode}
    if scheduling is not None:
        js["spec"]["scheduling"] = scheduling
    if suspend:
        js["spec"]["suspend"] = True
    return js


def run(js: dict[str, Any], jobs: list[ObservedJob] = (), objects: list[ObservedObject] = (),
        *, api_version: str = "", target: str = "",
        gates: dict[str, bool] | None = None) -> Plan:
    return decide(Observed(jobset=copy.deepcopy(js), now=NOW, jobs=list(jobs),
                           objects=list(objects),
                           options=Options(feature_gates=gates or {},
                                           gang_api_version=api_version, gang_target=target)))


def created(plan: Plan, type_: str) -> list[dict[str, Any]]:
    return [a.object for a in plan.actions if a.type == type_ and a.object is not None]


def observed_from(plan: Plan, owner: str = UID) -> list[ObservedObject]:
    """What the API server serves after the plan's gang creates, each with a uid."""
    out = []
    for a in plan.actions:
        if a.type in ("CreateWorkload", "CreatePodGroup"):
            obj = copy.deepcopy(a.object)
            obj["metadata"]["uid"] = f"uid-{a.name}"
            for ref in obj["metadata"].get("ownerReferences", []):
                if ref.get("controller"):
                    ref["uid"] = owner
            out.append(ObservedObject(api_version=obj["apiVersion"], kind=obj["kind"],
                                      name=a.name, uid=f"uid-{a.name}", controller_uid=owner,
                                      obj=obj))
    return out


def contains(whole: Any, part: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(contains(whole.get(k), v) for k, v in part.items())
    return whole == part


def child_jobs(js_name: str = "js", suspend: bool = False) -> list[ObservedJob]:
    return [job("leader", 0, js_name=js_name, suspend=suspend),
            job("workers", 0, js_name=js_name, suspend=suspend, parallelism=2, completions=2),
            job("workers", 1, js_name=js_name, suspend=suspend, parallelism=2, completions=2)]


# --- creation order and the pod template reference -------------------------------------------

def test_workload_then_podgroups_after_the_service_and_before_any_job() -> None:
    plan = run(gang_jobset())
    order = [t for t, _ in types(plan)]
    assert order[:4] == ["CreateService", "CreateWorkload", "CreatePodGroup", "CreateJob"]
    assert order.count("CreateWorkload") == 1
    last_gang = max(i for i, t in enumerate(order) if t in GANG_ACTIONS)
    first_job = order.index("CreateJob")
    assert last_gang < first_job
    assert [n for t, n in types(plan) if t == "CreateJob"] == [
        "js-leader-0", "js-workers-0", "js-workers-1"]
    workload = created(plan, "CreateWorkload")[0]
    assert workload["apiVersion"] == "scheduling.k8s.io/v1beta1"  # the default: newest
    assert workload["metadata"]["ownerReferences"][0]["uid"] == UID


def test_every_created_job_points_at_its_podgroup() -> None:
    plan = run(gang_jobset())
    podgroups = [pg["metadata"]["name"] for pg in created(plan, "CreatePodGroup")]
    assert len(podgroups) == 1  # JobSetAsGang: one gang of 1 + 2x2 pods
    assert created(plan, "CreatePodGroup")[0]["spec"]["schedulingPolicy"]["gang"][
        "minCount"] == 5
    for j in created(plan, "CreateJob"):
        pod_spec = j["spec"]["template"]["spec"]
        assert pod_spec["schedulingGroup"] == {"podGroupName": podgroups[0]}
        assert pod_spec["containers"][0]["name"] == "main"  # the template is otherwise kept
        assert GROUP_TEMPLATE in j["metadata"]["annotations"]
        # The upstream child-Job annotations are still there.
        assert j["metadata"]["annotations"][c.REPLICATED_JOB_NAME] in ("leader", "workers")


def test_gang_per_replicated_job_links_each_job_to_its_own_podgroup() -> None:
    plan = run(gang_jobset("JobSetGangPerReplicatedJob"))
    pgs = {pg["metadata"]["name"]: pg for pg in created(plan, "CreatePodGroup")}
    assert len(pgs) == 2
    for j in created(plan, "CreateJob"):
        name = j["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"]
        rjob_name = j["metadata"]["labels"][c.REPLICATED_JOB_NAME]
        assert name in pgs
        expected = 1 if rjob_name == "leader" else 4
        assert pgs[name]["spec"]["schedulingPolicy"]["gang"]["minCount"] == expected


@pytest.mark.parametrize("api_version,target", [
    *((v, "kubernetes") for v in API_VERSIONS),
    ("scheduling.k8s.io/v1beta1", "scheduler-plugins"),
    ("scheduling.k8s.io/v1beta1", "volcano"),
])
def test_each_generation_and_target_links_jobs_as_the_core_plans(api_version: str,
                                                                   target: str) -> None:
    js = gang_jobset("JobSetGangPerReplicatedJob")
    plan = run(js, api_version=api_version, target=target)
    expected = jobset_gang(js, api_version, [], target)
    assert expected is not None and expected.objects
    assert [a.object for a in plan.actions if a.type in ("CreateWorkload", "CreatePodGroup")] \
        == expected.objects
    jobs = {j["metadata"]["name"]: j for j in created(plan, "CreateJob")}
    assert set(jobs) == set(expected.pod_template_patches)
    for name, patch in expected.pod_template_patches.items():
        assert contains(jobs[name]["spec"]["template"], patch), name
    for name, wanted in expected.job_annotations.items():
        assert contains(jobs[name]["metadata"]["annotations"], wanted)
    assert {o["apiVersion"] for o in expected.objects} <= {
        api_version, "scheduling.x-k8s.io/v1alpha1", "scheduling.volcano.sh/v1beta1"}


def test_upstream_spec_scheduling_needs_its_gate() -> None:
    """integration (feature gate disabled): should skip scheduling reconciliation even if
    scheduling field is set: Jobs as without it, no object, no annotation."""
    plan = run(gang_jobset(None, scheduling={}), api_version="scheduling.k8s.io/v1alpha2")
    assert [t for t, _ in types(plan)][1:4] == ["CreateJob"] * 3
    assert not any(GROUP_TEMPLATE in j["metadata"].get("annotations", {})
                   for j in created(plan, "CreateJob"))
    assert any("JobSetWorkloadAwareSchedulingAPI gate is off" in s for s in plan.explanation)
    plan = run(gang_jobset(None, scheduling={}), api_version="scheduling.k8s.io/v1alpha2",
               gates={"JobSetWorkloadAwareSchedulingAPI": True})
    assert [t for t, _ in types(plan)][1:3] == ["CreateWorkload", "CreatePodGroup"]
    assert created(plan, "CreateWorkload")[0]["apiVersion"] == "scheduling.k8s.io/v1alpha2"


# --- suspend, resume, restart, finish ------------------------------------------------------

def test_created_suspended_makes_no_gang_objects_but_jobs_carry_the_reference() -> None:
    plan = run(gang_jobset(suspend=True))
    assert not [t for t, _ in types(plan) if t in GANG_ACTIONS]
    jobs = created(plan, "CreateJob")
    assert len(jobs) == 3
    for j in jobs:
        assert j["spec"]["suspend"] is True
        # A pod template cannot gain the reference later: it is set at creation.
        assert "podGroupName" in j["spec"]["template"]["spec"]["schedulingGroup"]


def test_suspend_deletes_podgroups_then_the_workload_with_uid_preconditions() -> None:
    running = gang_jobset("JobSetGangPerReplicatedJob")
    objects = observed_from(run(running))
    plan = run(gang_jobset("JobSetGangPerReplicatedJob", suspend=True), child_jobs(), objects)
    gang = [a for a in plan.actions if a.type in GANG_ACTIONS]
    assert [a.type for a in gang] == ["DeletePodGroup", "DeletePodGroup", "DeleteWorkload"]
    by_name = {o.name: o for o in objects}
    for a in gang:
        assert a.uid == by_name[a.name].uid
        assert (a.api_version, a.kind) == (by_name[a.name].api_version, by_name[a.name].kind)
    assert [n for t, n in types(plan) if t == "SuspendJob"] == [j.name for j in child_jobs()]
    assert not created(plan, "CreateJob")


def test_resume_recreates_the_same_objects_before_resuming_the_jobs() -> None:
    first = run(gang_jobset())
    names = [(a.type, a.name) for a in first.actions if a.type in GANG_ACTIONS]
    plan = run(gang_jobset(), child_jobs(suspend=True))
    order = types(plan)
    assert [x for x in order if x[0] in GANG_ACTIONS] == names
    resumes = [i for i, (t, _) in enumerate(order) if t == "ResumeJob"]
    assert len(resumes) == 3
    assert max(i for i, (t, _) in enumerate(order) if t in GANG_ACTIONS) < min(resumes)


def test_restart_keeps_the_objects_and_recreated_jobs_point_at_them() -> None:
    js = gang_jobset(failurePolicy={"maxRestarts": 3})
    objects = observed_from(run(js))
    jobs = child_jobs()
    jobs[1] = job("workers", 0, state="failed", parallelism=2, completions=2)
    failing = run(js, jobs, objects)
    assert failing.status["restarts"] == 1
    assert not [t for t, _ in types(failing) if t in GANG_ACTIONS]

    js["status"] = copy.deepcopy(failing.status)
    # The previous attempt's Jobs are deleted; the objects stay.
    cleanup = run(js, jobs, objects)
    assert {t for t, _ in types(cleanup)} & GANG_ACTIONS == set()
    assert len([t for t, _ in types(cleanup) if t == "DeleteJob"]) == 3

    recreate = run(js, [], objects)
    assert {t for t, _ in types(recreate)} & GANG_ACTIONS == set()
    podgroup = next(o.name for o in objects if o.kind == "PodGroup")
    jobs_created = created(recreate, "CreateJob")
    assert len(jobs_created) == 3
    for j in jobs_created:
        assert j["metadata"]["labels"][c.RESTART_ATTEMPT] == "1"
        assert j["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"] == podgroup
    assert any("exists and is controlled by the JobSet: kept" in s
               for s in recreate.explanation)


def test_objects_that_exist_are_kept_on_a_steady_pass() -> None:
    js = gang_jobset()
    objects = observed_from(run(js))
    plan = run(js, child_jobs(), [service(), *objects])
    assert not [t for t, _ in types(plan) if t in GANG_ACTIONS]
    assert not created(plan, "CreateJob")


def test_finished_jobset_deletes_its_objects() -> None:
    js = gang_jobset()
    objects = observed_from(run(js))
    js["status"] = {"conditions": [COMPLETED], "terminalState": "Completed"}
    plan = run(js, [], objects)
    assert [t for t, _ in types(plan) if t in GANG_ACTIONS] == ["DeletePodGroup",
                                                                 "DeleteWorkload"]


def test_elastic_scale_patches_min_count_in_place() -> None:
    objects = observed_from(run(gang_jobset(parallelism=2)))
    plan = run(gang_jobset(parallelism=3), [], objects,
               gates={c.GATE_ELASTIC_JOBSET: True})
    patches = [a for a in plan.actions if a.type in ("PatchWorkload", "PatchPodGroup")]
    assert {a.type for a in patches} == {"PatchWorkload", "PatchPodGroup"}
    for a in patches:
        assert a.uid == f"uid-{a.name}"
    pg = next(a for a in patches if a.type == "PatchPodGroup")
    assert pg.patch == {"spec": {"schedulingPolicy": {"gang": {"minCount": 7}}}}
    assert not [t for t, _ in types(plan) if t.startswith(("Create", "Delete")) and
                t in GANG_ACTIONS]


def test_drift_of_an_immutable_field_deletes_for_recreation() -> None:
    objects = observed_from(run(gang_jobset()))
    pg = next(o for o in objects if o.kind == "PodGroup")
    pg.obj["spec"]["schedulingPolicy"] = {"basic": {}}
    plan = run(gang_jobset(), [], objects)
    gang = [t for t, _ in types(plan) if t in GANG_ACTIONS]
    assert gang == ["DeletePodGroup", "DeleteWorkload"]


# --- ownership ---------------------------------------------------------------------------

def test_a_foreign_object_is_not_adopted_and_no_job_is_created() -> None:
    objects = observed_from(run(gang_jobset()), owner="someone-else")
    plan = run(gang_jobset(), [], [service(), *objects])
    assert not [t for t, _ in types(plan) if t in GANG_ACTIONS]
    assert not created(plan, "CreateJob")
    events = [a for a in plan.actions if a.type == "Event"]
    assert len(events) == 1
    assert (events[0].event.type, events[0].event.reason) == ("Warning", "GangObjectConflict")
    # objects[0] is the Service; the Workload is objects[1].
    assert events[0].event.message.startswith(
        "objects[1].object_json.metadata.ownerReferences: Workload ")
    assert "refusing to adopt it" in events[0].event.message
    assert (events[0].api_version, events[0].kind, events[0].name) == (c.API_VERSION, c.KIND,
                                                                       "js")
    assert plan.requeue_after_seconds == scheduling_objects.CONFLICT_REQUEUE_SECONDS
    assert plan.requeue_after == timedelta(seconds=scheduling_objects.CONFLICT_REQUEUE_SECONDS)
    assert any("gang scheduling refused" in s for s in plan.explanation)


def test_a_foreign_object_blocks_resume_but_not_suspend() -> None:
    objects = observed_from(run(gang_jobset()), owner="someone-else")
    resumed = run(gang_jobset(), child_jobs(suspend=True), objects)
    assert not [t for t, _ in types(resumed) if t == "ResumeJob"]
    # Suspending is always safe, and a suspended JobSet needs no objects: no conflict at all.
    suspended = run(gang_jobset(suspend=True), child_jobs(), objects)
    assert len([t for t, _ in types(suspended) if t == "SuspendJob"]) == 3
    assert not [a for a in suspended.actions if a.event and a.event.type == "Warning"]
    # The foreign objects are not ours to delete.
    assert not [t for t, _ in types(suspended) if t in GANG_ACTIONS]


def test_an_observed_gang_object_needs_its_content() -> None:
    objects = observed_from(run(gang_jobset()))
    objects[0].obj = None
    with pytest.raises(InvalidInput) as err:
        run(gang_jobset(), [], objects)
    assert err.value.errors[0].field == "objects[0].object_json"


# --- JobSets without gang config -----------------------------------------------------------

NON_GANG = {
    "fresh": (jobset(rjob("leader"), rjob("workers", 3)), []),
    "suspended": (jobset(rjob("workers", 2), suspend=True), []),
    "running": (jobset(rjob("workers", 2)), [job("workers", 0), job("workers", 1)]),
    "resume": (jobset(rjob("workers", 2)), [job("workers", 0, suspend=True),
                                            job("workers", 1, suspend=True)]),
    "failed": (jobset(rjob("workers", 2), failurePolicy={"maxRestarts": 1}),
               [job("workers", 0, state="failed"), job("workers", 1)]),
    "finished": (jobset(rjob("workers", 1), status={"conditions": [COMPLETED]}),
                 [job("workers", 0)]),
}


@pytest.mark.parametrize("case", sorted(NON_GANG))
def test_jobsets_without_gang_config_get_the_plan_they_always_got(
        case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    js, jobs = NON_GANG[case]
    # Workloads/PodGroups around (even summaries without content) and gang options are ignored.
    stray = [ObservedObject(api_version="scheduling.k8s.io/v1beta1", kind="Workload",
                            name="js-1234", controller_uid=UID),
             ObservedObject(api_version="scheduling.k8s.io/v1beta1", kind="PodGroup",
                            name="js", controller_uid=UID)]
    with_gang_step = run(js, jobs, stray, api_version="scheduling.k8s.io/v1alpha1",
                         target="volcano")
    monkeypatch.setattr(decide_module.scheduling_objects, "reconcile",
                        lambda st: scheduling_objects.GangStep())
    monkeypatch.setattr(decide_module.scheduling_objects, "link_jobs", lambda st, step: None)
    without = run(js, jobs, stray)
    assert with_gang_step == without
    assert not [t for t, _ in types(with_gang_step) if t in GANG_ACTIONS]


def test_merge_patch_is_rfc7386() -> None:
    target = {"a": 1, "b": {"c": 2, "d": 3}, "e": [1]}
    out = scheduling_objects.merge_patch(target, {"b": {"c": None, "x": [1, 2]}, "e": {"f": 1},
                                              "g": None})
    assert out == {"a": 1, "b": {"d": 3, "x": [1, 2]}, "e": {"f": 1}}


def test_a_spec_with_thousands_of_errors_names_ten_in_its_event_and_explanation() -> None:
    """30 entries each targeting the same 30 replicated Jobs: 870 errors. Listed whole (500 x
    500: 249,500) they made a 28 MB event and a 28 MB sentence, and a slightly larger JobSet a
    plan over the message limit, never decided (found probing bench/fuzz_rpc.py's 'many
    entries and targets'). The event and the explanation name the first ten and count the
    rest; the shim's recorder cuts an event at 1 kB anyway."""
    names = [f"r{i}" for i in range(30)]
    js = jobset(*(rjob(n, 1) for n in names))
    js["spec"]["scheduling"] = {"replicatedJobs": [{"targetReplicatedJobs": names}] * 30}
    plan = run(js, gates={c.GATE_WORKLOAD_AWARE_SCHEDULING: True})
    (event,) = [a.event for a in plan.actions if a.type == "Event"]
    assert event is not None and event.reason == "SchedulingObjectsReconcileFailed"
    assert event.message.count("is targeted by more than one replicatedJobs entry") <= 10
    assert event.message.endswith(" more"), event.message[-200:]
    assert len(event.message) < 4000
    assert sum(len(sentence) for sentence in plan.explanation) < 8000
