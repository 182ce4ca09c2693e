"""spec.scheduling at admission, ported from upstream's tests of jobset@4f0cbded:
pkg/webhooks/scheduling_validation_test.go, the validateScheduling rules of
pkg/webhooks/jobset_webhook.go (and its ValidateUpdate), and the CRD-rule tables of
test/integration/scheduling/scheduling_test.go. Ids name the upstream test (or rule)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from decider.core.admission import default_jobset, validate_create, validate_update
from decider.core.gang import jobset_facts, was_rules

ROOT = Path(__file__).resolve().parents[2]
ON = {"JobSetWorkloadAwareSchedulingAPI": True}
TREE = {**ON, "JobSetGangOfGangs": True}
GANG: dict[str, Any] = {"gang": {}}
BASIC: dict[str, Any] = {"basic": {}}


def rj(name: str, replicas: int = 1, parallelism: int = 1, **extra: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"restartPolicy": "Never",
                           "containers": [{"name": "c", "image": "busybox"}]}
    if "priority" in extra:
        pod["priorityClassName"] = extra.pop("priority")
    if "group" in extra:
        pod["schedulingGroup"] = extra.pop("group")
    spec: dict[str, Any] = {"parallelism": parallelism, "completions": parallelism,
                            "completionMode": "Indexed", "template": {"spec": pod}}
    if "job_scheduling" in extra:
        spec["scheduling"] = extra.pop("job_scheduling")
    out = {"name": name, "replicas": replicas, "template": {"spec": spec}}
    out.update(extra)
    return out


def js(*rjobs: dict[str, Any], scheduling: Any = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"replicatedJobs": list(rjobs)}
    if scheduling is not None:
        body["scheduling"] = scheduling
    body.update(spec)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "sched", "namespace": "default"}, "spec": body}


def said(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]


def entry(*targets: str, **fields: Any) -> dict[str, Any]:
    return {"targetReplicatedJobs": list(targets), **fields}


# --- validateScheduling (create) ---------------------------------------------------------------

@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(js(rj("workers"), scheduling={}), [],
                 id="validateScheduling/default-top-level-gang"),
    pytest.param(js(scheduling={}),
                 ["spec.replicatedJobs: must contain "
                  "at least one replicatedJob when scheduling is configured"],
                 id="validateScheduling/replicatedJobs-empty"),
    pytest.param(js(rj("workers", job_scheduling={"schedulingPolicy": GANG}), scheduling={}),
                 ["spec.replicatedJobs[0].template.spec.scheduling: Forbidden: cannot be set when "
                  "spec.scheduling is configured; use spec.scheduling instead"],
                 id="validateScheduling/job-template-scheduling-forbidden"),
    pytest.param(js(rj("workers", group={"podGroupName": "mine"}), scheduling={}),
                 ["spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup: Forbidden: "
                  "cannot be set directly when spec.scheduling is configured; the JobSet "
                  "controller manages this field"],
                 id="validateScheduling/pod-schedulingGroup-forbidden"),
    pytest.param(js(rj("driver"), rj("workers"),
                    scheduling={"replicatedJobs": [entry("driver")]}),
                 ['spec.replicatedJobs[1].name: must be targeted by a '
                  "replicatedJobs entry when spec.scheduling does not set a top-level "
                  "schedulingPolicy, schedulingConstraints, or disruptionMode"],
                 id="validateScheduling/untargeted-replicatedJob"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry("workers", "nope")]}),
                 ["spec.scheduling.replicatedJobs[0].targetReplicatedJobs[1]: does not reference a "
                  "valid replicatedJob name"],
                 id="validateScheduling/unknown-target"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry("workers"),
                                                                  entry("workers")]}),
                 [
                     # Both entries compile to one group name: the builder says so first.
                     'spec.scheduling.replicatedJobs: '
                     'generated scheduling group name "workers-024a825559" is not unique: rename '
                     "the colliding ReplicatedJob or replicatedJobs targetReplicatedJobs "
                     "grouping so generated PodGroupTemplate names don't collide",
                     "spec.scheduling.replicatedJobs[1].targetReplicatedJobs[0]: is targeted by "
                     "more than one replicatedJobs entry"],
                 id="validateScheduling/target-in-two-entries"),
    pytest.param(js(rj("driver"), rj("workers", priority="high"), scheduling={}),
                 ['spec.replicatedJobs[1].template.spec.template.spec.priorityClassName: '
                  'must match "" when top-level gang scheduling is used'],
                 id="validateScheduling/top-level-one-priorityClassName"),
    pytest.param(js(rj("driver", priority="low"), rj("workers", priority="high"),
                    scheduling={"replicatedJobs": [entry("driver", "workers")]}),
                 ['spec.scheduling.replicatedJobs[0].targetReplicatedJobs[1]: priorityClassName '
                  '"high" must match "low" of the other ReplicatedJobs sharing this PodGroup'],
                 id="validateScheduling/shared-podgroup-one-priorityClassName"),
    pytest.param(js(rj("driver", priority="low"), rj("workers", priority="high"),
                    scheduling={"replicatedJobs": [entry("driver"), entry("workers")]}), [],
                 id="validateScheduling/separate-podgroups-may-differ-in-priority"),
    pytest.param(js(rj("workers", 1, 2), scheduling={"replicatedJobs": [
        entry("workers", job={"schedulingPolicy": {"gang": {"minCount": 3}}})]}),
                 ["spec.scheduling.replicatedJobs[0].job.schedulingPolicy.gang.minCount: cannot "
                  'exceed the per-Job pod count (parallelism) of replicatedJob "workers" (2)'],
                 id="validateSchedulingGangMinCounts/job-minCount-above-parallelism"),
    pytest.param(js(rj("workers", 1, 2), scheduling={"replicatedJobs": [
        entry("workers", job={"schedulingPolicy": {"gang": {"minCount": 2}}})]}), [],
                 id="validateSchedulingGangMinCounts/job-minCount-at-parallelism"),
    pytest.param(js(rj("workers"), scheduling={"schedulingPolicy": BASIC,
                                               "disruptionMode": {"all": {}}}),
                 ["spec.scheduling.disruptionMode: the disruptionMode `all` is not supported "
                  "with the Basic scheduling policy"],
                 id="workloadbuilder.Validate/basic-with-disruptionMode-all"),
    pytest.param(js(rj("workers"), scheduling={"schedulingConstraints": {"topology": [
        {"key": "topology.kubernetes.io/zone"}, {"key": "topology.kubernetes.io/rack"}]}}),
                 ["spec.scheduling.schedulingConstraints.topology: Too many: 2: must have at most "
                  "1 item"],
                 id="workloadbuilder.Validate/topology-at-most-one"),
    pytest.param(js(rj("workers"), scheduling={"schedulingConstraints": {"topology": [
        {"key": "not a label key"}]}}),
                 ["spec.scheduling.schedulingConstraints.topology[0].key: name part must consist "
                  "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character "
                  "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"],
                 id="workloadbuilder.Validate/topology-key-is-a-label-key"),
    pytest.param(js(rj("leader-worker"), rj("leader"), rj("worker"), scheduling={
        "replicatedJobs": [entry("leader", "worker"), entry("leader-worker")]}),
                 ['spec.scheduling.replicatedJobs: '
                  'generated scheduling group name "leader-worker-961ffb54a6" is not unique: '
                  "rename the colliding ReplicatedJob or replicatedJobs targetReplicatedJobs "
                  "grouping so generated PodGroupTemplate names don't collide"],
                 id="duplicateSchedulingGroupNameError/group-vs-entry-of-the-joined-name"),
])
def test_validate_scheduling_on_create(obj: dict[str, Any], expected: list[str]) -> None:
    assert said(validate_create(obj, ON)) == expected


@pytest.mark.parametrize(("replicas", "expected"), [
    pytest.param(8, [], id="TestSchedulingRejectsTooManyPodGroupTemplates/at-the-limit"),
    pytest.param(16, ["spec.scheduling: Too many: 16: must have at most 8 items"],
                 id="TestSchedulingRejectsTooManyPodGroupTemplates/over-the-limit"),
])
def test_too_many_pod_group_templates(replicas: int, expected: list[str]) -> None:
    obj = js(rj("workers", replicas), scheduling={"replicatedJobs": [entry("workers", job={})]})
    assert said(validate_create(obj, ON)) == expected


@pytest.mark.parametrize(("parallelism", "ok"), [
    pytest.param(1000, True, id="TestSchedulingRejectsTotalPodCountOverflow/total-within-int32"),
    pytest.param(2**31 - 1, False,
                 id="TestSchedulingRejectsTotalPodCountOverflow/total-exceeding-int32"),
])
def test_total_pod_count_overflow(parallelism: int, ok: bool) -> None:
    obj = js(rj("rj-0", 1, parallelism), rj("rj-1", 1, parallelism), scheduling={})
    errors = said(validate_create(obj, ON))
    if ok:
        assert errors == []
    else:
        assert errors == ["spec.replicatedJobs: the total represented "
                          "pod count across all replicatedJobs must not exceed 2147483647 when "
                          "top-level gang scheduling is used"]


# --- TestSchedulingWithSequencedStartup: the webhook accepts, the CRD refuses --------------------

_STARTUPS = ("AnyOrder", "DependsOn", "InOrder", "empty DependsOn")
_SCHEDULINGS: dict[str, Any] = {
    "no scheduling": None,
    "default top-level gang": {},
    "top-level Basic": {"schedulingPolicy": BASIC},
    "top-level Gang without minGroupCount": {"schedulingPolicy": GANG},
    "top-level Gang with minGroupCount": {"schedulingPolicy": {"gang": {"minGroupCount": 1}}},
    "explicit per-RJ gangs": {"replicatedJobs": [entry("driver", schedulingPolicy=GANG),
                                                 entry("workers", schedulingPolicy=GANG)]},
}


def _sequenced(startup: str, scheduling: Any) -> dict[str, Any]:
    driver, workers = rj("driver"), rj("workers")
    extra: dict[str, Any] = {}
    if startup == "DependsOn":
        workers["dependsOn"] = [{"name": "driver", "status": "Ready"}]
    elif startup == "InOrder":
        extra["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    elif startup == "empty DependsOn":
        workers["dependsOn"] = []
    return js(driver, workers, scheduling=copy.deepcopy(scheduling), **extra)


@pytest.mark.parametrize("name", list(_SCHEDULINGS))
@pytest.mark.parametrize("startup", _STARTUPS)
def test_webhook_accepts_every_sequenced_startup_combination(startup: str, name: str) -> None:
    """TestSchedulingWithSequencedStartup: the webhook itself must not re-introduce the CRD's
    rule (its create and suspended-update checks both pass)."""
    obj = default_jobset(_sequenced(startup, _SCHEDULINGS[name]), ON)
    if name == "default top-level gang":
        assert obj["spec"]["scheduling"] == {"schedulingPolicy": GANG}
    f = jobset_facts.read_jobset(obj, need_identity=False)
    assert was_rules.webhook_errors(f, obj["spec"]["replicatedJobs"], ON) == []


@pytest.mark.parametrize("name", ["default top-level gang", "top-level Basic",
                                  "top-level Gang without minGroupCount"])
@pytest.mark.parametrize("startup", ["DependsOn", "InOrder"])
def test_crd_refuses_top_level_scheduling_with_sequenced_startup(startup: str,
                                                                 name: str) -> None:
    """integration: should reject top-level scheduling with sequenced startup (on create, and on
    an update of a suspended JobSet created with per-ReplicatedJob entries)."""
    bad = _sequenced(startup, _SCHEDULINGS[name])
    errors = said(validate_create(bad, ON))
    assert any(e.startswith("spec.scheduling: ") and
               "cannot be set with DependsOn or InOrder startup" in e for e in errors), errors
    stored = default_jobset(_sequenced(startup, _SCHEDULINGS["explicit per-RJ gangs"]), ON)
    stored["spec"]["suspend"] = True
    assert validate_create(stored, ON) == []
    stored["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    new = copy.deepcopy(stored)
    new["spec"]["scheduling"] = copy.deepcopy(_SCHEDULINGS[name])
    assert any("cannot be set with DependsOn or InOrder startup" in e
               for e in said(validate_update(new, stored, ON)))


@pytest.mark.parametrize("startup", _STARTUPS)
def test_per_replicated_job_entries_are_fine_with_sequenced_startup(startup: str) -> None:
    obj = _sequenced(startup, _SCHEDULINGS["explicit per-RJ gangs"])
    assert validate_create(obj, ON) == []


# --- the CRD's rules (integration: "via CEL validation") ----------------------------------------

@pytest.mark.parametrize(("obj", "fragment"), [
    pytest.param(js(rj("workers"), scheduling={"schedulingPolicy": {
        "gang": {"minGroupCount": 2}}}), "minGroupCount is not supported",
        id="CEL/top-level-composite-gang-minGroupCount-is-not-supported"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry(
        "workers", schedulingPolicy={"gang": {"minGroupCount": 2}})]}),
        "minGroupCount is not supported",
        id="CEL/per-ReplicatedJob-composite-gang-minGroupCount-is-not-supported"),
    pytest.param(js(rj("workers"), scheduling={"schedulingPolicy": {"basic": {}, "gang": {}}}),
                 "exactly one of basic or gang must be set",
                 id="CEL/top-level-composite-policy-with-both-basic-and-gang"),
    pytest.param(js(rj("workers"), scheduling={"schedulingPolicy": {}}),
                 "exactly one of basic or gang must be set",
                 id="CEL/top-level-composite-policy-with-neither-basic-nor-gang"),
    pytest.param(js(rj("workers", 1, 2), scheduling={"replicatedJobs": [entry(
        "workers", job={"schedulingPolicy": {"gang": {"minCount": -1}}})]}),
        "minCount must be a positive integer",
        id="CEL/per-Job-pod-policy-gang-minCount-must-be-positive"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry(
        "workers", job={"schedulingPolicy": {"basic": {}, "gang": {}}})]}),
        "exactly one of basic or gang must be set",
        id="CEL/per-Job-pod-policy-with-both-basic-and-gang"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry(
        "workers", job={"schedulingPolicy": {}})]}),
        "exactly one of basic or gang must be set",
        id="CEL/per-Job-pod-policy-with-neither-basic-nor-gang"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry(
        "workers", schedulingPolicy={"basic": {}, "gang": {}})]}),
        "exactly one of basic or gang must be set",
        id="CEL/per-ReplicatedJob-composite-policy-with-both-basic-and-gang"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry(
        "workers", schedulingPolicy={})]}),
        "exactly one of basic or gang must be set",
        id="CEL/per-ReplicatedJob-composite-policy-with-neither-basic-nor-gang"),
    pytest.param(js(rj("workers"), scheduling={"schedulingPolicy": GANG,
                                               "replicatedJobs": [entry("workers")]}),
                 "cannot be set together with replicatedJobs",
                 id="CEL/top-level-policy-cannot-be-combined-with-replicatedJobs"),
    pytest.param(js(rj("workers"), rj("driver"), scheduling={"replicatedJobs": [entry(
        "workers", "driver", job={})]}), "when job is set",
        id="CEL/job-requires-exactly-one-targetReplicatedJobs"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry(
        "workers", schedulingPolicy=GANG, job={})]}), "when job is set",
        id="CEL/job-cannot-be-combined-with-composite-schedulingPolicy"),
    pytest.param(js(rj("workers"), scheduling={"disruptionMode": {"single": {}, "all": {}}}),
                 "exactly one of single or all must be set", id="CEL/disruptionMode-union"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry("workers", job={
        "resourceClaims": [{"name": "c", "resourceClaimName": "a",
                            "resourceClaimTemplateName": "b"}]})]}),
        "exactly one of resourceClaimName or resourceClaimTemplateName must be set",
        id="CEL/resourceClaim-union"),
])
@pytest.mark.parametrize("gates", [pytest.param(ON, id="gate-on"), pytest.param({},
                                                                                id="gate-off")])
def test_crd_rules_refuse(obj: dict[str, Any], fragment: str, gates: dict[str, bool]) -> None:
    """The CRD's rules run before any webhook and whatever the JobSet gates."""
    errors = said(validate_create(obj, gates))
    assert any(fragment in e for e in errors), errors
    assert not any("Forbidden: cannot be set when JobSetWorkload" in e for e in errors)


