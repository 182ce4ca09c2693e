"""The reconcile pass's order and early exits (upstream Reconcile/reconcile): which steps run,
in which order their actions come, and where a pass stops."""

from __future__ import annotations

from typing import Any

import pytest

from decider.core import constants as c
from decider.core.errors import InvalidInput
from support.builders import NOW_STR, condition, job, jobset, rjob, run, service, types

VCP = [{"templates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["RWO"]}}]}]


def test_action_order_follows_the_controller_steps() -> None:
    # One pass that deletes previous-attempt Jobs, creates the Service and a PVC, patches a live
    # Job (elastic), creates missing Jobs and resumes a suspended one, then writes status.
    js = jobset(
        rjob("a", 2, parallelism=2, completions=2),
        rjob("b", 1),
        status={"restarts": 1, "restartsCountTowardsMax": 1},
        failurePolicy={"maxRestarts": 3},
        volumeClaimPolicies=VCP,
    )
    jobs = [
        job("a", 0, attempt=0, parallelism=1, completions=1),  # previous attempt
        job("a", 1, attempt=1, parallelism=1, completions=1, suspend=True),
    ]
    plan = run(js, jobs, gates={"ElasticJobSet": True})
    assert types(plan) == [
        ("DeleteJob", "js-a-0"),
        ("CreateService", "js"),
        ("CreatePVC", "data-js"),
        ("PatchJob", "js-a-1"),
        ("CreateJob", "js-b-0"),
        ("ResumeJob", "js-a-1"),
        ("UpdateStatus", "js"),
    ]


def test_terminal_jobset_only_cleans_up() -> None:
    status = {
        "terminalState": "Completed",
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": NOW_STR,
            }
        ],
    }
    js = jobset(rjob("w", 3), status=status, failurePolicy={"maxRestarts": 3})
    jobs = [job("w", 0, state="failed"), job("w", 1, attempt=0, active=1)]
    plan = run(js, jobs)
    # No failure policy, no creation of js-w-2, no Service: only the active Job goes (and the
    # recomputed replicatedJobsStatus is written).
    assert types(plan) == [("DeleteJob", "js-w-1"), ("UpdateStatus", "js")]
    assert plan.status["conditions"] == status["conditions"]
    assert plan.status["restarts"] == 0


def test_failure_stops_the_pass_before_creation_and_success() -> None:
    js = jobset(rjob("w", 3), failurePolicy={"maxRestarts": 3})
    plan = run(js, [job("w", 0, state="failed"), job("w", 1, state="succeeded")])
    assert not [a for a in plan.actions if a.type in ("CreateJob", "CreateService")]
    assert condition(plan, c.COMPLETED) is None and plan.status["restarts"] == 1


def test_completion_stops_the_pass() -> None:
    js = jobset(rjob("w", 2), successPolicy={"operator": "Any"})
    plan = run(js, [job("w", 0, state="succeeded")])
    assert not [a for a in plan.actions if a.type in ("CreateJob", "CreateService")]
    assert condition(plan, c.COMPLETED)["status"] == "True"


def test_success_not_met_continues_the_pass() -> None:
    plan = run(jobset(rjob("w", 2)), [job("w", 0, state="succeeded")])
    assert [t for t in types(plan) if t[0] != "UpdateStatus"] == [
        ("CreateService", "js"),
        ("CreateJob", "js-w-1"),
    ]


def test_jobset_being_deleted_is_not_reconciled() -> None:
    js = jobset(rjob("w", 2))
    js["metadata"]["deletionTimestamp"] = NOW_STR
    plan = run(js, [job("w", 0, state="failed")])
    assert plan.actions == []


def test_terminating_current_job_is_not_deleted_twice_nor_recreated() -> None:
    js = jobset(rjob("w", 1), status={"restarts": 1}, failurePolicy={"maxRestarts": 3})
    old = job("w", 0, attempt=0, deleting=True)
    plan = run(js, [old], objects=[service()])
    assert [t for t in types(plan) if t[0] in ("DeleteJob", "CreateJob")] == []


