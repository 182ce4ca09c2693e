"""Per-Job independent suspend (seed 000, KEP-1172's reconciliation mode).

Each test is one row of docs/decisions.md's table "Per-Job suspend: situation -> decision"; the
ids are the row numbers there.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from decider.core import constants as c
from decider.core.admission import validate_create, validate_update
from support.builders import condition, job, jobset, kinds, rjob, rjs, run, service

INDEPENDENT = {c.RECONCILIATION_MODE: c.RECONCILIATION_MODE_INDEPENDENT}
LEGACY = {c.SKIP_SUSPEND_RECONCILIATION: "true"}


def independent(*rjobs, annotations=INDEPENDENT, **spec):
    js = jobset(*rjobs, **spec)
    js["metadata"]["annotations"] = dict(annotations)
    return js


@pytest.mark.parametrize("annotations", [INDEPENDENT, LEGACY], ids=["annotation", "legacy"])
def test_row1_jobs_created_with_the_templates_suspend(annotations) -> None:
    pod = {"spec": {"containers": [{"name": "m"}]}}
    held = rjob("held", 1, pod=pod)
    held["template"]["spec"]["suspend"] = True
    plan = run(independent(rjob("free", 1), held, annotations=annotations))
    created = {a.name: a.object["spec"]["suspend"] for a in plan.actions if a.type == "CreateJob"}
    assert created == {"js-free-0": False, "js-held-0": True}


@pytest.mark.parametrize("annotations", [INDEPENDENT, LEGACY], ids=["annotation", "legacy"])
def test_row2_a_job_suspended_by_someone_else_stays_suspended(annotations) -> None:
    js = independent(rjob("w", 2), annotations=annotations)
    plan = run(js, [job("w", 0, suspend=True), job("w", 1, ready=1)], objects=[service()])
    assert kinds(plan, "ResumeJob") == [] and kinds(plan, "SuspendJob") == []
    assert condition(plan, "Suspended") is None


def test_row2_without_the_annotation_the_same_job_is_resumed() -> None:
    plan = run(jobset(rjob("w", 2)), [job("w", 0, suspend=True), job("w", 1, ready=1)],
               objects=[service()])
    assert kinds(plan, "ResumeJob") == ["js-w-0"]


def test_row3_a_job_resumed_by_someone_else_is_not_suspended_again() -> None:
    js = independent(rjob("w", 1))
    js["spec"]["suspend"] = True  # admission forbids this; the decider still leaves Jobs alone
    plan = run(js, [job("w", 0, suspend=False)], objects=[service()])
    assert kinds(plan, "SuspendJob") == []


def test_row4_status_counts_suspended_jobs() -> None:
    js = independent(rjob("w", 3))
    plan = run(js, [job("w", 0, suspend=True), job("w", 1, suspend=True), job("w", 2, ready=1)],
               objects=[service()])
    assert rjs(plan, "w")["suspended"] == 2
    assert rjs(plan, "w")["ready"] == 1


def test_row5_a_failure_restarts_suspended_jobs_too() -> None:
    js = independent(rjob("a", 1), rjob("b", 1), failurePolicy={"maxRestarts": 3})
    first = run(js, [job("a", 0, suspend=True), job("b", 0, state="failed")],
                objects=[service()])
    assert first.status["restarts"] == 1
    js2 = copy.deepcopy(js)
    js2["status"] = first.status
    second = run(js2, [job("a", 0, suspend=True), job("b", 0, state="failed")],
                 objects=[service()])
    assert sorted(kinds(second, "DeleteJob")) == ["js-a-0", "js-b-0"]
    assert second.status["restarts"] == 1  # counted exactly once


def test_row6_success_policy_on_one_rjob_ignores_suspended_jobs_elsewhere() -> None:
    js = independent(rjob("leader", 1), rjob("workers", 2),
                     successPolicy={"operator": "All", "targetReplicatedJobs": ["leader"]})
    plan = run(js, [job("leader", 0, state="succeeded"), job("workers", 0, suspend=True),
                    job("workers", 1, suspend=True)], objects=[service()])
    assert plan.status["terminalState"] == "Completed"


def test_row7_completion_cleans_up_suspended_jobs() -> None:
    js = independent(rjob("leader", 1), rjob("workers", 2), status={"conditions": [
        {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
         "message": "jobset completed successfully",
         "lastTransitionTime": "2026-01-01T11:00:00Z"}]})
    plan = run(js, [job("leader", 0, state="succeeded"), job("workers", 0, suspend=True),
                    job("workers", 1, suspend=True)])
    assert sorted(kinds(plan, "DeleteJob")) == ["js-workers-0", "js-workers-1"]


def test_row8_a_suspended_dependency_is_not_ready() -> None:
    js = independent(rjob("init", 1), rjob("w", 1, depends_on=[("init", "Ready")]))
    # The Job was suspended while its last status still shows a ready pod.
    plan = run(js, [job("init", 0, suspend=True, ready=1)], objects=[service()])
    assert kinds(plan, "CreateJob") == []
    assert rjs(plan, "init")["ready"] == 0
    ready = run(js, [job("init", 0, ready=1)], objects=[service()])
    assert kinds(ready, "CreateJob") == ["js-w-0"]


def test_row9_in_order_startup_waits_on_a_suspended_rjob() -> None:
    js = independent(rjob("a", 1), rjob("b", 1), startupPolicy={"startupPolicyOrder": "InOrder"})
    plan = run(js, [job("a", 0, suspend=True, ready=1)], objects=[service()])
    assert kinds(plan, "CreateJob") == []
    assert condition(plan, c.STARTUP_IN_PROGRESS)["status"] == "True"


def test_row10_admission_requires_spec_suspend_unset() -> None:
    js = independent(rjob("w", 1, pod={"spec": {"containers": [{"name": "m", "image": "b"}]}}))
    assert validate_create(js) == []
    js["spec"]["suspend"] = False
    errors = validate_create(js)
    assert [e.field for e in errors] == ["spec.suspend"]


def test_row11_the_annotation_cannot_be_added_or_removed() -> None:
    old = jobset(rjob("w", 1, pod={"spec": {"containers": [{"name": "m", "image": "b"}]}}))
    new = copy.deepcopy(old)
    new["metadata"]["annotations"] = dict(INDEPENDENT)
    assert any(c.RECONCILIATION_MODE in e.field for e in validate_update(new, old))


def test_row12_a_restart_recreates_jobs_with_the_templates_suspend() -> None:
    js = independent(rjob("w", 1), status={"restarts": 1})
    plan = run(js, [], objects=[service()])
    created = next(a.object for a in plan.actions if a.type == "CreateJob")
    assert created["spec"]["suspend"] is False
    assert created["metadata"]["labels"][c.RESTART_ATTEMPT] == "1"


@pytest.mark.waits
def test_row2_through_the_cli() -> None:
    js = independent(rjob("w", 1))
    job_obj = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "js-w-0", "uid": "u0",
                            "labels": {c.REPLICATED_JOB_NAME: "w", c.RESTART_ATTEMPT: "0"},
                            "ownerReferences": [{"uid": js["metadata"]["uid"],
                                                 "controller": True}]},
               "spec": {"suspend": True, "parallelism": 1, "completions": 1}}
    out = subprocess.run([sys.executable, "-m", "decider.cli", "decide", "-f", "-", "--now",
                          "2026-01-01T00:00:00Z", "-o", "json"], input=json.dumps(
        {"kind": "List", "apiVersion": "v1", "items": [js, job_obj]}), capture_output=True,
        text=True, cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert out.returncode == 0, out.stderr
    types = [a["type"] for a in json.loads(out.stdout)["actions"]]
    assert "ResumeJob" not in types and "SuspendJob" not in types
