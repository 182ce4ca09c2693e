"""spec.scheduling (upstream #1250, JobSetWorkloadAwareSchedulingAPI) under the shim: the shim,
a real decider and the fake cluster.

Upstream's controller (jobset_controller.go@4f0cbded) creates a v1beta1 Workload and its
PodGroups, waits to see them before it creates a Job, deletes them on suspend and when the
JobSet finishes, and patches a derived minCount in place. With JobSetGangOfGangs the Workload
holds a tree whose inner nodes are v1alpha3 CompositePodGroups. These tests hold the shim to
carrying that out: the objects of the version it watches, in order, none created twice, every
plan past the guard (the fixture fails a test on any refusal).
"""

from __future__ import annotations

from typing import Any

import pytest

from shim.config import gang_kinds
from shim.flags import parse_args
from tests.shim.helpers import NS, jobset, rjob, wait_for

SCHED = "scheduling.k8s.io"
V1BETA1 = f"{SCHED}/v1beta1"
WAS = {"JobSetWorkloadAwareSchedulingAPI": True}
TREE = {**WAS, "JobSetGangOfGangs": True}
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"

pytestmark = pytest.mark.waits


def scheduled(name: str, scheduling: dict[str, Any] | None = None) -> dict[str, Any]:
    body = jobset(name, rjob("leader", 1), rjob("workers", 2, parallelism=2))
    body["spec"]["scheduling"] = {} if scheduling is None else scheduling
    return body


def live(cluster, version: str, plural: str, prefix: str) -> list[dict[str, Any]]:
    rt = cluster.store.resource_for(SCHED, version, plural)
    items, _ = cluster.store.list(rt, NS)
    return [o for o in items if o["metadata"]["name"].startswith(prefix)
            and not o["metadata"].get("deletionTimestamp")]


def first_post(cluster, path: str) -> int:
    for i, rec in enumerate(cluster.kube.audit):
        if rec.method == "POST" and rec.path.endswith(path) and rec.code == 201:
            return i
    raise AssertionError(f"no create on {path}")


def set_suspend(cluster, name: str, value: bool) -> None:
    cluster.store.mutate(cluster.jobsets_rt, NS, name,
                         lambda js: js["spec"].__setitem__("suspend", value), False)


def test_with_the_gate_off_the_field_is_refused_and_nothing_is_made(cluster, shims):
    """validateScheduling: Forbidden while JobSetWorkloadAwareSchedulingAPI is off."""
    shims.start()
    cluster.create_jobset(scheduled("off"))
    wait_for(lambda: ("Warning", "InvalidJobSet") in cluster.events("off"), what="refusal")
    message = next(e["message"] for e in cluster.event_objects("off")
                   if e["reason"] == "InvalidJobSet")
    assert "spec.scheduling: Forbidden" in message
    assert "JobSetWorkloadAwareSchedulingAPI" in message
    assert cluster.live_jobs("off-") == []
    assert cluster.kube.writes(r"/(workloads|podgroups)$", "POST") == []


def test_the_workload_and_podgroup_come_first_and_jobs_follow_once_seen(cluster, shims):
    shim = shims.start(feature_gates=WAS, scheduling_api_version=V1BETA1)
    created = cluster.create_jobset(scheduled("sg"))
    wait_for(lambda: len(cluster.live_jobs("sg-")) == 3, what="jobs")
    [workload] = live(cluster, "v1beta1", "workloads", "sg")
    [podgroup] = live(cluster, "v1beta1", "podgroups", "sg")
    # The top-level gang (the webhook's default gang{}): one template, and the PodGroup is
    # named as the Workload; minCount is every pod (1 + 2*2).
    name = workload["metadata"]["name"]
    assert podgroup["metadata"]["name"] == name
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {
        "gang": {"minCount": 5}}
    assert podgroup["spec"]["workloadRef"] == {"workloadName": name, "templateName": name}
    for obj in (workload, podgroup):
        assert obj["metadata"]["labels"][JOBSET_NAME_LABEL] == "sg"
        ref = obj["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["uid"], ref["controller"]) == (
            "JobSet", created["metadata"]["uid"], True)
    assert first_post(cluster, "/workloads") < first_post(cluster, "/podgroups") < first_post(
        cluster, "/jobs")
    for job in cluster.live_jobs("sg-"):
        assert job["spec"]["template"]["spec"]["schedulingGroup"] == {"podGroupName": name}
    # Watched at the version it writes: nothing is created twice.
    assert {(i.resource.api_version, i.resource.kind) for i in shim.gang_informers} == {
        (V1BETA1, "Workload"), (V1BETA1, "PodGroup")}
    assert [r.code for r in cluster.kube.writes(r"/(workloads|podgroups)$", "POST")] == [201] * 2


def test_suspend_deletes_the_objects_and_resume_makes_new_ones(cluster, shims):
    shims.start(feature_gates=WAS, scheduling_api_version=V1BETA1)
    cluster.create_jobset(scheduled("sr"))
    wait_for(lambda: len(cluster.live_jobs("sr-")) == 3, what="jobs")
    before = {o["metadata"]["uid"] for o in live(cluster, "v1beta1", "workloads", "sr")
              + live(cluster, "v1beta1", "podgroups", "sr")}
    set_suspend(cluster, "sr", True)
    wait_for(lambda: not live(cluster, "v1beta1", "workloads", "sr")
             and not live(cluster, "v1beta1", "podgroups", "sr"), what="objects deleted")
    deletes = cluster.kube.writes(r"/(workloads|podgroups)/", "DELETE")
    assert {r.body["preconditions"]["uid"] for r in deletes} <= before
    set_suspend(cluster, "sr", False)
    wait_for(lambda: live(cluster, "v1beta1", "podgroups", "sr"), what="objects recreated")
    wait_for(lambda: all(not j["spec"]["suspend"] for j in cluster.live_jobs("sr-")),
             what="resumed")
    after = {o["metadata"]["uid"] for o in live(cluster, "v1beta1", "workloads", "sr")
             + live(cluster, "v1beta1", "podgroups", "sr")}
    assert len(after) == 2 and not after & before


