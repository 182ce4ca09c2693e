"""JobSet gangs: upstream spec.scheduling (KEP-969 WAS), the seed's annotation modes, lifecycle."""

from __future__ import annotations

import json

import pytest

from decider.core.errors import InvalidInput
from decider.core.gang import (
    OwnershipConflict,
    jobset_gang,
    plan_gang,
    pod_sets,
    validate_jobset_scheduling,
)
from decider.core.gang import names as n
from tests.gang.gang_fixtures import jobset, names_of, rjob

A1, A2, B1 = (f"scheduling.k8s.io/{v}" for v in ("v1alpha1", "v1alpha2", "v1beta1"))
NS, JS = "default", "js"
WL = n.jobset_workload_name(NS, JS)


def _mins(plan) -> dict[str, int | None]:
    return {g.template: g.min_count for g in plan.groups}


DRIVER, WORKERS = rjob("driver", 1, 1), rjob("workers", 3, 2, completions=1)


@pytest.mark.parametrize(
    ("js", "expected"),
    [
        pytest.param(
            jobset(DRIVER, WORKERS, scheduling={}),
            {WL: 7},
            id="kep969/top-level-sum-of-parallelism-x-replicas",
        ),
        pytest.param(jobset(DRIVER, WORKERS, mode="JobSetAsGang"), {WL: 7}, id="seed/JobSetAsGang"),
        pytest.param(
            jobset(DRIVER, WORKERS, scheduling={"schedulingPolicy": {"basic": {}}}),
            {WL: None},
            id="kep969@4f0cbded/top-level-basic-is-one-basic-podgroup",
        ),
        pytest.param(
            jobset(DRIVER, WORKERS, mode="JobSetGangPerReplicatedJob"),
            {
                n.jobset_rjob_template(NS, JS, "driver"): 1,
                n.jobset_rjob_template(NS, JS, "workers"): 6,
            },
            id="seed/JobSetGangPerReplicatedJob",
        ),
        pytest.param(
            jobset(DRIVER, WORKERS, in_order=True, scheduling={"replicatedJobs": [
                {"targetReplicatedJobs": ["driver"]}, {"targetReplicatedJobs": ["workers"]}]}),
            {
                n.jobset_group_template(NS, JS, ["driver"]): 1,
                n.jobset_group_template(NS, JS, ["workers"]): 6,
            },
            id="kep969@4f0cbded/inorder-startup-needs-per-rjob-entries",
        ),
        pytest.param(
            jobset(DRIVER, rjob("workers", 3, 2, depends_on="driver"), mode="JobSetAsGang"),
            {
                n.jobset_rjob_template(NS, JS, "driver"): 1,
                n.jobset_rjob_template(NS, JS, "workers"): 6,
            },
            id="kep969/dependsOn-per-rjob-gangs",
        ),
        pytest.param(
            jobset(
                DRIVER,
                WORKERS,
                scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["driver", "workers"]}]},
            ),
            {n.jobset_group_template(NS, JS, ["driver", "workers"]): 7},
            id="kep969-MISMATCH/grouped-entry-sums-pods-not-replicas",
        ),
        pytest.param(
            jobset(
                DRIVER,
                WORKERS,
                scheduling={
                    "replicatedJobs": [
                        {"targetReplicatedJobs": ["driver"]},
                        {"targetReplicatedJobs": ["workers"], "job": {}},
                    ]
                },
            ),
            {
                n.jobset_group_template(NS, JS, ["driver"]): 1,
                **{n.jobset_job_template(NS, JS, "workers", i): 2 for i in range(3)},
            },
            id="kep969/per-job-gang-of-parallelism",
        ),
    ],
)
def test_jobset_groups_and_min_counts(js: dict, expected: dict) -> None:
    plan = plan_gang(js, api_version=B1)
    assert _mins(plan) == expected
    assert names_of(plan.objects)[0] == ("Workload", WL)
    assert len(plan.objects) == 1 + len(expected)


