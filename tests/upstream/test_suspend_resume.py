"""Suspend and resume (upstream suspendJobs / resumeJobsIfNecessary / resumeJob), one pass each:
which Jobs move, the resume patch, startTime clearing and the conditions."""

from __future__ import annotations

from typing import Any

import pytest

from decider.core import constants as c
from decider.core.model import PodTemplateSummary, Toleration
from support.builders import condition, events, job, jobset, rjob, run, service

POD = {
    "metadata": {"labels": {"queue": "new", "team": "a"}, "annotations": {"kueue": "admitted"}},
    "spec": {
        "restartPolicy": "OnFailure",
        "containers": [{"name": "main", "image": "busybox"}],
        "nodeSelector": {"pool": "tpu", "zone": "b"},
        "tolerations": [
            {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "spot", "operator": "Equal", "value": "true", "tolerationSeconds": 30},
        ],
        "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}],
    },
}


def suspended_job(idx: int, **kw: Any) -> Any:
    j = job("w", idx, suspend=True, **kw)
    j.pod_template = PodTemplateSummary(
        labels={c.JOBSET_NAME: "js", "queue": "old"},
        annotations={c.JOBSET_NAME: "js"},
        node_selector={"zone": "a", "disk": "ssd"},
        tolerations=[Toleration(key="gpu", operator="Exists", effect="NoSchedule")],
        scheduling_gates=["existing-gate"],
    )
    return j


def resumes(plan: Any) -> dict[str, Any]:
    return {a.name: a for a in plan.actions if a.type == "ResumeJob"}


def test_resume_patch_merges_scheduling_directives() -> None:
    js = jobset(rjob("w", 1, pod=POD))
    plan = run(js, [suspended_job(0, start_time="2026-01-01T10:00:00Z")], objects=[service()])
    action = resumes(plan)["js-w-0"]
    assert action.clear_start_time is True
    assert action.patch == {
        "spec": {
            "suspend": False,
            "template": {
                "metadata": {
                    # maps merge; the replicated Job's value wins on a shared key
                    "labels": {c.JOBSET_NAME: "js", "queue": "new", "team": "a"},
                    "annotations": {c.JOBSET_NAME: "js", "kueue": "admitted"},
                },
                "spec": {
                    "nodeSelector": {"zone": "b", "disk": "ssd", "pool": "tpu"},
                    # set union; deterministic here (the Job's first, then the new ones), where
                    # upstream's MergeSlices returns map order
                    "tolerations": [
                        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
                        {
                            "key": "spot",
                            "operator": "Equal",
                            "value": "true",
                            "tolerationSeconds": 30,
                        },
                    ],
                    "schedulingGates": [
                        {"name": "existing-gate"},
                        {"name": "kueue.x-k8s.io/topology"},
                    ],
                },
            },
        }
    }


def test_resume_without_template_changes_only_unsuspends() -> None:
    pod = {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "m", "image": "i"}]}}
    j = job("w", 0, suspend=True)
    j.pod_template = PodTemplateSummary(labels={c.JOBSET_NAME: "js"})
    plan = run(jobset(rjob("w", 1, pod=pod)), [j], objects=[service()])
    action = resumes(plan)["js-w-0"]
    assert action.patch == {"spec": {"suspend": False}}
    assert action.clear_start_time is False  # never started: no status update first


def test_resume_only_suspended_active_jobs() -> None:
    jobs = [
        job("w", 0, suspend=True),
        job("w", 1, suspend=False, active=1),
        job("w", 2, suspend=True, state="succeeded"),
    ]
    plan = run(jobset(rjob("w", 3)), jobs, objects=[service()])
    assert list(resumes(plan)) == ["js-w-0"]


def test_resume_condition_only_when_a_suspended_condition_exists() -> None:
    plan = run(jobset(rjob("w", 1)), [job("w", 0, suspend=True)], objects=[service()])
    assert condition(plan, c.SUSPENDED) is None
    status = {
        "conditions": [
            {
                "type": "Suspended",
                "status": "True",
                "reason": "SuspendedJobs",
                "message": "jobset is suspended",
                "lastTransitionTime": "2026-01-01T10:00:00Z",
            }
        ]
    }
    plan = run(
        jobset(rjob("w", 1), status=status), [job("w", 0, suspend=True)], objects=[service()]
    )
    got = condition(plan, c.SUSPENDED)
    assert (got["status"], got["reason"], got["message"]) == (
        "False",
        "ResumeJobs",
        "jobset is resumed",
    )
    assert ("Normal", "ResumeJobs") in events(plan)


