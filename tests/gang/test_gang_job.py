"""KEP-5547: Workload/PodGroup for batch Jobs, 1.36 (observed v1.36.2) and 1.37 rules."""

from __future__ import annotations

import pytest

from decider.core.errors import InvalidInput
from decider.core.gang import plan_gang, validate_job_update
from decider.core.gang.names import job_podgroup_name, job_workload_name
from tests.gang.gang_fixtures import UID, job, names_of, owner

A1, A2, B1 = (f"scheduling.k8s.io/{v}" for v in ("v1alpha1", "v1alpha2", "v1beta1"))
WL = job_workload_name("train", UID)
PG = job_podgroup_name(WL, "train-pgt-0")


@pytest.mark.parametrize(
    ("kwargs", "gang"),
    [
        pytest.param({}, True, id="kep5547/indexed-4of4"),
        pytest.param({"parallelism": 2, "completions": 2}, True, id="kep5547/indexed-2of2"),
        pytest.param({"parallelism": None}, False, id="kep5547/parallelism-nil"),
        pytest.param({"parallelism": 1, "completions": 1}, False, id="kep5547/parallelism-1"),
        pytest.param({"parallelism": 0, "completions": 0}, False, id="kep5547/parallelism-0"),
        pytest.param({"indexed": False}, False, id="kep5547/non-indexed"),
        pytest.param({"completions": None}, False, id="kep5547/completions-nil"),
        pytest.param({"completions": 8}, False, id="kep5547/completions!=parallelism"),
        pytest.param(
            {"scheduling_group": {"podGroupName": "mine"}},
            False,
            id="kep5547/schedulingGroup-opt-out",
        ),
        pytest.param({"managedBy": "example.com/other"}, False, id="kep5547/managedBy-other"),
        pytest.param(
            {"managedBy": "kubernetes.io/job-controller"}, True, id="kep5547/managedBy-builtin"
        ),
        # Observed on v1.36.2: owner references do not opt out (the KEP test plan said they do).
        pytest.param({"owner": owner("ConfigMap", "cm")}, True, id="observed/owner-configmap"),
        pytest.param(
            {"owner": owner("JobSet", "js", api="jobset.x-k8s.io/v1alpha2")},
            True,
            id="observed/owner-jobset",
        ),
        pytest.param(
            {"owner": owner("CronJob", "cj", api="batch/v1")}, True, id="observed/owner-cronjob"
        ),
    ],
)
def test_v1alpha2_eligibility(kwargs: dict, gang: bool) -> None:
    plan = plan_gang(job(**kwargs), api_version=A2)
    assert bool(plan.objects) is gang
    assert bool(plan.pod_template_patches) is gang
    assert plan.explanation


def test_v1alpha2_objects_are_exactly_what_the_136_controller_creates() -> None:
    plan = plan_gang(job(), api_version=A2)
    job_ref = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "train",
        "uid": UID,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert plan.objects == [
        {
            "apiVersion": A2,
            "kind": "Workload",
            "metadata": {"name": WL, "namespace": "default", "ownerReferences": [job_ref]},
            "spec": {
                "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
                "podGroupTemplates": [
                    {
                        "name": "train-pgt-0",
                        "schedulingPolicy": {"gang": {"minCount": 4}},
                        "schedulingConstraints": None,
                    }
                ],
            },
        },
        {
            "apiVersion": A2,
            "kind": "PodGroup",
            "metadata": {
                "name": PG,
                "namespace": "default",
                # Workload ref: neither controller nor blockOwnerDeletion; its uid is filled in
                # once the Workload exists.
                "ownerReferences": [
                    job_ref,
                    {"apiVersion": A2, "kind": "Workload", "name": WL, "uid": ""},
                ],
            },
            "spec": {
                "podGroupTemplateRef": {
                    "workload": {"workloadName": WL, "podGroupTemplateName": "train-pgt-0"}
                },
                "schedulingPolicy": {"gang": {"minCount": 4}},
            },
        },
    ]
    # The API server adds disruptionMode and the protection finalizer; the controller does not.
    assert "disruptionMode" not in plan.objects[1]["spec"]
    assert "finalizers" not in plan.objects[1]["metadata"]
    assert plan.pod_template_patches == {
        "train": {"spec": {"schedulingGroup": {"podGroupName": PG}}}
    }


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({}, id="observed/new"),
        # Created suspended: the first sync happens before the Suspended condition exists.
        pytest.param({"active": 0}, id="observed/created-suspended-first-sync"),
    ],
)
def test_new_jobs_get_objects(status: dict) -> None:
    assert len(plan_gang(job(status=status), api_version=A2).objects) == 2


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({"startTime": "2026-01-01T00:00:00Z"}, id="kep5547/started"),
        pytest.param({"succeeded": 1}, id="kep5547/succeeded"),
        pytest.param({"failed": 1}, id="kep5547/failed"),
        pytest.param({"active": 2}, id="kep5547/has-pods"),
        pytest.param(
            {"conditions": [{"type": "Suspended", "status": "False"}]},
            id="kep5547/suspended-condition-any-status",
        ),
    ],
)
def test_started_jobs_only_discover(status: dict) -> None:
    plan = plan_gang(job(status=status), api_version=A2)
    assert plan.objects == [] and plan.pod_template_patches == {}
    assert any("already started" in e for e in plan.explanation)