def test_top_level_objects_and_child_job_wiring() -> None:
    plan = plan_gang(jobset(DRIVER, WORKERS, scheduling={}), api_version=B1)
    wl, pg = plan.objects
    assert pg["metadata"]["name"] == WL  # top-level PodGroup reuses the template name
    assert wl["spec"]["controllerRef"] == {
        "apiGroup": "jobset.x-k8s.io",
        "kind": "JobSet",
        "name": JS,
    }
    for obj in plan.objects:
        refs = obj["metadata"]["ownerReferences"]
        assert [(r["kind"], r["controller"], r["blockOwnerDeletion"]) for r in refs] == [
            ("JobSet", True, True)
        ]
    children = ["js-driver-0", "js-workers-0", "js-workers-1", "js-workers-2"]
    assert sorted(plan.pod_template_patches) == children
    assert plan.pod_template_patches["js-workers-2"] == {
        "spec": {"schedulingGroup": {"podGroupName": WL}}
    }
    assert plan.job_annotations["js-driver-0"] == {"scheduling.k8s.io/group-template-name": WL}


def test_per_rjob_podgroup_names_combine_jobset_and_template() -> None:
    plan = plan_gang(jobset(DRIVER, WORKERS, mode="JobSetGangPerReplicatedJob"), api_version=B1)
    tpl = n.jobset_rjob_template(NS, JS, "workers")
    assert ("PodGroup", f"{JS}-{tpl}") in names_of(plan.objects)
    assert plan.pod_template_patches["js-workers-1"]["spec"]["schedulingGroup"] == {
        "podGroupName": f"{JS}-{tpl}"
    }


def test_v1alpha1_uses_the_draft_naming() -> None:
    plan = plan_gang(jobset(DRIVER, WORKERS, mode="JobSetGangPerReplicatedJob"), api_version=A1)
    (wl,) = plan.objects
    assert wl["metadata"]["name"] == JS
    assert wl["metadata"]["labels"] == {
        "jobset.sigs.k8s.io/jobset-name": JS,
        "jobset.sigs.k8s.io/jobset-uid": "7d1e2f30-0000-4000-8000-00000000abcd",
    }
    assert [g["name"] for g in wl["spec"]["podGroups"]] == ["driver", "workers"]
    assert plan.pod_template_patches["js-workers-0"] == {
        "spec": {"workloadRef": {"name": JS, "podGroup": "workers"}}
    }


TEMPLATE_YAML = """
podGroupTemplates:
- name: workers
  schedulingPolicy:
    gang:
      minCount: 4
"""