@pytest.mark.parametrize("obj", [
    pytest.param(js(rj("workers"), scheduling={"schedulingPolicy": GANG}),
                 id="CEL-ok/top-level-gang-policy-without-minGroupCount"),
    pytest.param(js(rj("workers"), scheduling={"schedulingPolicy": BASIC}),
                 id="CEL-ok/top-level-basic-policy"),
    pytest.param(js(rj("workers"), scheduling={"replicatedJobs": [entry(
        "workers", schedulingPolicy=GANG)]}),
        id="CEL-ok/per-ReplicatedJob-composite-gang-policy"),
    pytest.param(js(rj("workers", 1, 2), scheduling={"replicatedJobs": [entry(
        "workers", job={"schedulingPolicy": {"gang": {"minCount": 2}}})]}),
        id="CEL-ok/per-Job-gang-policy-with-explicit-positive-minCount-and-a-single-target"),
])
def test_crd_rules_accept(obj: dict[str, Any]) -> None:
    assert validate_create(obj, ON) == []


# --- the gate and the default ------------------------------------------------------------------

def test_gate_off_forbids_the_field() -> None:
    assert said(validate_create(js(rj("workers"), scheduling={}), {})) == [
        "spec.scheduling: Forbidden: cannot be set when JobSetWorkloadAwareSchedulingAPI feature "
        "gate is disabled"]


