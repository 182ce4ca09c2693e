"""Gang scheduling on a real control plane: the objects `decider gang` plans, written by the
shim (or by hand for the CompositePodGroup tree), admitted by a real API server (its CEL
rules and defaulting), and the real kube-scheduler holding a gang back while it does not fit
and binding all of it once nodes are added; beside the Job controller's own Workload for a
gang Job (WorkloadWithJob). On 1.37 (`scheduling.k8s.io/v1beta1`, `v1alpha3`) and 1.36
(`v1alpha2`), each on a control plane of its own with the gang gates on (gang_support.py).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from tests.e2e.framework import (
    EXIT_CODE,
    conditions,
    eventually,
    has_condition,
    jobset,
)
from tests.e2e.gang_support import (
    FLAT_GATES,
    TREE_GATES,
    add_pool_nodes,
    decider_gang,
    gang_control_plane,
    namespace,
    pod_bound,
    pool_pod_spec,
    scheduled_at,
    without_server_fields,
)

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

# The condition the scheduler sets on a PodGroup it tried, per generation (k8s.io/api
# scheduling/v1beta1 and v1alpha2 types of each release).
SCHEDULED_CONDITION = {"scheduling.k8s.io/v1beta1": "PodGroupInitiallyScheduled",
                       "scheduling.k8s.io/v1alpha2": "PodGroupScheduled"}
# What the API server fills in on create (its defaulting), per generation and kind, seen on
# the releases' API servers: the rest of each stored spec is exactly what was planned. The
# decider leaves these to the server (not drift), so the shim must not replace the objects.
SERVER_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    ("scheduling.k8s.io/v1beta1", "PodGroup"): {"disruptionMode": {"single": {}},
                                                "priority": 0},
    ("scheduling.k8s.io/v1alpha2", "PodGroup"): {"disruptionMode": "Pod"},
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"): {"disruptionMode": {"single": {}},
                                                          "priority": 0},
}
RESOURCE = {"Workload": "workloads", "PodGroup": "podgroups",
            "CompositePodGroup": "compositepodgroups"}


@pytest.fixture(scope="module", params=[
    pytest.param(("v1.37.2", FLAT_GATES), id="v1.37.2"),
    pytest.param(("v1.36.3", FLAT_GATES), id="v1.36.3"),
    # The shim and webhook with JobSetGangOfGangs: spec.scheduling compiles to a tree.
    pytest.param(("v1.37.2", TREE_GATES), id="v1.37.2-tree")])
def gang_cp(request: pytest.FixtureRequest):
    version, gates = request.param
    with gang_control_plane(version, gates) as gc:
        yield gc


def _tree(gc) -> bool:
    return "JobSetGangOfGangs" in gc.gates


def _rjob(pool: str, name: str, replicas: int, parallelism: int) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "parallelism": parallelism, "completions": parallelism, "backoffLimit": 0,
        "completionMode": "Indexed",
        "template": {"spec": pool_pod_spec(pool, name, "1")}}}}


def _stored(gc, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj["metadata"]
    return gc.scheduling(RESOURCE[obj["kind"]], meta["namespace"], meta["name"],
                         version=obj["apiVersion"])


def _assert_stored_as_planned(gc, planned: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each planned object is stored with the spec, labels and owners `decider gang` gave it:
    the API server admitted it and changed nothing. The stored objects."""
    stored = []
    for obj in planned:
        got = eventually(f"{obj['kind']} {obj['metadata']['name']}", lambda o=obj: _stored(gc, o),
                         bool)
        want = {**obj["spec"], **SERVER_DEFAULTS.get((obj["apiVersion"], obj["kind"]), {})}
        assert got["spec"] == want, (obj["kind"], got["spec"], obj["spec"])
        assert without_server_fields(got["metadata"]) == obj["metadata"], got["metadata"]
        stored.append(got)
    return stored


def _pods(gc, ns: str, selector: str) -> list[dict[str, Any]]:
    return gc.kube.items(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)


def _since(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _bound(pods: list[dict[str, Any]]) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}


