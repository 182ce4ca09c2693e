"""validate_update: CEL transition rules (spec §3.2), the webhook's update rules (§3.4) and
the Independent-mode rules, each row editing a stored (defaulted, valid) JobSet."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from decider.core.admission import default_jobset, validate_create, validate_update

from .jobsets import chain, delete, jobset, pod_spec, put, rjob

INDEPENDENT = "jobset.sigs.k8s.io/reconciliation-mode"
SKIP_SUSPEND = "jobset.sigs.k8s.io/skip-suspend-reconciliation"
ELASTIC = {"ElasticJobSet": True}


def stored(**spec: Any) -> dict[str, Any]:
    """A JobSet as the API server stores it after a successful create."""
    js = default_jobset(
        jobset(
            rjob("leader", 1, parallelism=1, completions=1),
            rjob(
                "worker",
                2,
                parallelism=2,
                completions=2,
                depends_on=[{"name": "leader", "status": "Ready"}],
            ),
            **spec,
        )
    )
    assert validate_create(js) == []
    return js


def _old(**edits: Any):
    """Build the old object with extra spec fields; new starts as a copy of it."""
    return edits


def _terminal(js: dict[str, Any]) -> None:
    js["status"] = {"conditions": [{"type": "Completed", "status": "True"}]}


def _scale(index: int, value: int):
    return chain(
        put(f"spec.replicatedJobs[{index}].template.spec.parallelism", value),
        put(f"spec.replicatedJobs[{index}].template.spec.completions", value),
    )


def _pod_meta_and_scheduling(js: dict[str, Any]) -> None:
    pod = js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    pod["metadata"] = {"labels": {"kueue": "x"}, "annotations": {"a": "b"}}
    pod["spec"]["nodeSelector"] = {"pool": "a"}
    pod["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]


def _swap_rjobs(js: dict[str, Any]) -> None:
    rjobs = js["spec"]["replicatedJobs"]
    rjobs[0], rjobs[1] = rjobs[1], rjobs[0]


def _add_eval(js: dict[str, Any]) -> None:
    deps = [{"name": "leader", "status": "Ready"}, {"name": "worker", "status": "Complete"}]
    js["spec"]["replicatedJobs"].append(rjob("eval", 1, depends_on=deps))


def _reorder_depends_on(js: dict[str, Any]) -> None:
    js["spec"]["replicatedJobs"][2]["dependsOn"].reverse()


# (edit of old, edit of new, gates, field, message)
ERROR_ROWS = [
    pytest.param(
        None,
        put("spec.network.subdomain", "other"),
        None,
        "spec.network",
        "Value is immutable",
        id="cel/network-immutable",
    ),
    pytest.param(
        None,
        put("spec.successPolicy.operator", "Any"),
        None,
        "spec.successPolicy",
        "Value is immutable",
        id="cel/successPolicy-immutable",
    ),
    pytest.param(
        put("spec.failurePolicy", {"maxRestarts": 1}),
        put("spec.failurePolicy.maxRestarts", 2),
        None,
        "spec.failurePolicy",
        "Value is immutable",
        id="cel/failurePolicy-immutable",
    ),
    pytest.param(
        None,
        put("spec.startupPolicy.startupPolicyOrder", "InOrder"),
        None,
        "spec.startupPolicy",
        "Value is immutable",
        id="cel/startupPolicy-immutable",
    ),
    pytest.param(
        put("spec.volumeClaimPolicies", [{"templates": []}]),
        put("spec.volumeClaimPolicies", [{"templates": [], "retentionPolicy": {}}]),
        None,
        "spec.volumeClaimPolicies",
        "Value is immutable",
        id="cel/volumeClaimPolicies-immutable",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[1].dependsOn[0].status", "Complete"),
        None,
        "spec.replicatedJobs[1].dependsOn",
        "Value is immutable",
        id="cel/dependsOn-immutable",
    ),
    pytest.param(
        None,
        chain(put("spec.startupPolicy", {"startupPolicyOrder": "InOrder"})),
        None,
        "spec",
        "StartupPolicy and DependsOn APIs are mutually exclusive",
        id="cel/startupPolicy-dependsOn-exclusive-on-update",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[1].replicas", "3"),
        None,
        "spec.replicatedJobs[1].replicas",
        'spec.replicatedJobs[1].replicas in body must be of type integer: "string"',
        id="schema/replicas-type-on-update",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[1].replicas", 3),
        None,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/replicas-immutable",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[1].name", "workers"),
        None,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/rjob-rename",
    ),
    pytest.param(
        None,
        _swap_rjobs,
        None,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/rjob-reorder",
    ),
    pytest.param(
        _add_eval,
        _reorder_depends_on,
        None,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/dependsOn-order-is-compared-by-webhook",
    ),
    pytest.param(
        None,
        _pod_meta_and_scheduling,
        None,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/pod-template-immutable-while-running",
    ),
    pytest.param(
        put("spec.suspend", True),
        put("spec.replicatedJobs[1].template.spec.template.spec.containers[0].image", "other"),
        None,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/containers-immutable-even-when-suspended",
    ),
    pytest.param(
        put("spec.managedBy", "a.io/x"),
        put("spec.managedBy", "b.io/x"),
        None,
        "spec.managedBy",
        "field is immutable",
        id="webhook/managedBy-immutable",
    ),
    pytest.param(
        None,
        put("spec.managedBy", "a.io/x"),
        None,
        "spec.managedBy",
        "field is immutable",
        id="webhook/managedBy-cannot-be-set-later",
    ),
    pytest.param(
        None,
        _scale(1, 4),
        None,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/elastic-needs-gate",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[1].template.spec.parallelism", 0),
        ELASTIC,
        "spec.replicatedJobs[1].template.spec.parallelism",
        "parallelism must be >= 1",
        id="webhook/elastic-parallelism-min",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[1].template.spec.completions", 0),
        ELASTIC,
        "spec.replicatedJobs[1].template.spec.completions",
        "completions must be >= 1",
        id="webhook/elastic-completions-min",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[1].template.spec.parallelism", 3),
        ELASTIC,
        "spec.replicatedJobs[1].template.spec.completions",
        "completions must be equal to parallelism for Elastic Indexed Jobs",
        id="webhook/elastic-completions-equal-parallelism",
    ),
    pytest.param(
        _terminal,
        _scale(1, 4),
        ELASTIC,
        "spec.replicatedJobs[1].template.spec",
        "Cannot mutate parallelism or completions when JobSet is in a terminal state "
        "(Completed or Failed)",
        id="webhook/elastic-not-when-terminal",
    ),
    pytest.param(
        put("spec.replicatedJobs[1].template.spec.completionMode", "NonIndexed"),
        _scale(1, 4),
        ELASTIC,
        "spec.replicatedJobs",
        "field is immutable",
        id="webhook/elastic-only-indexed",
    ),
    pytest.param(
        None,
        put("metadata.annotations", {INDEPENDENT: "Independent"}),
        None,
        f"metadata.annotations[{INDEPENDENT}]",
        "field is immutable",
        id="independent/annotation-cannot-be-added",
    ),
    pytest.param(
        put("metadata.annotations", {SKIP_SUSPEND: "true"}),
        delete("metadata.annotations"),
        None,
        f"metadata.annotations[{SKIP_SUSPEND}]",
        "field is immutable",
        id="independent/annotation-cannot-be-removed",
    ),
    pytest.param(
        put("metadata.annotations", {INDEPENDENT: "Independent"}),
        put("spec.suspend", True),
        None,
        "spec.suspend",
        "must not be set when the JobSet's reconciliation mode is Independent",
        id="independent/suspend-stays-unset",
    ),
    # No mutating webhook on update: the CRD's required fields are required as sent.
    pytest.param(
        None,
        delete("spec.replicatedJobs[0].name"),
        None,
        "spec.replicatedJobs[0].name",
        "Required value",
        id="crd/rjob-name-required-no-webhook-on-update",
    ),
    pytest.param(
        None,
        delete("spec.replicatedJobs[0].template"),
        None,
        "spec.replicatedJobs[0].template",
        "Required value",
        id="crd/rjob-template-required-no-webhook-on-update",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[0].name", ""),
        None,
        "spec.replicatedJobs[0].name",
        "Required value",
        id="deliberate/rjob-name-empty",
    ),
    # self.templates.all(t, !has(t.metadata.namespace) || ...) selects t.metadata: a template
    # without one fails to evaluate (the create's webhook writes metadata: {}; an update not).
    pytest.param(
        put("spec.volumeClaimPolicies", [{"templates": [{"metadata": {"name": "d"}}]}]),
        delete("spec.volumeClaimPolicies[0].templates[0].metadata"),
        None,
        "spec.volumeClaimPolicies[0]",
        "no such key: metadata evaluating rule: namespace cannot be set for "
        "VolumeClaimPolicies templates",
        id="cel/volumeClaimPolicies-template-without-metadata-no-such-key",
    ),
    pytest.param(
        None,
        put("spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources",
            {"limits": {"cpu": "two"}}),
        None,
        "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits.cpu",
        "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits.cpu"
        " in body should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))",
        id="crd/quantity-pattern-no-webhook-on-update",
    ),
]


def _apply(edit: Any, js: dict[str, Any]) -> None:
    if edit is not None:
        edit(js)


@pytest.mark.parametrize(("old_edit", "new_edit", "gates", "field", "message"), ERROR_ROWS)
def test_update_error(old_edit, new_edit, gates, field, message):
    old = stored()
    _apply(old_edit, old)
    new = copy.deepcopy(old)
    new_edit(new)
    errors = validate_update(new, old, gates)
    assert any(e.field == field and message in e.message for e in errors), errors


VALID_ROWS = [
    pytest.param(None, lambda js: None, None, id="valid/no-change"),
    pytest.param(None, put("spec.suspend", True), None, id="valid/suspend-is-mutable"),
    pytest.param(None, put("spec.ttlSecondsAfterFinished", 30), None, id="valid/ttl-is-mutable"),
    pytest.param(
        put("spec.suspend", True),
        _pod_meta_and_scheduling,
        None,
        id="webhook/pod-scheduling-mutable-while-suspended",
    ),
    pytest.param(
        None,
        chain(put("spec.suspend", True), _pod_meta_and_scheduling),
        None,
        id="webhook/pod-scheduling-mutable-while-being-suspended",
    ),
    pytest.param(
        put("spec.suspend", True),
        chain(put("spec.suspend", False), _pod_meta_and_scheduling),
        None,
        id="webhook/pod-scheduling-mutable-while-being-resumed",
    ),
    pytest.param(None, _scale(1, 4), ELASTIC, id="webhook/elastic-scale-indexed"),
    pytest.param(
        None, delete("spec.network"), None, id="cel/transition-rule-skipped-when-field-removed"
    ),
    pytest.param(
        put("metadata.annotations", {INDEPENDENT: "Independent"}),
        put("metadata.labels", {"team": "a"}),
        None,
        id="independent/other-metadata-changes-allowed",
    ),
    pytest.param(None, put("status", {"restarts": 3}), None, id="valid/status-not-judged"),
]


@pytest.mark.parametrize(("old_edit", "new_edit", "gates"), VALID_ROWS)
def test_update_valid(old_edit, new_edit, gates):
    old = stored()
    _apply(old_edit, old)
    new = copy.deepcopy(old)
    new_edit(new)
    before = (copy.deepcopy(new), copy.deepcopy(old))
    assert validate_update(new, old, gates) == []
    assert (new, old) == before, "validate_update must not mutate its inputs"


def test_cel_compares_dependsOn_as_a_list_map():
    # CEL ignores the order of a list-type map; only the webhook's typed compare sees it.
    old = stored()
    _add_eval(old)
    new = copy.deepcopy(old)
    _reorder_depends_on(new)
    fields = [e.field for e in validate_update(new, old)]
    assert fields == ["spec.replicatedJobs"]


def test_update_applies_structural_defaults_to_both_sides():
    # An old object stored before a CRD default existed reads back with the default.
    old = stored()
    del old["spec"]["replicatedJobs"][0]["groupName"]
    new = copy.deepcopy(old)
    new["spec"]["replicatedJobs"][0]["groupName"] = "default"
    assert validate_update(new, old) == []
    assert pod_spec(new, 0)["restartPolicy"] == "OnFailure"