@pytest.mark.parametrize(("scheduling", "gates", "expected"), [
    pytest.param({}, ON, {"schedulingPolicy": GANG}, id="Default/empty-gets-gang"),
    pytest.param({"schedulingConstraints": {"topology": [{"key": "z"}]}}, ON,
                 {"schedulingConstraints": {"topology": [{"key": "z"}]},
                  "schedulingPolicy": GANG}, id="Default/no-policy-gets-gang"),
    pytest.param({"schedulingPolicy": BASIC}, ON, {"schedulingPolicy": BASIC},
                 id="Default/explicit-basic-kept"),
    pytest.param({"replicatedJobs": [entry("workers")]}, ON,
                 {"replicatedJobs": [entry("workers")]}, id="Default/entries-get-no-top-policy"),
    pytest.param({}, {}, {}, id="Default/gate-off-leaves-it-alone"),
])
def test_defaulting(scheduling: dict[str, Any], gates: dict[str, bool],
                    expected: dict[str, Any]) -> None:
    out = default_jobset(js(rj("workers"), scheduling=scheduling), gates)
    assert out["spec"]["scheduling"] == expected
    assert "minCount" not in json.dumps(out["spec"]["scheduling"])


# --- ValidateUpdate -----------------------------------------------------------------------------

def _stored(scheduling: Any, *, suspended: bool, condition: bool) -> dict[str, Any]:
    obj = default_jobset(js(rj("driver"), rj("workers", 2, 2), scheduling=scheduling), ON)
    obj["spec"]["suspend"] = suspended
    if condition:
        obj["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    return obj


PER_RJ = {"replicatedJobs": [entry("driver", schedulingPolicy=BASIC), entry("workers")]}


@pytest.mark.parametrize(("old", "new_scheduling", "new_suspend", "expected"), [
    pytest.param(_stored({}, suspended=False, condition=False), PER_RJ, False,
                 ['spec.scheduling: field is immutable'],
                 id="ValidateUpdate/running-change-is-immutable"),
    pytest.param(_stored({}, suspended=True, condition=True), PER_RJ, True, [],
                 id="ValidateUpdate/change-while-suspended"),
    pytest.param(_stored({}, suspended=True, condition=False), PER_RJ, True,
                 ['spec.scheduling: field is immutable'],
                 id="ValidateUpdate/suspended-condition-not-yet-true"),
    pytest.param(_stored({}, suspended=True, condition=True), PER_RJ, False,
                 ['spec.scheduling: field is immutable'],
                 id="ValidateUpdate/not-in-the-update-that-resumes"),
    pytest.param(_stored({}, suspended=True, condition=True), None, True,
                 ["spec.scheduling: Forbidden: cannot be removed once set"],
                 id="ValidateUpdate/removal-forbidden"),
    pytest.param(_stored(None, suspended=True, condition=True), {}, True, [],
                 id="ValidateUpdate/added-to-a-suspended-jobset"),
    pytest.param(_stored(None, suspended=False, condition=False), {}, False,
                 ['spec.scheduling: field is immutable'],
                 id="ValidateUpdate/added-to-a-running-jobset"),
    pytest.param(_stored({}, suspended=True, condition=True),
                 {"replicatedJobs": [entry("driver", "nope"), entry("workers")]}, True,
                 ["spec.scheduling.replicatedJobs[0].targetReplicatedJobs[1]: does not reference a "
                  "valid replicatedJob name"],
                 id="ValidateUpdate/a-change-is-validated-as-on-create"),
    pytest.param(_stored({}, suspended=False, condition=False), {"schedulingPolicy": GANG},
                 False, [], id="ValidateUpdate/unchanged-is-fine"),
])
def test_validate_update(old: dict[str, Any], new_scheduling: Any, new_suspend: bool,
                         expected: list[str]) -> None:
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = new_suspend
    if new_scheduling is None:
        new["spec"].pop("scheduling", None)
    else:
        new["spec"]["scheduling"] = copy.deepcopy(new_scheduling)
    assert said(validate_update(new, old, ON)) == expected


def test_elastic_update_rechecks_the_job_quorum() -> None:
    """ValidateUpdate with ElasticJobSet: scaling parallelism below a Job's minCount is
    refused (the minCount cannot follow: spec.scheduling is immutable while running)."""
    sched = {"replicatedJobs": [entry("driver"), entry(
        "workers", job={"schedulingPolicy": {"gang": {"minCount": 2}}})]}
    old = _stored(sched, suspended=False, condition=False)
    new = copy.deepcopy(old)
    spec = new["spec"]["replicatedJobs"][1]["template"]["spec"]
    spec["parallelism"] = spec["completions"] = 1
    gates = {**ON, "ElasticJobSet": True}
    assert said(validate_update(new, old, gates)) == [
        "spec.scheduling.replicatedJobs[1].job.schedulingPolicy.gang.minCount: "
        'cannot exceed the per-Job pod count (parallelism) of replicatedJob "workers" (1)']


# --- the superseded draft's spelling -----------------------------------------------------------

@pytest.mark.parametrize(("scheduling", "field", "hint"), [
    pytest.param({"schedulingPolicy": {"gang": {"minCount": 7}}},
                 "spec.scheduling.schedulingPolicy.gang.minCount",
                 "job.schedulingPolicy.gang.minCount", id="draft/top-level-minCount"),
    pytest.param({"replicatedJobs": [entry("driver", schedulingPolicy={"gang": {"minCount": 1}}),
                                     entry("workers")]},
                 "spec.scheduling.replicatedJobs[0].schedulingPolicy.gang.minCount",
                 "derived from the pods it covers", id="draft/entry-minCount"),
    pytest.param({"replicatedJobs": [entry("driver", resourceClaims=[]), entry("workers")]},
                 "spec.scheduling.replicatedJobs[0].resourceClaims",
                 "spec.scheduling.replicatedJobs[].job.resourceClaims",
                 id="draft/entry-resourceClaims"),
    pytest.param({"policy": GANG}, "spec.scheduling.policy", "renamed schedulingPolicy",
                 id="draft/policy"),
    pytest.param({"replicatedJobPolicies": []}, "spec.scheduling.replicatedJobPolicies",
                 "renamed spec.scheduling.replicatedJobs", id="draft/replicatedJobPolicies"),
])
@pytest.mark.parametrize("gates", [pytest.param(ON, id="gate-on"), pytest.param({},
                                                                                id="gate-off")])
def test_superseded_spelling_names_the_new_one(scheduling: dict[str, Any], field: str,
                                               hint: str, gates: dict[str, bool]) -> None:
    errors = validate_create(js(rj("driver"), rj("workers"), scheduling=scheduling), gates)
    assert [e.field for e in errors] == [field]
    assert errors[0].message.startswith(f'strict decoding error: unknown field "{field}"; ')
    assert hint in errors[0].message


# --- JobSetGangOfGangs lifts two alpha rules ----------------------------------------------------

@pytest.mark.parametrize(("scheduling", "expected"), [
    pytest.param({"schedulingPolicy": {"gang": {"minGroupCount": 2}},
                  "replicatedJobs": [entry("driver"), entry("workers")]}, [],
                 id="tree/top-level-with-entries-and-minGroupCount"),
    pytest.param({"schedulingPolicy": {"gang": {"minGroupCount": 3}},
                  "replicatedJobs": [entry("driver"), entry("workers")]},
                 ["spec.scheduling.schedulingPolicy.gang.minGroupCount: "
                  "cannot exceed the number of child groups (2)"],
                 id="tree/minGroupCount-above-its-children"),
    pytest.param({"replicatedJobs": [entry("driver"), entry(
        "workers", disruptionMode={"all": {}}, job={"schedulingPolicy": {"gang": {}}})]}, [],
        id="tree/entry-blocks-beside-job-configure-its-CompositePodGroup"),
    pytest.param({"replicatedJobs": [entry("driver"), entry(
        "workers", schedulingPolicy={"gang": {"minGroupCount": 0}})]},
        ["spec.scheduling.replicatedJobs[1].schedulingPolicy.gang: minGroupCount must be a "
         "positive integer"], id="tree/minGroupCount-positive"),
])
def test_gang_of_gangs_admission(scheduling: dict[str, Any], expected: list[str]) -> None:
    obj = js(rj("driver"), rj("workers", 2, 2), scheduling=scheduling)
    assert said(validate_create(obj, TREE)) == expected
    if not expected:
        assert any("cannot be set together with replicatedJobs" in e or
                   "minGroupCount is not supported" in e or "when job is set" in e
                   for e in said(validate_create(obj, ON)))


# --- through the CLI, as a user (and the hidden suite) runs it ---------------------------------

def _cli(tmp_path: Path, obj: dict[str, Any], *args: str) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "js.json"
    path.write_text(json.dumps(obj))
    out = subprocess.run([sys.executable, "-m", "decider.cli", "validate", "-f", str(path),
                          "-o", "json", *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    return out.returncode, json.loads(out.stdout)


@pytest.mark.waits
def test_validate_cli_gates_on_and_off(tmp_path: Path) -> None:
    obj = js(rj("workers", 16), scheduling={"replicatedJobs": [entry("workers", job={})]})
    code, out = _cli(tmp_path, obj)
    assert code == 2 and out["errors"] == [{
        "field": "spec.scheduling",
        "message": "Forbidden: cannot be set when JobSetWorkloadAwareSchedulingAPI feature gate "
                   "is disabled"}]
    code, out = _cli(tmp_path, obj, "--feature-gates", "JobSetWorkloadAwareSchedulingAPI=true")
    assert code == 2 and out["errors"] == [
        {"field": "spec.scheduling", "message": "Too many: 16: must have at most 8 items"}]
    obj["spec"]["replicatedJobs"][0]["replicas"] = 4
    obj["spec"]["scheduling"] = {}
    code, out = _cli(tmp_path, obj, "--feature-gates", "JobSetWorkloadAwareSchedulingAPI=true")
    assert code == 0 and out["object"]["spec"]["scheduling"] == {"schedulingPolicy": GANG}