@pytest.mark.parametrize("api", [A1, A2, B1])
def test_workload_template_mode_renders_user_groups(api: str) -> None:
    js = jobset(DRIVER, WORKERS, mode="JobSetWorkloadTemplate", template=TEMPLATE_YAML)
    plan = plan_gang(js, api_version=api)
    assert _mins(plan) == {"workers": 4}
    assert "js-driver-0" not in plan.pod_template_patches  # not in any group
    assert any("driver" in w for w in plan.warnings)
    as_json = json.dumps({"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}]})
    js_json = jobset(DRIVER, WORKERS, mode="JobSetWorkloadTemplate", template=as_json)
    assert _mins(plan_gang(js_json, api_version=api)) == {"workers": 4}


@pytest.mark.parametrize(
    ("js", "field"),
    [
        pytest.param(
            jobset(DRIVER, mode="JobSetEverything"),
            "metadata.annotations[jobset-decider.io/gang-policy]",
            id="seed/unknown-mode",
        ),
        pytest.param(
            jobset(DRIVER, mode="JobSetWorkloadTemplate"),
            "metadata.annotations[jobset-decider.io/workload-template]",
            id="seed/template-required",
        ),
        pytest.param(
            jobset(DRIVER, mode="JobSetAsGang", template=TEMPLATE_YAML),
            "metadata.annotations[jobset-decider.io/workload-template]",
            id="seed/template-only-with-template-mode",
        ),
        pytest.param(
            jobset(DRIVER, mode="JobSetWorkloadTemplate", template="podGroupTemplates: [oops"),
            "metadata.annotations[jobset-decider.io/workload-template]",
            id="seed/template-malformed",
        ),
        pytest.param(
            jobset(DRIVER, mode="JobSetWorkloadTemplate",
                   template="podGroups: " + "[" * 50_000 + "]" * 50_000),
            "metadata.annotations[jobset-decider.io/workload-template]",
            id="decider/template-nested-past-the-yaml-parser",
        ),
        pytest.param(
            jobset(DRIVER, mode="JobSetWorkloadTemplate",
                   template='{"podGroups": ' + "[" * 50_000 + "]" * 50_000 + "}"),
            "metadata.annotations[jobset-decider.io/workload-template]",
            id="decider/template-nested-past-the-json-parser",
        ),
        pytest.param(
            jobset(DRIVER, mode="JobSetWorkloadTemplate", template=TEMPLATE_YAML),
            "metadata.annotations[jobset-decider.io/workload-template].podGroupTemplates[0].name",
            id="seed/template-group-names-a-rjob",
        ),
        pytest.param(
            jobset(DRIVER, mode="JobSetAsGang", scheduling={}),
            "metadata.annotations[jobset-decider.io/gang-policy]",
            id="decider/annotation-and-spec-scheduling",
        ),
        pytest.param(
            jobset(scheduling={}), "spec.replicatedJobs", id="kep969/needs-a-replicated-job"
        ),
        pytest.param(
            jobset(
                DRIVER,
                scheduling={
                    "schedulingPolicy": {"basic": {}},
                    "replicatedJobs": [{"targetReplicatedJobs": ["driver"]}],
                },
            ),
            "spec.scheduling",
            id="kep969/top-level-and-replicatedJobs-exclusive",
        ),
        pytest.param(
            jobset(
                DRIVER,
                WORKERS,
                scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["driver"]}]},
            ),
            "spec.replicatedJobs[1].name",
            id="kep969/every-rjob-targeted",
        ),
        pytest.param(
            jobset(DRIVER, scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["nope"]}]}),
            "spec.scheduling.replicatedJobs[0].targetReplicatedJobs[0]",
            id="kep969/target-must-exist",
        ),
        pytest.param(
            jobset(
                DRIVER,
                WORKERS,
                scheduling={
                    "replicatedJobs": [
                        {"targetReplicatedJobs": ["driver", "workers"]},
                        {"targetReplicatedJobs": ["workers"]},
                    ]
                },
            ),
            "spec.scheduling.replicatedJobs[1].targetReplicatedJobs[0]",
            id="kep969/target-in-one-entry",
        ),
        pytest.param(
            jobset(
                DRIVER,
                WORKERS,
                scheduling={
                    "replicatedJobs": [{"targetReplicatedJobs": ["driver", "workers"], "job": {}}]
                },
            ),
            "spec.scheduling.replicatedJobs[0].targetReplicatedJobs",
            id="kep969/job-level-needs-one-target",
        ),
        pytest.param(
            jobset(
                DRIVER,
                scheduling={
                    "replicatedJobs": [
                        {
                            "targetReplicatedJobs": ["driver"],
                            "schedulingPolicy": {"gang": {}},
                            "job": {},
                        }
                    ]
                },
            ),
            "spec.scheduling.replicatedJobs[0].job",
            id="kep969/job-level-excludes-leaf-fields",
        ),
        pytest.param(
            jobset(
                DRIVER,
                WORKERS,
                in_order=True,
                scheduling={"schedulingPolicy": {"gang": {"minCount": 2}}},
            ),
            "spec.scheduling.schedulingPolicy.gang.minCount",
            id="superseded/sequenced-with-explicit-minCount-is-an-unknown-field",
        ),
        pytest.param(
            jobset(DRIVER, WORKERS, scheduling={"schedulingPolicy": {"gang": {"minCount": 8}}}),
            "spec.scheduling.schedulingPolicy.gang.minCount",
            id="superseded/top-level-minCount-is-an-unknown-field",
        ),
        pytest.param(
            jobset(DRIVER, rjob("workers", 3, 2, priority="high"), scheduling={}),
            "spec.replicatedJobs[1].template.spec.template.spec.priorityClassName",
            id="kep969/top-level-one-priority",
        ),
        pytest.param(
            jobset(rjob("a", scheduling_group={"podGroupName": "x"}), scheduling={}),
            "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup",
            id="kep969/user-schedulingGroup-forbidden",
        ),
        pytest.param(
            jobset(
                DRIVER,
                scheduling={"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}},
            ),
            "spec.scheduling.disruptionMode",
            id="workloadbuilder/basic+all",
        ),
        pytest.param(
            jobset(
                rjob("w", 9),
                scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["w"], "job": {}}]},
            ),
            "spec.scheduling",
            id="TestSchedulingRejectsTooManyPodGroupTemplates/over-the-limit",
        ),
    ],
)
def test_validation_rules(js: dict, field: str) -> None:
    """PlanGang refuses what admission refuses: the annotations' rules (also said by
    validate_jobset_scheduling) and spec.scheduling's CRD and webhook rules."""
    with pytest.raises(InvalidInput) as err:
        plan_gang(js)
    assert field in [e.field for e in err.value.errors], err.value.errors
    if js["spec"].get("scheduling") is None or js["metadata"].get("annotations"):
        assert field in [e.field for e in validate_jobset_scheduling(js)]