def test_previous_attempt_deleted_then_recreated_once_gone() -> None:
    js = jobset(rjob("w", 2), status={"restarts": 1}, failurePolicy={"maxRestarts": 3})
    jobs = [job("w", 0, attempt=0), job("w", 1, attempt=0, state="succeeded")]
    plan = run(js, jobs, objects=[service()])
    deletes = [a for a in plan.actions if a.type == "DeleteJob"]
    assert [(a.name, a.uid, a.propagation_policy) for a in deletes] == [
        ("js-w-0", "uid-w-0-0", "Foreground"),
        ("js-w-1", "uid-w-1-0", "Foreground"),
    ]
    plan = run(js, jobs[1:], objects=[service()])
    created = [a for a in plan.actions if a.type == "CreateJob"]
    assert [a.name for a in created] == ["js-w-0"]
    assert created[0].object["metadata"]["labels"][c.RESTART_ATTEMPT] == "1"


def test_jobs_owned_by_another_uid_are_ignored() -> None:
    # getChildJobs lists by controller owner UID: the stranger's failure is not the JobSet's.
    # Its name is still taken, so creating js-w-0 fails (test_job_name_conflict.py).
    stranger = job("w", 0, owner="someone-else", state="failed")
    plan = run(jobset(rjob("w", 1)), [stranger], objects=[service()])
    assert condition(plan, c.FAILED) is None
    assert [a.name for a in plan.actions if a.type == "CreateJob"] == []


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        pytest.param(
            {c.REPLICATED_JOB_NAME: None},
            "missing label",
            id="restart-job-gate/missing-replicated-job-name",
        ),
        pytest.param({c.JOB_INDEX: None}, "missing label", id="restart-job-gate/missing-job-index"),
        pytest.param(
            {c.JOB_INDEX: "x"}, "must be an integer", id="restart-job-gate/job-index-not-an-integer"
        ),
        pytest.param(
            {c.JOB_RESTART_ATTEMPT: "x"},
            "must be an integer",
            id="restart-job-gate/job-restart-attempt-not-an-integer",
        ),
        pytest.param(
            {c.JOB_INDEX: "5", c.JOB_RESTART_ATTEMPT: "0"},
            "out of bounds",
            id="restart-job-gate/job-index-out-of-bounds",
        ),
    ],
)
def test_restart_job_gate_label_errors_abort_the_pass(labels: dict[str, Any], message: str) -> None:
    j = job("w", 0)
    for key, value in labels.items():
        if value is None:
            del j.labels[key]
        else:
            j.labels[key] = value
    with pytest.raises(InvalidInput, match=message):
        run(jobset(rjob("w", 2)), [j], gates={"RestartJob": True})


def test_restart_job_gate_missing_job_restart_attempt_is_current() -> None:
    # Jobs from before the gate: no job-restart-attempt label, kept as current.
    status = {
        "replicatedJobsStatus": [
            {
                "name": "w",
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
                "jobRestarts": [2],
            }
        ]
    }
    plan = run(
        jobset(rjob("w", 1), status=status),
        [job("w", 0, ready=1)],
        objects=[service()],
        gates={"RestartJob": True},
    )
    assert not [a for a in plan.actions if a.type == "DeleteJob"]
    assert plan.status["replicatedJobsStatus"][0]["ready"] == 1


def test_restart_job_gate_lower_job_restart_attempt_is_previous() -> None:
    status = {
        "replicatedJobsStatus": [
            {
                "name": "w",
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
                "jobRestarts": [0, 2],
            }
        ]
    }
    jobs = [job("w", 0, job_attempt=0, ready=1), job("w", 1, job_attempt=1, state="failed")]
    plan = run(
        jobset(rjob("w", 2), status=status), jobs, objects=[service()], gates={"RestartJob": True}
    )
    # The failed Job belongs to an older per-Job attempt: deleted, not a failure.
    assert [a.name for a in plan.actions if a.type == "DeleteJob"] == ["js-w-1"]
    assert condition(plan, c.FAILED) is None
    assert plan.status["replicatedJobsStatus"][0]["jobRestarts"] == [0, 2]