def test_resume_in_order_one_replicated_job_per_pass() -> None:
    status = {
        "conditions": [
            {
                "type": "Suspended",
                "status": "True",
                "reason": "SuspendedJobs",
                "message": "jobset is suspended",
                "lastTransitionTime": "2026-01-01T10:00:00Z",
            }
        ]
    }
    js = jobset(
        rjob("a", 1), rjob("b", 2), status=status, startupPolicy={"startupPolicyOrder": "InOrder"}
    )
    jobs = [job("a", 0, suspend=True), job("b", 0, suspend=True), job("b", 1, suspend=True)]
    plan = run(js, jobs, objects=[service()])
    assert list(resumes(plan)) == ["js-a-0"]
    assert condition(plan, c.STARTUP_IN_PROGRESS)["status"] == "True"
    assert condition(plan, c.SUSPENDED)["status"] == "True"
    # a is started (ready): b is resumed, and every replicated Job is started next time.
    js["status"] = plan.status
    jobs = [job("a", 0, ready=1, active=1), job("b", 0, suspend=True), job("b", 1, suspend=True)]
    plan = run(js, jobs, objects=[service()])
    assert list(resumes(plan)) == ["js-b-0", "js-b-1"]
    assert condition(plan, c.SUSPENDED)["status"] == "True"
    js["status"] = plan.status
    jobs = [
        job("a", 0, ready=1, active=1),
        job("b", 0, ready=1, active=1),
        job("b", 1, ready=1, active=1),
    ]
    plan = run(js, jobs, objects=[service()])
    assert condition(plan, c.SUSPENDED)["reason"] == "ResumeJobs"
    assert condition(plan, c.STARTUP_COMPLETED)["status"] == "True"
    assert condition(plan, c.STARTUP_IN_PROGRESS)["status"] == "False"


def test_resume_skips_replicated_jobs_with_unmet_dependencies() -> None:
    js = jobset(rjob("a", 1), rjob("b", 1, depends_on=[("a", "Complete")]), rjob("c", 1))
    jobs = [job("a", 0, suspend=True), job("b", 0, suspend=True), job("c", 0, suspend=True)]
    plan = run(js, jobs, objects=[service()])
    assert list(resumes(plan)) == ["js-a-0", "js-c-0"]


@pytest.mark.parametrize("restarting", [False, True], ids=["never-restarted", "restarting"])
def test_suspend_running_jobset(restarting: bool) -> None:
    status: dict[str, Any] = {}
    if restarting:
        status = {
            "restarts": 1,
            "restartsCountTowardsMax": 1,
            "conditions": [
                {
                    "type": c.RESTARTING,
                    "status": "True",
                    "reason": "DefaultFailurePolicy",
                    "message": "m",
                    "lastTransitionTime": "2026-01-01T10:00:00Z",
                }
            ],
        }
    js = jobset(rjob("w", 3), suspend=True, status=status, failurePolicy={"maxRestarts": 3})
    attempt = 1 if restarting else 0
    jobs = [
        job("w", 0, active=1, attempt=attempt),
        job("w", 1, suspend=True, attempt=attempt),
        job("w", 2, state="succeeded", attempt=attempt),
    ]
    plan = run(js, jobs, objects=[service()])
    suspends = [(a.name, a.patch) for a in plan.actions if a.type == "SuspendJob"]
    assert suspends == [("js-w-0", {"spec": {"suspend": True}})]
    got = condition(plan, c.SUSPENDED)
    assert (got["status"], got["reason"], got["message"]) == (
        "True",
        "SuspendedJobs",
        "jobset is suspended",
    )
    restarting_cond = condition(plan, c.RESTARTING)
    if restarting:
        assert (
            restarting_cond["status"],
            restarting_cond["reason"],
            restarting_cond["message"],
        ) == ("False", "JobSetSuspended", "jobset is suspended")
        assert events(plan) == [("Normal", "SuspendedJobs"), ("Normal", "JobSetSuspended")]
    else:
        assert restarting_cond is None


def test_suspended_jobset_still_runs_the_failure_policy() -> None:
    js = jobset(rjob("w", 2), suspend=True)
    plan = run(js, [job("w", 0, suspend=True), job("w", 1, state="failed")], objects=[service()])
    assert condition(plan, c.FAILED)["reason"] == "FailedJobs"
    assert not [a for a in plan.actions if a.type == "SuspendJob"]


def test_all_ready_does_not_end_restarting_while_suspended() -> None:
    status = {
        "restarts": 1,
        "restartsCountTowardsMax": 1,
        "conditions": [
            {
                "type": c.RESTARTING,
                "status": "True",
                "reason": "DefaultFailurePolicy",
                "message": "m",
                "lastTransitionTime": "2026-01-01T10:00:00Z",
            }
        ],
    }
    jobs = [job("w", 0, attempt=1, ready=1, active=1)]
    plan = run(jobset(rjob("w", 1), status=status, suspend=False), jobs, objects=[service()])
    assert condition(plan, c.RESTARTING)["reason"] == "JobsReady"
    plan = run(jobset(rjob("w", 1), status=status, suspend=True), jobs, objects=[service()])
    # Suspending ends it with its own reason instead.
    assert condition(plan, c.RESTARTING)["reason"] == "JobSetSuspended"


def test_suspended_jobset_creates_missing_jobs_suspended_in_any_order() -> None:
    js = jobset(
        rjob("a", 1), rjob("b", 1), suspend=True, startupPolicy={"startupPolicyOrder": "InOrder"}
    )
    plan = run(js, objects=[service()])
    created = {a.name: a.object["spec"]["suspend"] for a in plan.actions if a.type == "CreateJob"}
    assert created == {"js-a-0": True, "js-b-0": True}
    assert condition(plan, c.STARTUP_IN_PROGRESS) is None
