"""Gang-scheduled JobSets end to end: the shim, a real decider and the fake cluster.

The decider plans the Workload/PodGroups; these tests hold the shim to carrying that plan out in
the cluster: the objects exist before the Jobs, the Jobs point at them, suspend/resume removes
and recreates them, a same-named object of someone else is never adopted, and the objects are
of the version/target the shim was started with and watches.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from decider.core.gang import names
from decider.core.scheduling_objects import CONFLICT_REQUEUE_SECONDS
from shim.apply import StaleObservation
from tests.shim.helpers import NS, jobset, rjob, wait_for

pytestmark = pytest.mark.waits

GANG_POLICY = "jobset-decider.io/gang-policy"
SCHED = "scheduling.k8s.io"


def gang_jobset(name: str, policy: str = "JobSetGangPerReplicatedJob", **kw: Any) -> dict:
    body = jobset(name, rjob("leader", 1), rjob("workers", 2, parallelism=2), **kw)
    body["metadata"]["annotations"] = {GANG_POLICY: policy}
    return body


def pg_name(js: str, rjob_name: str) -> str:
    """The PodGroup name of one replicated Job's gang (upstream naming, v1alpha2/v1beta1)."""
    return names.jobset_podgroup_name(js, names.jobset_rjob_template(NS, js, rjob_name))


def objects(cluster, group: str, version: str, plural: str, prefix: str) -> list[dict]:
    rt = cluster.store.resource_for(group, version, plural)
    items, _ = cluster.store.list(rt, NS)
    return [
        o
        for o in items
        if o["metadata"]["name"].startswith(prefix) and not o["metadata"].get("deletionTimestamp")
    ]


def gang_names(cluster, prefix: str, version: str = "v1alpha2") -> tuple[list[str], list[str]]:
    return (
        sorted(
            o["metadata"]["name"] for o in objects(cluster, SCHED, version, "workloads", prefix)
        ),
        sorted(
            o["metadata"]["name"] for o in objects(cluster, SCHED, version, "podgroups", prefix)
        ),
    )


def first_post(cluster, path: str) -> int:
    """Index in the audit log of the first successful create on a collection path."""
    for i, rec in enumerate(cluster.kube.audit):
        if rec.method == "POST" and rec.path.endswith(path) and rec.code == 201:
            return i
    raise AssertionError(f"no create on {path}")


def reconciled(shim, name: str) -> bool:
    """One pass now; False when it met a JobSet changed under it (the workers run too)."""
    try:
        shim.reconcile((NS, name))
    except StaleObservation:
        return False
    return True