def _workload(uid: str = "wl-uid", controller_uid: str | None = UID, templates: int = 1) -> dict:
    meta: dict = {"name": WL, "namespace": "default", "uid": uid}
    if controller_uid is not None:
        meta["ownerReferences"] = [owner("Job", "train", uid=controller_uid, api="batch/v1")]
    tpls = [
        {"name": f"train-pgt-{i}", "schedulingPolicy": {"gang": {"minCount": 4}}}
        for i in range(templates)
    ]
    return {
        "apiVersion": A2,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": tpls,
        },
    }


def test_existing_owned_workload_is_reused_and_podgroup_completed() -> None:
    # A restart between the two creates: the PodGroup is still made, pointing at the real uid.
    plan = plan_gang(job(status={"startTime": "t"}), [_workload()], api_version=A2)
    assert names_of(plan.objects) == [("PodGroup", PG)]
    assert plan.objects[0]["metadata"]["ownerReferences"][1]["uid"] == "wl-uid"
    assert plan.pod_template_patches["train"]["spec"]["schedulingGroup"]["podGroupName"] == PG


def test_existing_objects_reused_nothing_created() -> None:
    pg = plan_gang(job(), api_version=A2).objects[1]
    pg["metadata"]["uid"] = "pg-uid"
    plan = plan_gang(job(status={"startTime": "t"}), [_workload(), pg], api_version=A2)
    assert plan.objects == []
    assert plan.pod_template_patches  # pods keep joining the existing gang


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param([_workload(controller_uid=None)], id="observed/byo-workload-without-owner"),
        pytest.param([_workload(controller_uid="other")], id="kep5547/workload-owned-by-other"),
        pytest.param([_workload(templates=2)], id="kep5547/unsupported-structure"),
        pytest.param([_workload(uid="a"), _workload(uid="b")], id="kep5547/ambiguous"),
    ],
)
def test_v1alpha2_fallbacks_to_default_scheduling(existing: list) -> None:
    plan = plan_gang(job(), existing, api_version=A2)
    assert plan.objects == [] and plan.pod_template_patches == {}


def test_long_job_name_is_explained_not_emitted() -> None:
    # 58 characters make "<job>-pgt-0" 64 long: upstream retries forever, we emit nothing.
    plan = plan_gang(job("j" * 58), api_version=A2)
    assert plan.objects == [] and plan.warnings
    assert len(plan_gang(job("j" * 57), api_version=A2).objects) == 2


@pytest.mark.parametrize(
    ("field", "obj"),
    [
        ("metadata.name", {**job(), "metadata": {"generateName": "t-", "uid": UID}}),
        ("metadata.uid", {**job(), "metadata": {"name": "t"}}),
        ("kind", {"kind": "Pod"}),
        ("spec.parallelism", job(parallelism="4")),  # type: ignore[arg-type]
    ],
)
def test_unplannable_input_names_the_field(field: str, obj: dict) -> None:
    with pytest.raises(InvalidInput) as err:
        plan_gang(obj, api_version=A2)
    assert err.value.errors[0].field == field