def test_spec_scheduling_gang_is_held_until_it_fits_then_bound_together(gang_cp, tmp_path):
    gc, kube = gang_cp, gang_cp.kube
    with namespace(gc, "gang-held") as ns:
        # One node, 2 cpu: the driver (Basic, 1 cpu) fits; the 4 workers (one gang, 1 cpu
        # each) do not, so a scheduler without gangs would bind one of them beside it.
        add_pool_nodes(gc, ns, 1, cpu="2")
        manifest = jobset(ns, "held", [_rjob(ns, "driver", 1, 1), _rjob(ns, "workers", 2, 2)],
                          scheduling={"replicatedJobs": [
                              {"targetReplicatedJobs": ["driver"],
                               "schedulingPolicy": {"basic": {}}},
                              {"targetReplicatedJobs": ["workers"],
                               "schedulingPolicy": {"gang": {}}}]})
        created = kube.create_jobset(manifest)
        plan = decider_gang([created], tmp_path, gc.api_version, gates=gc.gates)
        planned = plan["objects"]
        # Flat: one PodGroup per entry. Tree: a root and a CompositePodGroup per entry, a leaf
        # PodGroup per Job.
        assert [o["kind"] for o in planned] == (
            ["Workload"] + ["CompositePodGroup"] * 3 + ["PodGroup"] * 3 if _tree(gc)
            else ["Workload", "PodGroup", "PodGroup"]), plan

        # The readiness gate: no Job until the Workload and every PodGroup are live. Watched
        # from the JobSet's creation: no observation has a Job without all of them.
        seen: list[tuple[int, int]] = []

        def observe() -> tuple[int, int]:
            have = sum(_stored(gc, o) is not None for o in planned)
            jobs = len(kube.jobs(ns, "held"))
            seen.append((have, jobs))
            return have, jobs
        eventually("3 Jobs", observe, lambda hj: hj[1] == 3, interval=0.2)
        assert all(have == len(planned) for have, jobs in seen if jobs), seen
        stored = _assert_stored_as_planned(gc, planned)
        jobs = kube.jobs(ns, "held")
        first_job = min(_since(j["metadata"]["creationTimestamp"]) for j in jobs)
        assert max(_since(o["metadata"]["creationTimestamp"]) for o in stored) <= first_job

        # Each Job's pods point at the PodGroup decider gang names, and nothing else is
        # planned by anyone: the Job controller leaves the JobSet's Jobs to it.
        for job in jobs:
            patch = plan["podTemplatePatches"][job["metadata"]["name"]]
            for key, value in patch["spec"].items():
                assert job["spec"]["template"]["spec"][key] == value, (key, job["spec"])
        names = {o["metadata"]["name"] for o in planned}
        for kind in ("workloads", "podgroups", "compositepodgroups")[:3 if _tree(gc) else 2]:
            version = "scheduling.k8s.io/v1alpha3" if kind == "compositepodgroups" else None
            assert {o["metadata"]["name"] for o in gc.scheduling(kind, ns, version=version)} \
                <= names, kind

        # Flat: the driver is Basic on its own and is bound beside the held workers. Tree: the
        # root CompositePodGroup is a gang of both groups, so the driver is held with them.
        tree = _tree(gc)
        driver_sel = "jobset.sigs.k8s.io/replicatedjob-name=driver"
        if not tree:
            driver = eventually("the driver pod bound and Running", lambda: _pods(
                gc, ns, driver_sel), lambda ps: len(ps) == 1 and ps[0]["status"].get(
                "phase") == "Running", show=_bound)
            assert pod_bound(driver[0])
        gangs = [o for o in stored if o["kind"] == "PodGroup"
                 and "gang" in o["spec"]["schedulingPolicy"]]
        # The workers: one PodGroup of 4 (flat), or a PodGroup of 2 per Job (tree).
        assert sorted(g["spec"]["schedulingPolicy"]["gang"]["minCount"] for g in gangs) == (
            [2, 2] if tree else [4])
        held_sel = "jobset.sigs.k8s.io/jobset-name=held" if tree else \
            "jobset.sigs.k8s.io/replicatedjob-name=workers"
        held_count = 5 if tree else 4

        def state() -> dict[str, Any]:
            return {o["metadata"]["name"]: conditions(_stored(gc, o)) for o in stored}

        def unschedulable(pod: dict[str, Any]) -> bool:
            return any(c["type"] == "PodScheduled" and c["status"] == "False"
                       and c.get("reason") == "Unschedulable"
                       for c in (pod.get("status") or {}).get("conditions") or [])
        kind = SCHEDULED_CONDITION[gc.api_version]
        # The scheduler tried every pod of the gang and held it: none bound.
        held = eventually(f"{held_count} pods tried and held Unschedulable", lambda: _pods(
            gc, ns, held_sel), lambda ps: len(ps) == held_count and all(
            unschedulable(p) for p in ps), show=_bound)
        assert not any(pod_bound(p) for p in held), _bound(held)
        # ... and says so on the held PodGroups (in the tree, the Basic driver's too; the
        # v1.37.2 scheduler sets no condition on a CompositePodGroup).
        watched = [o for o in stored if o["kind"] == "PodGroup"] if tree else gangs
        seen_state = eventually(
            f"the scheduler to mark the held PodGroups {kind}=False/Unschedulable", state,
            lambda st: all((kind, "False", "Unschedulable") in st[g["metadata"]["name"]]
                           for g in watched))
        print(f"{gc.version} {gc.gates}: held: {seen_state}")
        held = _pods(gc, ns, held_sel)
        assert len(held) == held_count and not any(pod_bound(p) for p in held), _bound(held)

        # Two more nodes: the gang fits, and all of it is bound.
        added_at = time.time()
        added = add_pool_nodes(gc, ns, 2, cpu="2")
        bound = eventually(f"{held_count} pods bound and Running", lambda: _pods(
            gc, ns, held_sel), lambda ps: len(ps) == held_count and all(
            p["status"].get("phase") == "Running" for p in ps), show=_bound)
        times = sorted(_since(scheduled_at(p)) for p in bound)
        # None bound before the nodes came (the condition's time is in whole seconds).
        assert times[0] >= int(added_at) - 1, (times, added_at)
        spread = times[-1] - times[0]
        node_at = max(_since(kube.get(f"/api/v1/nodes/{n}")["metadata"]["creationTimestamp"])
                      for n in added)
        # Whole seconds, as the API server stamps both.
        print(f"{gc.version} {gc.gates}: gang of {held_count} bound {times[-1] - node_at:.0f} s "
              f"after the nodes were created, within {spread:.0f} s of each other")
        assert spread <= 60, times
        done = eventually(f"the held PodGroups {kind}=True", state, lambda st: all(
            any(c[:2] == (kind, "True") for c in st[g["metadata"]["name"]]) for g in watched))
        print(f"{gc.version} {gc.gates}: bound: {done}")
        pods = _pods(gc, ns, "jobset.sigs.k8s.io/jobset-name=held")

        # The server's defaults were not taken for drift: the shim kept what it created.
        assert [o["metadata"]["uid"] for o in stored] == [
            (_stored(gc, o) or {}).get("metadata", {}).get("uid") for o in planned]

        # Done: the JobSet completes and its scheduling objects go with it.
        for pod in pods:
            kube.patch(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                       {"metadata": {"annotations": {EXIT_CODE: "0"}}})
        eventually("JobSet held Completed", lambda: kube.jobset(ns, "held"),
                   lambda j: has_condition(j, "Completed"), show=conditions)
        eventually("its Workload and PodGroups deleted",
                   lambda: [o["metadata"]["name"] for o in planned if _stored(gc, o)],
                   lambda left: not left)


