"""A spec.scheduling tree (JobSetGangOfGangs) is validated on its skeleton, not per Job.

A fuzz run found a Simulate of a JobSet with 100,000 worker Jobs, each its own gang, stopped by
the server's 10 s limit: every Decide pass validated the spec by building all 100,000 leaf
PodGroups (a hashed name and a group each) and walking them again for the tree's depth, over a
second a pass. Every rule of the tree is decided by its CompositePodGroups and leaf templates
(``was_builder.tree_skeleton``), so validation now costs the same whatever the replica counts.

Bounded by counts (lines of the decider executed, tests/support/opcount.py; calls), never by
time: bench/gang_tree_bench.py measures the time.
"""

from __future__ import annotations

from typing import Any

import pytest

from decider.core.gang import jobset_design, jobset_facts, plan_gang
from decider.core.gang import was_builder as wb
from decider.core.gang.targets_kubernetes import KubernetesV1Beta1
from decider.core.gang.was_spec import read_scheduling
from support.opcount import lines_executed
from tests.gang.gang_fixtures import jobset, rjob

GATES = {"JobSetWorkloadAwareSchedulingAPI": True, "JobSetGangOfGangs": True}


def entry(*targets: str, **fields: Any) -> dict[str, Any]:
    return {"targetReplicatedJobs": list(targets), **fields}


def per_job_gangs(workers: int, parallelism: int) -> dict[str, Any]:
    """The fuzz case's shape: a job-level gang per worker Job, with a claim."""
    return jobset(rjob("driver", 1, 1), rjob("workers", workers, parallelism),
                  scheduling={"replicatedJobs": [
                      entry("driver"),
                      entry("workers", job={
                          "schedulingPolicy": {"gang": {"minCount": 3}},
                          "resourceClaims": [{"name": "gpus",
                                              "resourceClaimTemplateName": "gpu-tmpl"}]})]})


def validation_lines(js: dict[str, Any]) -> int:
    f = jobset_facts.read_jobset(js)
    return lines_executed(lambda: jobset_design.validate(f, GATES))


@pytest.mark.parametrize("parallelism", [
    pytest.param(0, id="invalid-minCount-over-parallelism"),
    pytest.param(4, id="valid"),
])
def test_tree_validation_does_not_grow_with_the_jobs(parallelism: int) -> None:
    # Before: each extra Job was another leaf built and walked (tens of lines per Job).
    small = validation_lines(per_job_gangs(1_000, parallelism))
    large = validation_lines(per_job_gangs(2_000, parallelism))
    assert small == large


def test_tree_validation_builds_no_leaf(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real = wb.to_group
    monkeypatch.setattr(wb, "to_group", lambda item, name: built.append(name) or real(item, name))
    f = jobset_facts.read_jobset(per_job_gangs(500, 0))
    errors = jobset_design.validate(f, GATES)
    assert [e.field for e in errors] == [
        "spec.scheduling.replicatedJobs[1].job.schedulingPolicy.gang.minCount"]
    assert built == []


# The skeleton must hold exactly what the whole tree gives the rules: the same
# CompositePodGroups, the same depth, the same first duplicate name.
SHAPES = [
    pytest.param([rjob("driver", 1, 1), rjob("workers", 3, 2)],
                 {"replicatedJobs": [entry("driver"), entry("workers")]}, id="two-entries"),
    pytest.param([rjob("driver", 1, 1), rjob("workers", 0, 2)],
                 {"replicatedJobs": [entry("driver"), entry("workers", job={})]},
                 id="a-node-with-no-job"),
    pytest.param([rjob("a", 0, 1), rjob("b", 0, 1)], {}, id="no-job-at-all"),
    pytest.param([rjob("a", 2, 1), rjob("b", 2, 1), rjob("c", 1, 1)],
                 {"schedulingPolicy": {"gang": {"minGroupCount": 1}},
                  "replicatedJobs": [entry("a", "b")]}, id="untargeted-rjob-and-top-level"),
    pytest.param([rjob("w", 2, 1), rjob("w", 3, 1)], {}, id="duplicate-rjob-name"),
    pytest.param([rjob("a", 1, 1), rjob("b", 1, 1)],
                 {"replicatedJobs": [entry("a"), entry("a")]}, id="duplicate-entry"),
    pytest.param([rjob("x" * 60, 2, 1), rjob("x" * 61, 2, 1)],
                 {"replicatedJobs": [entry("x" * 60), entry("x" * 61, job={})]},
                 id="names-past-63-characters"),
]


def _outcome(build: Any) -> Any:
    try:
        return build()
    except wb.DuplicateName as exc:
        return ("DuplicateName", exc.name)


@pytest.mark.parametrize(("rjobs", "scheduling"), SHAPES)
@pytest.mark.parametrize("in_order", [False, True], ids=["parallel", "in-order"])
def test_skeleton_is_the_tree_without_its_leaves(rjobs: list[dict[str, Any]],
                                                 scheduling: dict[str, Any],
                                                 in_order: bool) -> None:
    f = jobset_facts.read_jobset(jobset(*rjobs, scheduling=scheduling, in_order=in_order))
    s = read_scheduling(f.scheduling)
    whole = _outcome(lambda: wb.build_tree(f, s))
    skeleton = _outcome(lambda: wb.tree_skeleton(f, s))
    if isinstance(whole, tuple) and whole[0] == "DuplicateName":
        assert skeleton == whole
        return
    composites, groups = whole
    assert skeleton.composites == composites
    assert wb.tree_depth(composites, skeleton.leaf_parents()) \
        == wb.tree_depth(composites, [g.parent for g in groups])
    # Each branch's leaf templates are those of its Jobs' PodGroups.
    for branch in skeleton.branches:
        made = {g.template for g in groups if g.parent == branch.composite.name}
        jobs = {t for t, r in zip(branch.leaf_templates, branch.node.members, strict=True)
                if r.replicas > 0}
        assert made == jobs


def test_a_tree_renders_each_leaf_template_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its 200 Jobs' PodGroups share two templates: each is rendered (claims deep-copied) once.
    rendered: list[str] = []
    real = KubernetesV1Beta1._template

    def counted(self: KubernetesV1Beta1, g: Any) -> dict[str, Any]:
        rendered.append(g.template)
        return real(self, g)

    monkeypatch.setattr(KubernetesV1Beta1, "_template", counted)
    plan = plan_gang(per_job_gangs(200, 4), gates=GATES)
    assert len([o for o in plan.objects if o["kind"] == "PodGroup"]) == 201
    assert sorted(rendered) == sorted({g.template for g in plan.groups})
