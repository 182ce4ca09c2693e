"""spec.scheduling compiled into gangs: upstream's workload builder (jobset
pkg/controllers/workload_builder.go@4f0cbded, names from scheduling.go@51c2c13c), ported from
its scheduling_test.go tables (TestBuildWorkload, TestPolicyResolutionThroughBuildWorkload,
TestPodGroupTemplatesThroughBuildWorkload, TestComputeMinCount) onto the composite API; then
this project's CompositePodGroup tree (JobSetGangOfGangs), PodSets beside it, and a
CompositePodGroup's status read back."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from decider.core.errors import InvalidInput
from decider.core.gang import names as n
from decider.core.gang import plan_gang, pod_sets
from tests.gang.gang_fixtures import jobset, rjob

NS, JS = "default", "js"
WL = n.jobset_workload_name(NS, JS)
TREE = {"JobSetGangOfGangs": True}
GANG: dict[str, Any] = {"gang": {}}
BASIC: dict[str, Any] = {"basic": {}}


def entry(*targets: str, **fields: Any) -> dict[str, Any]:
    return {"targetReplicatedJobs": list(targets), **fields}


def templates(plan: Any) -> dict[str, dict[str, Any]]:
    wl = plan.objects[0]
    return {t["name"]: t for t in wl["spec"]["podGroupTemplates"]}


# --- TestBuildWorkload ---------------------------------------------------------------------------

@pytest.mark.parametrize(("js", "count"), [
    pytest.param(jobset(rjob("workers", 4, 2), scheduling={}), 1,
                 id="TestBuildWorkload/single-ReplicatedJob-defaults-to-Gang"),
    pytest.param(jobset(rjob("driver", 1, 1), rjob("workers", 8, 4), scheduling={}), 1,
                 id="TestBuildWorkload/top-level-gang-with-multiple-ReplicatedJobs-one-template"),
    pytest.param(jobset(rjob("driver", 1, 1), rjob("workers", 4, 2), scheduling={
        "replicatedJobs": [entry("driver", schedulingPolicy=BASIC), entry("workers")]}), 2,
        id="TestBuildWorkload/per-RJ-entries-one-template-each"),
])
def test_build_workload(js: dict[str, Any], count: int) -> None:
    wl = plan_gang(js).objects[0]
    assert wl["metadata"]["name"] == WL and wl["metadata"]["namespace"] == NS
    assert wl["spec"]["controllerRef"] == {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet",
                                           "name": JS}
    assert len(wl["spec"]["podGroupTemplates"]) == count
    assert wl["metadata"]["labels"] == {"jobset.sigs.k8s.io/jobset-name": JS}


# --- TestPolicyResolutionThroughBuildWorkload (leaf > global > default) ---------------------------

@pytest.mark.parametrize(("js", "template", "policy"), [
    pytest.param(jobset(rjob("workers", 4, 8), scheduling={}), WL, {"gang": {"minCount": 32}},
                 id="default-Gang-with-computed-minCount"),
    pytest.param(jobset(rjob("workers", 4, 2), scheduling={"schedulingPolicy": GANG}), WL,
                 {"gang": {"minCount": 8}}, id="composite-gang-derives-minCount"),
    pytest.param(jobset(rjob("workers", 4, 2), scheduling={"schedulingPolicy": BASIC}), WL,
                 {"basic": {}}, id="top-level-Basic-is-one-Basic-template"),
    pytest.param(jobset(rjob("driver", 1, 1), rjob("workers", 2, 3), scheduling={
        "replicatedJobs": [entry("driver", schedulingPolicy=BASIC), entry("workers")]}),
        n.jobset_group_template(NS, JS, ["workers"]), {"gang": {"minCount": 6}},
        id="entry-without-policy-defaults-to-Gang"),
    pytest.param(jobset(rjob("driver", 1, 1), rjob("workers", 2, 3), scheduling={
        "replicatedJobs": [entry("driver", schedulingPolicy=BASIC), entry("workers")]}),
        n.jobset_group_template(NS, JS, ["driver"]), {"basic": {}}, id="leaf-override-Basic"),
    pytest.param(jobset(rjob("workers", 4, 8), scheduling={"replicatedJobs": [
        entry("workers", job={"schedulingPolicy": {"gang": {"minCount": 3}}})]}),
        n.jobset_job_template(NS, JS, "workers", 0), {"gang": {"minCount": 3}},
        id="explicit-job-minCount-is-the-quorum"),
    pytest.param(jobset(rjob("workers", 2, 3), scheduling={"replicatedJobs": [
        entry("workers", job={"schedulingPolicy": GANG})]}),
        n.jobset_job_template(NS, JS, "workers", 1), {"gang": {"minCount": 3}},
        id="job-gang-without-minCount-is-its-parallelism"),
    pytest.param(jobset(rjob("workers", 3, None), scheduling={}), WL,
                 {"gang": {"minCount": 3}}, id="nil-parallelism-defaults-to-1"),
])
def test_policy_resolution(js: dict[str, Any], template: str, policy: dict[str, Any]) -> None:
    assert templates(plan_gang(js))[template]["schedulingPolicy"] == policy


def test_the_job_level_falls_back_to_the_top_level_block_by_block() -> None:
    """globalSchedulingInput: only reachable past admission (top-level fields beside entries),
    as a controller reading a stored object would: each unset block takes the top level's."""
    js = jobset(rjob("workers", 2, 2), scheduling={
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
        "disruptionMode": {"all": {}},
        "replicatedJobs": [entry("workers", job={})]})
    from decider.core.gang import jobset_design, jobset_facts

    f = jobset_facts.read_jobset(js)
    design = jobset_design.scheduling_design(f, jobset_facts.Naming("upstream")).design
    assert design is not None
    g = design.groups[0]
    assert g.topology == [{"key": "topology.kubernetes.io/zone"}] and g.disruption == "all"
    assert g.min_count == 2