def test_job_controllers_own_gang_workload_equals_decider_gang(gang_cp, tmp_path):
    """WorkloadWithJob: the Job controller makes a gang Job's Workload and PodGroup itself;
    `decider gang` on the same Job plans the same objects, names included."""
    gc, kube = gang_cp, gang_cp.kube
    with namespace(gc, "gang-job") as ns:
        add_pool_nodes(gc, ns, 1, cpu="4")
        spec: dict[str, Any] = {
            "completionMode": "Indexed", "parallelism": 3, "completions": 3, "backoffLimit": 0,
            "template": {"spec": pool_pod_spec(ns, "rank", "1")}}
        if gc.api_version.endswith("v1beta1"):
            # 1.37: a root Job is Basic unless its spec.scheduling asks for a gang; 1.36 makes
            # an Indexed Job with completions == parallelism > 1 a gang by itself.
            spec["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 3}}}
        job = kube.create(f"/apis/batch/v1/namespaces/{ns}/jobs", {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "ranks", "namespace": ns}, "spec": spec})
        plan = decider_gang([job], tmp_path, gc.api_version)
        planned = plan["objects"]
        assert [o["kind"] for o in planned] == ["Workload", "PodGroup"], plan
        workload, group = planned
        stored_wl = eventually(f"the Job controller's Workload {workload['metadata']['name']}",
                               lambda: _stored(gc, workload), bool)
        stored_pg = eventually(f"the Job controller's PodGroup {group['metadata']['name']}",
                               lambda: _stored(gc, group), bool)
        assert [o["metadata"]["name"] for o in gc.scheduling("workloads", ns)] == [
            workload["metadata"]["name"]]
        assert [o["metadata"]["name"] for o in gc.scheduling("podgroups", ns)] == [
            group["metadata"]["name"]]
        assert stored_wl["spec"] == workload["spec"], (stored_wl["spec"], workload["spec"])
        assert without_server_fields(stored_wl["metadata"]) == workload["metadata"]
        defaults = SERVER_DEFAULTS.get((group["apiVersion"], "PodGroup"), {})
        assert stored_pg["spec"] == {**group["spec"], **defaults}, (stored_pg["spec"], group)
        # The PodGroup's second owner is the Workload, whose uid exists only once it does.
        owners = [dict(r, uid="") if r["kind"] == "Workload" else r
                  for r in stored_pg["metadata"]["ownerReferences"]]
        assert owners == group["metadata"]["ownerReferences"]
        assert [r["uid"] for r in stored_pg["metadata"]["ownerReferences"]
                if r["kind"] == "Workload"] == [stored_wl["metadata"]["uid"]]
        assert without_server_fields({**stored_pg["metadata"], "ownerReferences": owners}) \
            == group["metadata"]

        # Its pods join that PodGroup, as decider gang's patch says, and run together.
        pods = eventually("3 pods Running", lambda: _pods(gc, ns, "job-name=ranks"),
                          lambda ps: len(ps) == 3 and all(
                              p["status"].get("phase") == "Running" for p in ps), show=_bound)
        for pod in pods:
            for key, value in plan["podTemplatePatches"]["ranks"]["spec"].items():
                assert pod["spec"][key] == value, (key, pod["spec"].get(key))
        kind = SCHEDULED_CONDITION[gc.api_version]
        eventually(f"PodGroup {kind}=True", lambda: _stored(gc, group),
                   lambda g: has_condition(g, kind), show=conditions)

        # Given what exists, decider gang reuses it: nothing to create, nothing to delete.
        live = kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/ranks")
        again = decider_gang([live, _stored(gc, workload), _stored(gc, group)], tmp_path,
                             gc.api_version)
        assert again["objects"] == [], again
        names = [o["metadata"]["name"] for o in planned]
        for name in names:
            assert any(line.startswith(f"{kind} {name} exists") and line.endswith("reused")
                       for kind in ("Workload", "PodGroup") for line in again["explanation"]), \
                again["explanation"]