def test_a_changed_min_count_is_patched_back_with_the_whole_template_list(cluster, shims):
    """A merge patch replaces a list: the Workload's templates go back as the server holds
    them, the count restored, and the guard lets exactly that through."""
    shims.start(feature_gates=WAS, scheduling_api_version=V1BETA1)
    cluster.create_jobset(scheduled("mc"))
    wait_for(lambda: len(cluster.live_jobs("mc-")) == 3, what="jobs")
    rt = cluster.store.resource_for(SCHED, "v1beta1", "workloads")
    [workload] = live(cluster, "v1beta1", "workloads", "mc")
    name, uid = workload["metadata"]["name"], workload["metadata"]["uid"]

    def shrink(obj: dict[str, Any]) -> None:
        obj["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 1

    cluster.store.mutate(rt, NS, name, shrink, False)
    wait_for(lambda: cluster.store.get(rt, NS, name)["spec"]["podGroupTemplates"][0][
        "schedulingPolicy"]["gang"]["minCount"] == 5, what="minCount restored")
    [patch] = cluster.kube.writes(rf"/workloads/{name}$", "PATCH")
    assert patch.body["metadata"]["uid"] == uid
    assert patch.body["spec"]["podGroupTemplates"][0]["name"] == name
    assert cluster.store.get(rt, NS, name)["metadata"]["uid"] == uid


def test_a_finished_jobset_deletes_its_objects(cluster, shims):
    shims.start(feature_gates=WAS, scheduling_api_version=V1BETA1)
    body = scheduled("fin")
    body["spec"]["replicatedJobs"] = [rjob("workers", 1)]
    cluster.create_jobset(body)
    wait_for(lambda: len(cluster.live_jobs("fin-")) == 1, what="job")
    cluster.sim.succeed(NS, "fin-workers-0")
    wait_for(lambda: cluster.condition("fin", "Completed"), what="completed")
    wait_for(lambda: not live(cluster, "v1beta1", "workloads", "fin")
             and not live(cluster, "v1beta1", "podgroups", "fin"), what="objects deleted")


def test_a_gang_of_gangs_makes_its_composite_pod_groups_root_first(cluster, shims):
    shim = shims.start(feature_gates=TREE, scheduling_api_version=V1BETA1)
    assert (f"{SCHED}/v1alpha3", "CompositePodGroup") in {
        (i.resource.api_version, i.resource.kind) for i in shim.gang_informers}
    cluster.create_jobset(scheduled("tr"))
    wait_for(lambda: len(cluster.live_jobs("tr-")) == 3, what="jobs")
    [workload] = live(cluster, "v1beta1", "workloads", "tr")
    composites = live(cluster, "v1alpha3", "compositepodgroups", "tr")
    leaves = live(cluster, "v1beta1", "podgroups", "tr")
    root = workload["metadata"]["name"]
    by_name = {c["metadata"]["name"]: c for c in composites}
    # The root (named as the Workload), one CompositePodGroup per ReplicatedJob under it, a
    # leaf PodGroup per Job under those.
    assert root in by_name and len(composites) == 3
    assert {c["spec"].get("parentCompositePodGroupName") for c in composites} == {None, root}
    assert len(leaves) == 3
    assert {p["spec"]["parentCompositePodGroupName"] for p in leaves} == set(by_name) - {root}
    # The plan lists the root first; the shim writes creates of one kind side by side, one
    # kind after the other: the Workload, the CompositePodGroups, then the PodGroups.
    posts = [r.path.rsplit("/", 1)[-1] for r in cluster.kube.writes(
        r"/(workloads|podgroups|compositepodgroups)$", "POST")]
    assert posts == ["workloads"] + ["compositepodgroups"] * 3 + ["podgroups"] * 3  # none twice
    for job in cluster.live_jobs("tr-"):
        group = job["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"]
        assert group in {p["metadata"]["name"] for p in leaves}

    set_suspend(cluster, "tr", True)
    wait_for(lambda: not live(cluster, "v1alpha3", "compositepodgroups", "tr")
             and not live(cluster, "v1beta1", "podgroups", "tr"), what="tree deleted")
    deleted = [r.path.split("/")[-2] for r in cluster.kube.writes(
        r"/(podgroups|compositepodgroups)/", "DELETE")]
    # Leaves first, then the CompositePodGroups (each kind side by side).
    assert deleted.index("compositepodgroups") > max(
        i for i, k in enumerate(deleted) if k == "podgroups")


def test_the_shim_watches_composite_pod_groups_only_with_the_gate_and_v1beta1():
    assert gang_kinds(V1BETA1, "kubernetes", gang_of_gangs=True)[-1] == (
        f"{SCHED}/v1alpha3", "CompositePodGroup")
    assert "CompositePodGroup" not in {k for _, k in gang_kinds(V1BETA1, "kubernetes")}
    cfg = parse_args(["--feature-gates", "JobSetGangOfGangs=true",
                      "--scheduling-api-version", V1BETA1], env={})
    assert (f"{SCHED}/v1alpha3", "CompositePodGroup") in cfg.gang_kinds
    with pytest.raises(SystemExit):
        parse_args(["--feature-gates", "JobSetGangOfGangs=true"], env={})