def test_valid_configurations_have_no_errors() -> None:
    for js in (
        jobset(DRIVER, WORKERS, scheduling={}),
        jobset(DRIVER, WORKERS, mode="JobSetGangPerReplicatedJob"),
        jobset(DRIVER, WORKERS),
        jobset(
            rjob("w", 8),
            scheduling={"replicatedJobs": [{"targetReplicatedJobs": ["w"], "job": {}}]},
        ),
    ):
        assert validate_jobset_scheduling(js) == []


# --- lifecycle (what Decide runs) ----------------------------------------------------------


def _created(js: dict, api: str = B1) -> list[dict]:
    objects = plan_gang(js, api_version=api).objects
    for i, o in enumerate(objects):
        o["metadata"]["uid"] = f"uid-{i}"
    return objects


def test_no_gang_requested_returns_none() -> None:
    assert jobset_gang(jobset(DRIVER)) is None


def test_created_suspended_creates_nothing() -> None:
    plan = jobset_gang(jobset(DRIVER, WORKERS, scheduling={}, suspend=True))
    assert plan is not None and plan.objects == [] and plan.deletes == []
    assert plan.pod_template_patches  # Jobs created while suspended are already wired


def test_suspend_deletes_owned_podgroups_then_workload() -> None:
    existing = _created(jobset(DRIVER, WORKERS, mode="JobSetGangPerReplicatedJob"))
    plan = jobset_gang(
        jobset(DRIVER, WORKERS, mode="JobSetGangPerReplicatedJob", suspend=True), existing=existing
    )
    assert [d["kind"] for d in plan.deletes] == ["PodGroup", "PodGroup", "Workload"]
    assert all(d["uid"] for d in plan.deletes) and plan.objects == []


def test_resume_recreates_with_the_same_names() -> None:
    js = jobset(DRIVER, WORKERS, scheduling={})
    first = jobset_gang(js).objects
    assert names_of(jobset_gang(js, existing=[]).objects) == names_of(first)


def test_restart_keeps_owned_objects() -> None:
    js = jobset(DRIVER, WORKERS, scheduling={})
    plan = jobset_gang(js, existing=_created(js))
    assert plan.objects == [] and plan.deletes == [] and plan.updates == []
    assert plan.pod_template_patches


def test_finished_jobset_deletes_its_objects() -> None:
    js = jobset(DRIVER, scheduling={}, conditions=[{"type": "Completed", "status": "True"}])
    existing = _created(jobset(DRIVER, scheduling={}))
    assert len(jobset_gang(js, existing=existing).deletes) == 2