def test_v1alpha1_projects_136_rules_onto_embedded_groups() -> None:
    plan = plan_gang(job(), api_version=A1)
    assert names_of(plan.objects) == [("Workload", WL)]
    assert plan.objects[0]["spec"]["podGroups"] == [
        {"name": "train-pgt-0", "policy": {"gang": {"minCount": 4}}}
    ]
    assert plan.pod_template_patches["train"] == {
        "spec": {"workloadRef": {"name": WL, "podGroup": "train-pgt-0"}}
    }


# --- 1.37: explicit spec.scheduling -------------------------------------------------------


def _policy(plan) -> dict:
    return plan.objects[0]["spec"]["podGroupTemplates"][0]["schedulingPolicy"]


@pytest.mark.parametrize(
    ("kwargs", "policy"),
    [
        pytest.param({}, {"basic": {}}, id="kep5547-137/unset-is-basic"),
        pytest.param(
            {"parallelism": 1, "completions": None}, {"basic": {}}, id="kep5547-137/any-job"
        ),
        pytest.param({"scheduling": {}}, {"basic": {}}, id="kep5547-137/policy-nil-is-basic"),
        pytest.param(
            {"scheduling": {"schedulingPolicy": {"gang": {}}}},
            {"gang": {"minCount": 4}},
            id="kep5547-137/gang-defaults-to-parallelism",
        ),
        pytest.param(
            {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}}},
            {"gang": {"minCount": 3}},
            id="kep5547-137/explicit-minCount",
        ),
        pytest.param(
            {"parallelism": 0, "scheduling": {"schedulingPolicy": {"gang": {}}}},
            {"gang": {"minCount": 1}},
            id="kep5547-137/minCount-clamped-to-1",
        ),
    ],
)
def test_v1beta1_root_job_policy(kwargs: dict, policy: dict) -> None:
    plan = plan_gang(job(**kwargs), api_version=B1)
    assert _policy(plan) == policy
    pg = plan.objects[1]
    assert pg["spec"]["workloadRef"] == {"workloadName": WL, "templateName": "train-pgt-0"}
    assert [r["kind"] for r in pg["metadata"]["ownerReferences"]] == ["Job", "Workload"]


def test_v1beta1_copies_blocks_onto_template_and_podgroup() -> None:
    sched = {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": "zone"}]},
        "disruptionMode": {"all": {}},
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus"}],
    }
    plan = plan_gang(job(scheduling=sched), api_version=B1)
    tpl = plan.objects[0]["spec"]["podGroupTemplates"][0]
    pg = plan.objects[1]["spec"]
    for block in (tpl, pg):
        assert block["schedulingConstraints"] == {"topology": [{"key": "zone"}]}
        assert block["disruptionMode"] == {"all": {}}
        assert block["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]


@pytest.mark.parametrize(
    ("sched", "field"),
    [
        pytest.param(
            {"schedulingPolicy": {"gang": {"minCount": 5}}},
            "spec.scheduling.schedulingPolicy.gang.minCount",
            id="kep5547-137/minCount>parallelism",
        ),
        pytest.param(
            {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}},
            "spec.scheduling.disruptionMode",
            id="workloadbuilder/basic+all",
        ),
        pytest.param(
            {"schedulingPolicy": {"basic": {}, "gang": {}}},
            "spec.scheduling.schedulingPolicy",
            id="api/policy-one-of",
        ),
        pytest.param(
            {"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}},
            "spec.scheduling.schedulingConstraints.topology",
            id="api/topology-max-1",
        ),
    ],
)
def test_v1beta1_invalid_scheduling(sched: dict, field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        plan_gang(job(scheduling=sched), api_version=B1)
    assert field in [e.field for e in err.value.errors]


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"scheduling_group": {"podGroupName": "x"}}, id="kep5547-137/byo-podgroup"),
        pytest.param(
            {"owner": owner("CronJob", "cj", api="batch/v1")}, id="kep5547-137/cronjob-is-parent"
        ),
        pytest.param(
            {"owner": owner("JobSet", "js", api="jobset.x-k8s.io/v1alpha2")},
            id="kep5547-137/parent-without-delegation",
        ),
    ],
)
def test_v1beta1_manage_none(kwargs: dict) -> None:
    assert plan_gang(job(**kwargs), api_version=B1).objects == []