def test_gang_objects_are_created_before_jobs_and_jobs_point_at_them(cluster, shims):
    shims.start()
    created = cluster.create_jobset(gang_jobset("g"))
    uid = created["metadata"]["uid"]
    wait_for(lambda: len(cluster.live_jobs("g-")) == 3, what="jobs")
    workload = names.jobset_workload_name(NS, "g")
    podgroups = sorted([pg_name("g", "leader"), pg_name("g", "workers")])
    assert gang_names(cluster, "g") == ([workload], podgroups)
    # Upstream's order: Workload, then PodGroups, then Jobs (pods must find their group).
    wl_at = first_post(cluster, "/workloads")
    pg_at = first_post(cluster, "/podgroups")
    job_at = first_post(cluster, "/jobs")
    assert wl_at < pg_at < job_at
    for obj in objects(cluster, SCHED, "v1alpha2", "podgroups", "g"):
        ref = obj["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["uid"], ref["controller"]) == ("JobSet", uid, True)
    for job in cluster.live_jobs("g-"):
        rjob_name = job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
        pod_spec = job["spec"]["template"]["spec"]
        assert pod_spec["schedulingGroup"] == {"podGroupName": pg_name("g", rjob_name)}
        template = job["metadata"]["annotations"]["scheduling.k8s.io/group-template-name"]
        assert pg_name("g", rjob_name) == f"g-{template}"
    # The shim sees what it created: no create was ever repeated.
    assert [r.code for r in cluster.kube.writes(r"/(workloads|podgroups)$", "POST")] == [201] * 3


def test_suspend_deletes_gang_objects_and_resume_recreates_them(cluster, shims):
    shims.start()
    cluster.create_jobset(gang_jobset("sg"))
    wait_for(lambda: len(cluster.live_jobs("sg-")) == 3, what="jobs")
    before = {
        o["metadata"]["name"]: o["metadata"]["uid"]
        for o in objects(cluster, SCHED, "v1alpha2", "workloads", "sg")
        + objects(cluster, SCHED, "v1alpha2", "podgroups", "sg")
    }
    assert len(before) == 3

    def set_suspend(value: bool) -> None:
        cluster.store.mutate(
            cluster.jobsets_rt, NS, "sg", lambda js: js["spec"].__setitem__("suspend", value), False
        )

    set_suspend(True)
    wait_for(lambda: gang_names(cluster, "sg") == ([], []), what="gang objects deleted")
    wait_for(lambda: all(j["spec"]["suspend"] for j in cluster.live_jobs("sg-")), what="suspended")
    # Deletes carry the uid precondition; PodGroups go before the Workload.
    deletes = cluster.kube.writes(r"/(workloads|podgroups)/", "DELETE")
    assert all(r.body["preconditions"]["uid"] in before.values() for r in deletes)
    kinds = [r.path.split("/")[-2] for r in deletes]
    assert kinds.index("workloads") == len(kinds) - 1

    set_suspend(False)
    wait_for(lambda: len(gang_names(cluster, "sg")[1]) == 2, what="gang objects recreated")
    wait_for(
        lambda: all(not j["spec"]["suspend"] for j in cluster.live_jobs("sg-")), what="resumed"
    )
    after = {
        o["metadata"]["name"]: o["metadata"]["uid"]
        for o in objects(cluster, SCHED, "v1alpha2", "workloads", "sg")
        + objects(cluster, SCHED, "v1alpha2", "podgroups", "sg")
    }
    # Same names, new objects.
    assert sorted(after) == sorted(before)
    assert not set(after.values()) & set(before.values())


def test_foreign_podgroup_with_the_same_name_is_never_adopted(cluster, shims):
    pg_rt = cluster.store.resource_for(SCHED, "v1alpha2", "podgroups")
    foreign_name = pg_name("fx", "workers")
    foreign = cluster.store.create(
        pg_rt,
        NS,
        {
            "apiVersion": f"{SCHED}/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": foreign_name, "labels": {"owner": "someone-else"}},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 7}}},
        },
    )
    started = time.monotonic()
    shim = shims.start()
    cluster.create_jobset(gang_jobset("fx"))
    wait_for(
        lambda: ("Warning", "GangObjectConflict") in cluster.events("fx"), what="conflict event"
    )
    # Give the shim more passes to do something wrong.
    wait_for(lambda: shim.stats.reconciles >= 2, what="passes")
    assert cluster.live_jobs("fx-") == []
    assert gang_names(cluster, "fx") == ([], [foreign_name])
    stored = cluster.store.get(pg_rt, NS, foreign_name)
    assert stored["metadata"]["uid"] == foreign["metadata"]["uid"]
    assert stored["metadata"].get("ownerReferences") is None
    assert stored["spec"] == foreign["spec"]
    assert cluster.kube.writes(rf"/podgroups/{foreign_name}$") == []
    # The decider saw the foreign object (observe sends same-named gang objects whoever owns
    # them) and refused up front: not even the Workload was attempted.
    assert cluster.kube.writes(r"/(workloads|podgroups)$", "POST") == []
    events, _ = cluster.store.list(cluster.events_rt, NS)
    message = next(e["message"] for e in events if e["reason"] == "GangObjectConflict")
    assert foreign_name in message

    # Once the name is free, the JobSet goes ahead without waiting for the decider's requeue:
    # the shim watches every PodGroup and wakes the JobSet that wanted the name.
    cluster.store.delete(pg_rt, NS, foreign_name, None)
    # Before the conflict's requeue could have come (it was asked after `started`): however
    # long this machine takes, the pass that creates the Jobs is the one the delete woke.
    wait_for(lambda: len(cluster.live_jobs("fx-")) == 3,
             timeout=started + CONFLICT_REQUEUE_SECONDS - 1 - time.monotonic(),
             what="jobs after removal, before the decider's requeue")
    owned = objects(cluster, SCHED, "v1alpha2", "podgroups", "fx")
    assert {o["metadata"]["ownerReferences"][0]["kind"] for o in owned} == {"JobSet"}