def test_refuses_to_adopt_a_same_named_object() -> None:
    js = jobset(DRIVER, scheduling={})
    foreign = _created(js)[0]
    foreign["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    with pytest.raises(OwnershipConflict) as err:
        jobset_gang(js, existing=[foreign])
    assert err.value.errors[0].field == "existing[0].metadata.ownerReferences"
    assert "refusing to adopt" in err.value.errors[0].message


def test_min_count_drift_updates_in_place_other_drift_recreates() -> None:
    small = jobset(rjob("w", 2, 2), scheduling={})
    existing = _created(small)
    grown = jobset(rjob("w", 3, 2), scheduling={})  # ElasticJobSet scale-up
    plan = jobset_gang(grown, existing=existing)
    assert [u["kind"] for u in plan.updates] == ["Workload", "PodGroup"]
    assert plan.updates[1]["patch"] == {"spec": {"schedulingPolicy": {"gang": {"minCount": 6}}}}
    # TestReconcileSchedulingObjectsDeletesOwnedStalePodGroup: a policy changed while suspended
    basic = jobset(rjob("w", 2, 2), scheduling={"schedulingPolicy": {"basic": {}}})
    plan = jobset_gang(basic, existing=existing)
    assert plan.objects == [] and [d["kind"] for d in plan.deletes] == ["PodGroup", "Workload"]
    # podGroupTemplatesEqualIgnoringMinCount: constraints the server dropped are not drift
    topo = jobset(
        rjob("w", 2, 2), scheduling={"schedulingConstraints": {"topology": [{"key": "z"}]}}
    )
    assert jobset_gang(topo, existing=existing).deletes == []


def test_server_defaults_are_not_drift() -> None:
    js = jobset(DRIVER, scheduling={})
    existing = _created(js)
    existing[1]["spec"]["disruptionMode"] = {"single": {}}
    existing[1]["spec"]["priority"] = 0
    existing[1]["metadata"]["finalizers"] = ["scheduling.k8s.io/podgroup-protection"]
    assert jobset_gang(js, existing=existing).deletes == []


# --- other targets -------------------------------------------------------------------------


def test_scheduler_plugins_target() -> None:
    plan = plan_gang(
        jobset(DRIVER, WORKERS, mode="JobSetGangPerReplicatedJob"), target="scheduler-plugins"
    )
    assert {o["apiVersion"] for o in plan.objects} == {"scheduling.x-k8s.io/v1alpha1"}
    assert [o["spec"] for o in plan.objects] == [{"minMember": 1}, {"minMember": 6}]
    pg = plan.objects[1]["metadata"]["name"]
    assert plan.pod_template_patches["js-workers-0"] == {
        "metadata": {"labels": {"scheduling.x-k8s.io/pod-group": pg}}
    }


def test_volcano_target_and_basic_groups() -> None:
    js = jobset(
        DRIVER,
        rjob("w", 2, 2, priority="high"),
        scheduling={
            "replicatedJobs": [
                {"targetReplicatedJobs": ["driver"], "schedulingPolicy": {"basic": {}}},
                {"targetReplicatedJobs": ["w"]},
            ]
        },
    )
    plan = plan_gang(js, target="volcano")
    assert [o["spec"] for o in plan.objects] == [{"minMember": 4, "priorityClassName": "high"}]
    assert plan.pod_template_patches["js-w-1"]["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": plan.objects[0]["metadata"]["name"]
    }
    assert "js-driver-0" not in plan.pod_template_patches and plan.warnings


# --- Kueue pod sets --------------------------------------------------------------------------


def test_pod_sets_match_kueue_counts_and_flag_disagreement() -> None:
    # Kueue's own test: job1 (replicas 2, p1, c1) and job2 (replicas 3, p2, c3) -> 2 and 6.
    js = jobset(rjob("job1", 2, 1, 1), rjob("Job2", 3, 2, 3), mode="JobSetGangPerReplicatedJob")
    sets = pod_sets(js)
    assert [(p.name, p.count, p.gang_min_count) for p in sets] == [("job1", 2, 2), ("job2", 6, 6)]
    assert all(not p.warnings for p in sets)
    skew = pod_sets(jobset(WORKERS, mode="JobSetGangPerReplicatedJob"))
    assert skew[0].count == 3 and skew[0].gang_min_count == 6
    assert "CountMismatch" in skew[0].warnings[0]


def test_pod_sets_for_a_job() -> None:
    from tests.gang.gang_fixtures import job

    (main,) = pod_sets(job(parallelism=4, completions=2, indexed=True), api_version=A2)
    assert (main.name, main.count, main.gang_min_count) == ("main", 2, None)
    (main,) = pod_sets(job(), api_version=A2)
    assert (main.count, main.gang_min_count, main.warnings) == (4, 4, ())