def _parent_workload() -> dict:
    return {
        "apiVersion": B1,
        "kind": "Workload",
        "metadata": {"name": "parent-wl", "namespace": "default", "uid": "p"},
        "spec": {
            "controllerRef": {"apiGroup": "example.com", "kind": "Trainer", "name": "t"},
            "podGroupTemplates": [
                {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}
            ],
        },
    }


def test_v1beta1_delegated_job_creates_only_its_podgroup() -> None:
    j = job(
        owner=owner("Trainer", "t", api="example.com/v1"),
        annotations={"scheduling.k8s.io/group-template-name": "workers"},
    )
    plan = plan_gang(j, [_parent_workload()], api_version=B1)
    assert names_of(plan.objects) == [("PodGroup", job_podgroup_name("parent-wl", "workers"))]
    pg = plan.objects[0]
    assert [r["kind"] for r in pg["metadata"]["ownerReferences"]] == ["Job"]
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    # Without the parent's Workload: nothing yet.
    assert plan_gang(j, [], api_version=B1).objects == []


def test_v1beta1_min_count_change_updates_owned_objects() -> None:
    created = plan_gang(job(scheduling={"schedulingPolicy": {"gang": {}}}), api_version=B1)
    wl, pg = created.objects
    wl["metadata"]["uid"], pg["metadata"]["uid"] = "w", "p"
    resized = job(parallelism=6, completions=6, scheduling={"schedulingPolicy": {"gang": {}}})
    plan = plan_gang(resized, [wl, pg], api_version=B1)
    assert plan.objects == []
    assert [(u["kind"], u["uid"]) for u in plan.updates] == [("Workload", "w"), ("PodGroup", "p")]
    assert plan.updates[1]["patch"] == {"spec": {"schedulingPolicy": {"gang": {"minCount": 6}}}}


def test_v1beta1_ignores_byo_workload_and_creates_its_own() -> None:
    # MISMATCH gang.md 5b: the KEP says "use it", the 1.37 code ignores it.
    byo = _workload(controller_uid=None)
    byo["apiVersion"] = B1
    plan = plan_gang(job(), [byo], api_version=B1)
    assert names_of(plan.objects)[0] == ("Workload", WL)


# --- parallelism freeze -------------------------------------------------------------------


def test_v1alpha2_rejects_parallelism_change_on_gang_job() -> None:
    old, new = job(), job(parallelism=5)
    errors = validate_job_update(new, old, api_version=A2)
    assert [e.field for e in errors] == ["spec.parallelism"]
    assert errors[0].message.endswith(
        f'cannot change parallelism for a Job referencing gang-scheduled PodGroup "{PG}"'
    )


def test_v1alpha2_allows_parallelism_change_on_non_gang_job() -> None:
    old, new = job(indexed=False), job(indexed=False, parallelism=5)
    assert validate_job_update(new, old, api_version=A2) == []


def test_v1alpha2_freeze_reads_existing_podgroups_when_given() -> None:
    pg = plan_gang(job(), api_version=A2).objects[1]
    assert validate_job_update(job(parallelism=5), job(), A2, existing=[]) == []
    assert validate_job_update(job(parallelism=5), job(), A2, existing=[pg])


def test_v1beta1_lifts_the_freeze_but_guards_scheduling() -> None:
    gang = {"schedulingPolicy": {"gang": {"minCount": 4}}}
    assert validate_job_update(job(parallelism=8, scheduling=gang), job(scheduling=gang)) == []
    errors = validate_job_update(job(parallelism=2, scheduling=gang), job(scheduling=gang))
    assert [e.field for e in errors] == ["spec.scheduling.schedulingPolicy.gang.minCount"]
    errors = validate_job_update(
        job(scheduling={"schedulingPolicy": {"basic": {}}}), job(scheduling=gang)
    )
    assert [e.field for e in errors] == ["spec.scheduling.schedulingPolicy"]
    assert validate_job_update(job(), job(scheduling=gang))[0].field == "spec.scheduling"