# --- TestPodGroupTemplatesThroughBuildWorkload ----------------------------------------------------

@pytest.mark.parametrize(("scheduling", "template", "expected"), [
    pytest.param({}, WL, {"schedulingConstraints": None}, id="default-no-blocks"),
    pytest.param({"replicatedJobs": [entry("workers", schedulingConstraints={
        "topology": [{"key": "topology.kubernetes.io/rack"}]}, disruptionMode={"all": {}})]},
        n.jobset_group_template(NS, JS, ["workers"]),
        {"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
         "disruptionMode": {"all": {}}}, id="constraints-and-disruption-from-the-entry"),
    pytest.param({"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                  "disruptionMode": {"all": {}}}, WL,
                 {"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                  "disruptionMode": {"all": {}}}, id="top-level-blocks"),
])
def test_pod_group_templates(scheduling: dict[str, Any], template: str,
                             expected: dict[str, Any]) -> None:
    got = templates(plan_gang(jobset(rjob("workers", 2, 4), scheduling=scheduling)))[template]
    for key, value in expected.items():
        assert got.get(key) == value, key


def test_names_follow_upstream() -> None:
    """hashedName over Kind/ns/name: top level (template = Workload = PodGroup), a group
    <targets>-<hash> and its PodGroup <js>-<template>, a Job <rjob>-<i>-<hash>."""
    js = jobset(rjob("driver", 1, 1), rjob("workers", 2, 2), scheduling={"replicatedJobs": [
        entry("driver"), entry("workers", job={})]})
    plan = plan_gang(js)
    driver = n.jobset_group_template(NS, JS, ["driver"])
    assert driver == "driver-" + n.sha1_hex(f"ReplicatedJobGroup/{NS}/{JS}/driver")[:10]
    pgs = [o["metadata"]["name"] for o in plan.objects if o["kind"] == "PodGroup"]
    assert pgs == [f"{JS}-{driver}", *(f"{JS}-{n.jobset_job_template(NS, JS, 'workers', i)}"
                                       for i in range(2))]
    top = plan_gang(jobset(rjob("workers"), scheduling={}))
    assert [o["metadata"]["name"] for o in top.objects] == [WL, WL]
    assert f"{JS}-" + n.sha1_hex(f"JobSet/{NS}/{JS}")[:10] == WL


# --- JobSetGangOfGangs: the CompositePodGroup tree ------------------------------------------------

def _tree(scheduling: dict[str, Any], *rjobs: dict[str, Any], **kw: Any) -> Any:
    js = jobset(*(rjobs or (rjob("driver", 1, 1), rjob("workers", 3, 2))),
                scheduling=scheduling, **kw)
    return plan_gang(js, gates=TREE)


def test_tree_shape_and_defaults() -> None:
    plan = _tree({"replicatedJobs": [entry("driver", schedulingPolicy=BASIC), entry("workers")]})
    assert plan.mode == "gangOfGangs"
    wl, *rest = plan.objects
    # As a v1.37.2 API server serves it: the Go field has no omitempty (tests/e2e/test_gang.py).
    assert "podGroupTemplates" in wl["spec"] and wl["spec"]["podGroupTemplates"] is None
    (root,) = wl["spec"]["compositePodGroupTemplates"]
    assert root["name"] == WL and root["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}
    driver, workers = root["compositePodGroupTemplates"]
    assert driver["schedulingPolicy"] == {"basic": {}}
    assert workers["schedulingPolicy"] == {"gang": {"minGroupCount": 3}}  # its 3 Jobs
    (leaf,) = workers["podGroupTemplates"]
    assert leaf["name"] == n.jobset_rjob_template(NS, JS, "workers")
    assert leaf["schedulingPolicy"] == {"gang": {"minCount": 2}}
    kinds = [o["kind"] for o in rest]
    assert kinds == ["CompositePodGroup"] * 3 + ["PodGroup"] * 4
    cpgs = {o["metadata"]["name"]: o for o in rest if o["kind"] == "CompositePodGroup"}
    assert cpgs[WL]["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert "parentCompositePodGroupName" not in cpgs[WL]["spec"]
    workers_cpg = n.jobset_podgroup_name(JS, workers["name"])
    assert cpgs[workers_cpg]["spec"]["parentCompositePodGroupName"] == WL
    pgs = [o for o in rest if o["kind"] == "PodGroup"]
    assert {pg["spec"]["parentCompositePodGroupName"] for pg in pgs[1:]} == {workers_cpg}
    assert {pg["spec"]["workloadRef"]["templateName"] for pg in pgs[1:]} == {leaf["name"]}
    assert plan.pod_template_patches["js-workers-2"]["spec"]["schedulingGroup"] == {
        "podGroupName": pgs[3]["metadata"]["name"]}


def test_tree_explicit_min_group_counts_and_top_level_blocks() -> None:
    plan = _tree({"schedulingPolicy": {"gang": {"minGroupCount": 1}},
                  "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                  "replicatedJobs": [entry("driver"), entry(
                      "workers", schedulingPolicy={"gang": {"minGroupCount": 2}},
                      job={"schedulingPolicy": {"gang": {"minCount": 1}},
                           "schedulingConstraints": {"topology": [
                               {"key": "topology.kubernetes.io/rack"}]}})]})
    (root,) = plan.objects[0]["spec"]["compositePodGroupTemplates"]
    assert root["schedulingPolicy"] == {"gang": {"minGroupCount": 1}}
    assert root["schedulingConstraints"] == {"topology": [{"key": "topology.kubernetes.io/zone"}]}
    workers = root["compositePodGroupTemplates"][1]
    assert workers["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}
    (leaf,) = workers["podGroupTemplates"]
    assert leaf["schedulingPolicy"] == {"gang": {"minCount": 1}}
    assert leaf["schedulingConstraints"] == {"topology": [{"key": "topology.kubernetes.io/rack"}]}


def test_tree_root_is_basic_under_sequenced_startup() -> None:
    plan = _tree({"replicatedJobs": [entry("driver"), entry("workers")]}, in_order=True)
    (root,) = plan.objects[0]["spec"]["compositePodGroupTemplates"]
    assert root["schedulingPolicy"] == {"basic": {}}


def test_tree_needs_v1beta1() -> None:
    js = jobset(rjob("driver"), scheduling={})
    with pytest.raises(InvalidInput) as err:
        plan_gang(js, api_version="scheduling.k8s.io/v1alpha2", gates=TREE)
    assert err.value.errors[0].field == "options.gang_api_version"
    volcano = plan_gang(js, target="volcano", gates=TREE)
    assert any("no CompositePodGroup" in w for w in volcano.warnings)


def test_tree_drift_and_min_count_in_place() -> None:
    js = jobset(rjob("workers", 2, 2), scheduling={})
    made = plan_gang(js, gates=TREE).objects
    for i, o in enumerate(made):
        o["metadata"]["uid"] = f"u{i}"
    same = plan_gang(js, made, gates=TREE)
    assert same.objects == [] and same.updates == [] and same.deletes == []
    scaled = plan_gang(jobset(rjob("workers", 2, 3), scheduling={}), made, gates=TREE)
    assert [u["kind"] for u in scaled.updates] == ["Workload", "PodGroup", "PodGroup"]
    root = scaled.updates[0]["patch"]["spec"]["compositePodGroupTemplates"][0]
    leaf = root["compositePodGroupTemplates"][0]["podGroupTemplates"][0]
    assert leaf["schedulingPolicy"] == {"gang": {"minCount": 3}}
    flat = plan_gang(js, made)  # the tree switched off: every object is stale
    assert [d["kind"] for d in flat.deletes][-1] == "Workload" and flat.objects == []


@pytest.mark.parametrize("junk", [1e-320, 7, {"name": "x"}, "templates"],
                         ids=["float", "int", "object", "string"])
def test_a_tree_whose_nested_list_is_junk_is_drift_not_a_crash(junk: Any) -> None:
    """An observed Workload whose composite template holds podGroupTemplates: 1e-320 (found by
    bench/fuzz_rpc.py over gRPC: TypeError, INTERNAL). No API server serves it; it differs from
    the decider's, so it is drift: the objects are deleted to be recreated."""
    js = jobset(rjob("workers", 2, 2), scheduling={})
    made = plan_gang(js, gates=TREE).objects
    for i, o in enumerate(made):
        o["metadata"]["uid"] = f"u{i}"
    workload = next(o for o in made if o["kind"] == "Workload")
    workload["spec"]["compositePodGroupTemplates"][0]["compositePodGroupTemplates"][0][
        "podGroupTemplates"] = junk
    plan = plan_gang(js, made, gates=TREE)
    assert "Workload" in [d["kind"] for d in plan.deletes]


def test_tree_pod_sets_carry_the_ancestors() -> None:
    js = jobset(rjob("driver", 1, 1), rjob("workers", 3, 2), scheduling={
        "replicatedJobs": [entry("driver", schedulingPolicy=BASIC), entry("workers")]})
    sets = {p.name: p for p in pod_sets(js, gates=TREE)}
    workers = sets["workers"].to_dict()["gang"]
    assert len(workers["podGroups"]) == 3
    assert [c["minGroupCount"] for c in workers["compositePodGroups"]] == [3, 2]
    assert workers["compositePodGroups"][-1]["name"] == WL
    flat = {p.name: p for p in pod_sets(js)}["workers"].to_dict()["gang"]
    assert "compositePodGroups" not in flat  # the flat shape is what it always was


@pytest.mark.parametrize(("condition", "said"), [
    pytest.param({"type": "CompositePodGroupInitiallyScheduled", "status": "True",
                  "reason": "Invalid", "message": "tree depth 5 exceeds 4"},
                 "found its group layout invalid", id="Invalid"),
    pytest.param({"type": "CompositePodGroupInitiallyScheduled", "status": "True",
                  "reason": "Scheduled"}, "has been scheduled", id="scheduled"),
    pytest.param({"type": "CompositePodGroupInitiallyScheduled", "status": "False",
                  "reason": "Unschedulable", "message": "0/3 nodes"},
                 "cannot be placed yet", id="Unschedulable"),
    pytest.param({"type": "DisruptionTarget", "status": "True",
                  "reason": "PreemptionByScheduler"}, "is being disrupted", id="DisruptionTarget"),
])
def test_a_composite_pod_groups_condition_is_read_back(condition: dict[str, Any],
                                                       said: str) -> None:
    js = jobset(rjob("workers", 2, 2), scheduling={})
    made = plan_gang(js, gates=TREE).objects
    for i, o in enumerate(made):
        o["metadata"]["uid"] = f"u{i}"
    cpg = next(o for o in made if o["kind"] == "CompositePodGroup")
    cpg["status"] = {"conditions": [condition]}
    plan = plan_gang(js, made, gates=TREE)
    (line,) = [s for s in plan.explanation if s.startswith("CompositePodGroup ")
               and said in s]
    if "message" in condition:
        assert condition["message"] in line
    root = plan.composites[0]
    assert root.explanation == (line if condition["type"].startswith("Composite") else "")
    stranger = copy.deepcopy(made)
    next(o for o in stranger if o["kind"] == "CompositePodGroup")["metadata"][
        "ownerReferences"][0]["uid"] = "someone-else"
    with pytest.raises(InvalidInput):
        plan_gang(js, stranger, gates=TREE)


def test_tree_json_is_what_kubectl_would_send() -> None:
    """Every manifest serializes (no Python-only values) and names its API."""
    plan = _tree({})
    for o in plan.objects:
        json.dumps(o)
        assert o["apiVersion"] in ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3")
