"""Upstream reconcileReplicatedJobs/createJobs when a child Job's name is held by a Job the
JobSet does not control (a leftover of an earlier JobSet of the same name, say).

getChildJobs lists Jobs by controller owner UID, so such a Job is no child: it is not counted
and not deleted. constructJobsFromTemplate then plans a Job of that name, the create meets
AlreadyExists (createJobs' TODO(#18)), the other creates of the same replicated Job succeed (they
run in parallel), reconcileReplicatedJobs records a `JobCreationFailed` Warning event at once and
returns the error: later replicated Jobs, suspend/resume and the status write are skipped, and
controller-runtime retries with backoff.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from decider.core import constants as c
from decider.core.model import ObservedJob
from support.builders import NOW, NOW_STR, condition, job, jobset, rjob, run, service, types

OTHER_UID = "uid-of-an-earlier-js"
VCP = [{"templates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["RWO"]}}]}]


def _ago(seconds: int) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def leftover(rjob_name: str, index: int, *, owner: str = OTHER_UID, created: str = "",
             deleting: bool = False) -> ObservedJob:
    """A Job named like a child of `js` but controlled by another object (or by none)."""
    j = job(rjob_name, index, owner=owner, active=1, ready=1, deleting=deleting)
    return dataclasses.replace(j, uid=f"uid-leftover-{rjob_name}-{index}",
                               creation_timestamp=created)


def message(*names: str) -> str:
    # createJobs: fmt.Errorf("job %q creation failed with error: %v", ...) around the API
    # server's AlreadyExists (`<resource>.<group> "<name>" already exists`), errors.Join'ed.
    return "\n".join(f'job "{n}" creation failed with error: jobs.batch "{n}" already exists'
                     for n in names)


def events(plan):
    return [(a.event.type, a.event.reason, a.event.message) for a in plan.actions if a.event]


def test_create_jobs_already_exists_records_job_creation_failed_and_stops() -> None:
    js = jobset(rjob("w", 3))
    plan = run(js, [leftover("w", 1)], objects=[service()])
    # The other creates of the replicated Job are made; js-w-1 is not.
    assert types(plan) == [("CreateJob", "js-w-0"), ("CreateJob", "js-w-2"), ("Event", "js")]
    assert events(plan) == [(c.WARNING, "JobCreationFailed", message("js-w-1"))]
    # The pass ends with the error: no status write, the stored status is what it was.
    assert plan.status["replicatedJobsStatus"] == []
    assert plan.requeue_after_seconds >= 1


def test_create_jobs_joins_every_failed_create_in_one_event() -> None:
    plan = run(jobset(rjob("w", 3)), [leftover("w", 2), leftover("w", 0)], objects=[service()])
    assert [n for t, n in types(plan) if t == "CreateJob"] == ["js-w-1"]
    assert events(plan) == [(c.WARNING, "JobCreationFailed", message("js-w-0", "js-w-2"))]


def test_reconcile_replicated_jobs_returns_before_later_replicated_jobs() -> None:
    js = jobset(rjob("a", 2), rjob("b", 2))
    plan = run(js, [leftover("a", 0)], objects=[service()])
    assert [n for t, n in types(plan) if t == "CreateJob"] == ["js-a-1"]


def test_a_conflict_in_a_later_replicated_job_keeps_earlier_creates() -> None:
    js = jobset(rjob("a", 1), rjob("b", 2))
    plan = run(js, [leftover("b", 1)], objects=[service()])
    assert [n for t, n in types(plan) if t == "CreateJob"] == ["js-a-0", "js-b-0"]
    assert [r for _, r, _ in events(plan)] == ["JobCreationFailed"]


def test_earlier_steps_of_the_pass_stand() -> None:
    # Deleting previous-attempt Jobs, the Service and the PVCs come before Job creation.
    js = jobset(rjob("w", 2), status={"restarts": 1, "restartsCountTowardsMax": 1},
                failurePolicy={"maxRestarts": 3}, volumeClaimPolicies=VCP)
    stale = job("w", 0, attempt=0)
    plan = run(js, [stale, leftover("w", 1)])
    assert types(plan) == [("DeleteJob", "js-w-0"), ("CreateService", "js"),
                           ("CreatePVC", "data-js"), ("Event", "js")]


def test_status_changes_of_the_pass_are_not_written() -> None:
    # The recomputed replicatedJobsStatus (one ready Job) would be written on a clean pass.
    js = jobset(rjob("w", 2))
    clean = run(js, [job("w", 0, ready=1, active=1)], objects=[service()])
    assert ("UpdateStatus", "js") in types(clean)
    plan = run(js, [job("w", 0, ready=1, active=1), leftover("w", 1)], objects=[service()])
    assert "UpdateStatus" not in [t for t, _ in types(plan)]
    assert plan.status["replicatedJobsStatus"] == []


def test_resume_is_skipped() -> None:
    # resumeJobsIfNecessary comes after reconcileReplicatedJobs, which returned the error.
    js = jobset(rjob("w", 2))
    plan = run(js, [job("w", 0, suspend=True), leftover("w", 1)], objects=[service()])
    assert "ResumeJob" not in [t for t, _ in types(plan)]


def test_in_order_startup_condition_is_not_written() -> None:
    js = jobset(rjob("a", 2), rjob("b", 1), startupPolicy={"startupPolicyOrder": "InOrder"})
    plan = run(js, [leftover("a", 1)], objects=[service()])
    assert condition(plan, c.STARTUP_IN_PROGRESS) is None
    assert [n for t, n in types(plan) if t == "CreateJob"] == ["js-a-0"]


@pytest.mark.parametrize(
    "holder",
    [
        pytest.param(leftover("w", 0), id="controlled-by-another-uid"),
        pytest.param(leftover("w", 0, owner=""), id="no-controller"),
        pytest.param(leftover("w", 0, deleting=True), id="being-deleted-still-exists"),
    ],
)
def test_any_job_not_controlled_by_the_jobset_holds_the_name(holder: ObservedJob) -> None:
    plan = run(jobset(rjob("w", 1)), [holder], objects=[service()])
    assert "CreateJob" not in [t for t, _ in types(plan)]
    assert [r for _, r, _ in events(plan)] == ["JobCreationFailed"]


def test_get_child_jobs_ignores_it() -> None:
    # Not a child: its failure is no failure of the JobSet and it is never deleted.
    failed = dataclasses.replace(job("w", 0, owner=OTHER_UID, state="failed"),
                                 uid="uid-leftover")
    plan = run(jobset(rjob("w", 1), failurePolicy={"maxRestarts": 3}), [failed],
               objects=[service()])
    assert condition(plan, c.FAILED) is None and condition(plan, c.RESTARTING) is None
    assert "DeleteJob" not in [t for t, _ in types(plan)]


@pytest.mark.parametrize(
    ("spec", "status"),
    [
        pytest.param({"replicatedJobs": [rjob("a", 1), rjob("w", 1, depends_on=[("a", "Ready")])]},
                     None, id="depends-on-not-met-no-create-attempted"),
        pytest.param({"replicatedJobs": [rjob("w", 1)]},
                     {"terminalState": "Completed",
                      "conditions": [{"type": "Completed", "status": "True",
                                      "reason": "AllJobsCompleted",
                                      "message": "jobset completed successfully",
                                      "lastTransitionTime": NOW_STR}]},
                     id="finished-jobset-creates-nothing"),
    ],
)
def test_no_create_no_conflict(spec, status) -> None:
    js = jobset(*spec.pop("replicatedJobs"), status=status, **spec)
    plan = run(js, [job("a", 0)] + [leftover("w", 0)], objects=[service()])
    assert "JobCreationFailed" not in [r for _, r, _ in events(plan)]


def test_blocking_recreate_attempts_no_create() -> None:
    js = jobset(rjob("w", 2), status={"restarts": 1, "restartsCountTowardsMax": 1},
                failurePolicy={"maxRestarts": 3, "restartStrategy": "BlockingRecreate"})
    plan = run(js, [job("w", 0, attempt=0, deleting=True), leftover("w", 1)],
               objects=[service()])
    assert events(plan) == []


@pytest.mark.parametrize(
    ("jobset_created", "leftover_created", "expected"),
    [
        pytest.param("", "", 1, id="unknown-start-first-retry-after-1s"),
        pytest.param(_ago(10), "", 10, id="conflict-as-old-as-the-jobset"),
        pytest.param(_ago(3600), _ago(4), 4, id="conflict-as-old-as-the-leftover"),
        pytest.param(_ago(40000), _ago(30000), 1000, id="capped-at-controller-runtime-max"),
    ],
)
def test_retry_backs_off_with_the_age_of_the_conflict(jobset_created: str, leftover_created: str,
                                                      expected: int) -> None:
    # controller-runtime's per-item backoff doubles after every failure, up to 1000 s; without
    # memory, waiting as long as the conflict has lasted doubles the interval the same way.
    js = jobset(rjob("w", 1))
    if jobset_created:
        js["metadata"]["creationTimestamp"] = jobset_created
    plan = run(js, [leftover("w", 0, created=leftover_created)], objects=[service()])
    assert plan.requeue_after_seconds == expected


def test_retry_backoff_keeps_the_conflict_age_below_a_second() -> None:
    # The precise delay is the conflict's age itself; the whole seconds round it up.
    js = jobset(rjob("w", 1))
    js["metadata"]["creationTimestamp"] = _ago(10)
    plan = run(js, [leftover("w", 0)], objects=[service()],
               now=NOW + timedelta(seconds=0.25))
    assert plan.requeue_after == timedelta(seconds=10.25)
    assert plan.requeue_after_seconds == 11