def test_min_count_drift_is_patched_back_in_place(cluster, shims):
    shims.start()
    cluster.create_jobset(gang_jobset("pp"))
    wait_for(lambda: len(cluster.live_jobs("pp-")) == 3, what="jobs")
    pg_rt = cluster.store.resource_for(SCHED, "v1alpha2", "podgroups")
    name = pg_name("pp", "workers")
    uid = cluster.store.get(pg_rt, NS, name)["metadata"]["uid"]

    def set_min(obj: dict) -> None:
        obj["spec"]["schedulingPolicy"]["gang"]["minCount"] = 1

    cluster.store.mutate(pg_rt, NS, name, set_min, False)
    wait_for(
        lambda: (
            cluster.store.get(pg_rt, NS, name)["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4
        ),
        what="minCount restored",
    )
    patches = cluster.kube.writes(rf"/podgroups/{name}$", "PATCH")
    assert [r.code for r in patches] == [200]
    # A merge patch with the uid precondition, on the same object (not a delete + create).
    assert patches[0].body["metadata"]["uid"] == uid
    assert cluster.store.get(pg_rt, NS, name)["metadata"]["uid"] == uid
    assert cluster.kube.writes(rf"/podgroups/{name}$", "DELETE") == []


@pytest.mark.parametrize(
    ("version", "target", "group", "gv", "join"),
    [
        (
            f"{SCHED}/v1beta1",
            "kubernetes",
            SCHED,
            "v1beta1",
            lambda t: t["spec"]["schedulingGroup"]["podGroupName"],
        ),
        (
            f"{SCHED}/v1alpha2",
            "scheduler-plugins",
            "scheduling.x-k8s.io",
            "v1alpha1",
            lambda t: t["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"],
        ),
        (
            f"{SCHED}/v1alpha2",
            "volcano",
            "scheduling.volcano.sh",
            "v1beta1",
            lambda t: t["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
        ),
    ],
)
def test_gang_objects_follow_the_version_and_target(
    cluster, shims, version, target, group, gv, join
):
    shim = shims.start(scheduling_api_version=version, gang_target=target)
    assert {(i.resource.api_version, i.resource.kind) for i in shim.gang_informers} == set(
        shim.config.gang_kinds
    )
    cluster.create_jobset(gang_jobset("t"))
    wait_for(lambda: len(cluster.live_jobs("t-")) == 3, what="jobs")
    podgroups = objects(cluster, group, gv, "podgroups", "t")
    assert sorted(o["metadata"]["name"] for o in podgroups) == sorted(
        [pg_name("t", "leader"), pg_name("t", "workers")]
    )
    if target != "kubernetes":
        assert {o["spec"]["minMember"] for o in podgroups} == {1, 4}
    # Nothing of the other generations/targets was written.
    others = [
        r.path
        for r in cluster.kube.writes("/(workloads|podgroups)")
        if f"/{group}/{gv}/" not in r.path
    ]
    assert others == []
    for job in cluster.live_jobs("t-"):
        rjob_name = job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
        assert join(job["spec"]["template"]) == pg_name("t", rjob_name)
    # Once the cache holds them, a pass plans no gang object again: the shim watches the
    # target's kinds (a kind it did not watch would be created again on every pass).
    for o in podgroups:
        wait_for(
            lambda o=o: any(inf.get(NS, o["metadata"]["name"]) for inf in shim.gang_informers),
            what="podgroup in the cache",
        )
    posts = len(cluster.kube.writes("/(workloads|podgroups)$", "POST"))
    wait_for(lambda: reconciled(shim, "t"), what="a pass on a fresh observation")
    assert len(cluster.kube.writes("/(workloads|podgroups)$", "POST")) == posts