def test_gang_of_gangs_tree_is_admitted_and_read_back_as_planned(gang_cp, tmp_path):
    """JobSetGangOfGangs: the v1beta1 Workload with its CompositePodGroupTemplates, the
    v1alpha3 CompositePodGroups and the leaf v1beta1 PodGroups `decider gang` plans, created
    in its order through the real API server (its validation, CEL rules and defaulting), and
    read back as planned. The JobSet that owns them is managed by no controller here, so
    nothing but this test writes them."""
    gc, kube = gang_cp, gang_cp.kube
    if not gc.api_version.endswith("v1beta1"):
        pytest.skip(f"{gc.version} serves no scheduling.k8s.io/v1alpha3 CompositePodGroup")
    with namespace(gc, "gang-tree") as ns:
        manifest = jobset(ns, "tree", [_rjob(ns, "driver", 1, 1), _rjob(ns, "workers", 2, 4)],
                          scheduling={"replicatedJobs": [
                              {"targetReplicatedJobs": ["driver"],
                               "schedulingPolicy": {"basic": {}}},
                              {"targetReplicatedJobs": ["workers"],
                               "schedulingPolicy": {"gang": {}},
                               "schedulingConstraints": {"topology": [
                                   {"key": "topology.kubernetes.io/rack"}]}}]})
        manifest["spec"]["managedBy"] = "e2e.jobset-decider.io/nobody"
        created = kube.create_jobset(manifest)
        plan = decider_gang([created], tmp_path, gc.api_version, gates="JobSetGangOfGangs=true")
        assert plan["mode"] == "gangOfGangs", plan["mode"]
        planned = plan["objects"]
        assert [o["kind"] for o in planned] == (
            ["Workload"] + ["CompositePodGroup"] * 3 + ["PodGroup"] * 3), plan
        for obj in planned:
            group, version = obj["apiVersion"].split("/")
            answer = kube.create(f"/apis/{group}/{version}/namespaces/{ns}/"
                                 f"{RESOURCE[obj['kind']]}", obj)
            assert answer["metadata"]["name"] == obj["metadata"]["name"]
        stored = _assert_stored_as_planned(gc, planned)
        # The tree holds together as the API server keeps it: every parent named is there.
        composite = {o["metadata"]["name"] for o in stored if o["kind"] == "CompositePodGroup"}
        for obj in stored:
            parent = obj["spec"].get("parentCompositePodGroupName")
            assert parent is None or parent in composite, (obj["metadata"]["name"], parent)
        # Read back with the server's defaults, the tree is what decider gang would keep: a
        # second plan over the stored objects creates, deletes and patches nothing.
        again = decider_gang([kube.jobset(ns, "tree"), *stored], tmp_path, gc.api_version,
                             gates="JobSetGangOfGangs=true")
        assert again["objects"] == [], again
        for obj in planned:
            name = obj["metadata"]["name"]
            assert f"{obj['kind']} {name} exists and is controlled by the JobSet: kept" in \
                again["explanation"], again["explanation"]
