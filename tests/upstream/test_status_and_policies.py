"""Upstream unit tables for status and the smaller policies: TestIsJobFinished,
TestCalculateReplicatedJobStatuses, TestUpdateConditions, success_policy_test.go,
startup_policy_test.go, depends_on_test.go, ttl_after_finished_test.go,
volume_claim_policy_test.go, TestSyncJobScaling and in_place_restart_test.go — each through
a decide pass."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.model import JobCondition, ObservedPod
from support.builders import NOW, NOW_STR, condition, events, job, jobset, rjob, run, service, types

# ---- IsJobFinished / attempt classification ---------------------------------------------------


def with_conditions(*conds: tuple[str, str]) -> Any:
    j = job("w", 0)
    j.conditions = [
        JobCondition(type=t, status=s, last_transition_time="2026-01-01T11:00:00Z")
        for t, s in conds
    ]
    return j


@pytest.mark.parametrize(
    ("conds", "counted"),
    [
        pytest.param([("Complete", "True")], "succeeded", id="is-job-finished/succeeded"),
        pytest.param([("Failed", "True")], "failed", id="is-job-finished/failed"),
        pytest.param([], "active", id="is-job-finished/active"),
        pytest.param([("Suspended", "True")], "active", id="is-job-finished/suspended"),
        pytest.param([("FailureTarget", "True")], "active", id="is-job-finished/failure-target"),
        pytest.param(
            [("SuccessCriteriaMet", "True")], "active", id="is-job-finished/success-criteria-met"
        ),
        pytest.param([("Complete", "False")], "active", id="is-job-finished/complete-false"),
        pytest.param(
            [("Complete", "True"), ("Failed", "True")],
            "succeeded",
            id="is-job-finished/first-finishing-condition-decides",
        ),
    ],
)
def test_is_job_finished(conds: list[tuple[str, str]], counted: str) -> None:
    js = jobset(rjob("w", 1), failurePolicy={"maxRestarts": 3})
    plan = run(js, [with_conditions(*conds)], objects=[service()])
    entry = plan.status["replicatedJobsStatus"][0]
    got = {"succeeded": entry["succeeded"], "failed": entry["failed"]}
    assert got == {
        "succeeded": int(counted == "succeeded"),
        "failed": int(counted == "failed"),
    }
    if counted == "failed":
        assert plan.status["restarts"] == 1


@pytest.mark.parametrize(
    ("value", "attempt_ok"),
    [
        pytest.param("0", True, id="restart-attempt/zero"),
        pytest.param("+0", True, id="restart-attempt/explicit-plus-sign"),
        pytest.param("x", False, id="restart-attempt/not-a-number"),
        pytest.param("", False, id="restart-attempt/empty"),
        pytest.param("1_0", False, id="restart-attempt/underscore-digit-grouping"),
        pytest.param(" 0", False, id="restart-attempt/leading-space"),
        pytest.param("\u0661", False, id="restart-attempt/non-ascii-digit"),
    ],
)
def test_restart_attempt_label_parsed_like_strconv_atoi(value: str, attempt_ok: bool) -> None:
    j = job("w", 0, labels={c.RESTART_ATTEMPT: value})
    js = jobset(rjob("w", 1))
    if attempt_ok:
        run(js, [j], objects=[service()])
    else:
        with pytest.raises(InvalidInput, match="restart-attempt"):
            run(js, [j], objects=[service()])


# ---- calculateReplicatedJobStatuses -----------------------------------------------------------


def test_replicated_jobs_status_counts() -> None:
    js = jobset(rjob("rj-1", 1), rjob("rj-2", 3), rjob("rj-3", 2))
    jobs = [
        # ready: succeeded + ready >= min(parallelism, completions)
        job("rj-1", 0, parallelism=5, completions=2, ready=1, succeeded=1, active=1),
        job("rj-2", 0, parallelism=5, active=1),
        job("rj-2", 1, parallelism=1, active=1, ready=1),
        job("rj-2", 2, parallelism=2, completions=None, suspend=True, ready=0),
        job("rj-3", 0, state="succeeded"),
        job("rj-3", 1, parallelism=0, active=0),  # parallelism 0 counts as ready
    ]
    plan = run(js, jobs, objects=[service()])
    assert plan.status["replicatedJobsStatus"] == [
        {"name": "rj-3", "ready": 1, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
        {"name": "rj-2", "ready": 1, "succeeded": 0, "failed": 0, "active": 2, "suspended": 1},
        {"name": "rj-1", "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0},
    ]


def test_replicated_jobs_status_skips_unknown_and_unlabelled_jobs() -> None:
    stray = job("gone", 0)
    bare = job("w", 1, labels={c.REPLICATED_JOB_NAME: ""}, ready=1)
    plan = run(jobset(rjob("w", 2)), [job("w", 0, ready=1), stray, bare], objects=[service()])
    assert plan.status["replicatedJobsStatus"] == [
        {"name": "w", "ready": 1, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    ]


def test_replicated_jobs_status_previous_attempt_not_counted() -> None:
    old = job("w", 0, attempt=0, ready=1, deleting=True)
    plan = run(jobset(rjob("w", 1), status={"restarts": 1}), [old], objects=[service()])
    assert plan.status["replicatedJobsStatus"][0]["ready"] == 0


def test_unchanged_status_is_not_written_even_if_stored_unsorted() -> None:
    stored = [
        {"name": "a", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
        {"name": "b", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
    ]
    js = jobset(rjob("a", 1), rjob("b", 1), status={"replicatedJobsStatus": stored})
    plan = run(js, [job("a", 0), job("b", 0)], objects=[service()])
    assert types(plan) == []
    assert [e["name"] for e in plan.status["replicatedJobsStatus"]] == ["b", "a"]


# ---- updateCondition --------------------------------------------------------------------------

OLD_T = "2025-12-31T00:00:00Z"


def cond(type_: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": OLD_T,
    }


def test_update_conditions_no_existing_add_completed() -> None:
    plan = run(jobset(rjob("w", 1)), [job("w", 0, state="succeeded")], objects=[service()])
    assert plan.status["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "lastTransitionTime": NOW_STR,
            "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",
        }
    ]


def test_update_conditions_suspended_added() -> None:
    plan = run(jobset(rjob("w", 1), suspend=True), [job("w", 0, suspend=True)], objects=[service()])
    assert plan.status["conditions"] == [
        {
            "type": "Suspended",
            "status": "True",
            "lastTransitionTime": NOW_STR,
            "reason": "SuspendedJobs",
            "message": "jobset is suspended",
        }
    ]
    assert events(plan) == [("Normal", "SuspendedJobs")]


def test_update_conditions_resume_flips_suspended_in_place() -> None:
    status = {"conditions": [cond("Suspended", "True", "SuspendedJobs", "jobset is suspended")]}
    plan = run(jobset(rjob("w", 1), status=status), [job("w", 0)], objects=[service()])
    assert plan.status["conditions"] == [
        {
            "type": "Suspended",
            "status": "False",
            "lastTransitionTime": NOW_STR,
            "reason": "ResumeJobs",
            "message": "jobset is resumed",
        }
    ]


def test_update_conditions_duplicate_is_no_update() -> None:
    status = {
        "terminalState": "Completed",
        "conditions": [
            cond("Completed", "True", "AllJobsCompleted", "jobset completed successfully")
        ],
    }
    js = jobset(rjob("w", 1), status=status)
    plan = run(js, [job("w", 0, state="succeeded")])
    assert [a.type for a in plan.actions if a.type in ("UpdateStatus", "Event")] == ["UpdateStatus"]
    assert plan.status["conditions"] == status["conditions"]


def test_update_conditions_same_status_new_reason_keeps_transition_time() -> None:
    old_msg = "applying RestartJobSet failure policy action (first failed job: js-w-9)"
    status = {
        "restarts": 1,
        "restartsCountTowardsMax": 1,
        "conditions": [cond("RestartingJobSet", "True", "DefaultFailurePolicy", old_msg)],
    }
    fp = {"maxRestarts": 5, "rules": [{"name": "NewRule", "action": "RestartJobSet"}]}
    plan = run(
        jobset(rjob("w", 1), status=status, failurePolicy=fp),
        [job("w", 0, attempt=1, state="failed")],
    )
    got = condition(plan, c.RESTARTING)
    assert (got["reason"], got["lastTransitionTime"]) == ("FailurePolicy_NewRule", OLD_T)
    assert got["message"].endswith("(first failed job: js-w-0)")


def test_false_condition_never_created_from_nothing() -> None:
    # All Jobs ready, never restarted: no RestartingJobSet=False appears; never suspended: no
    # Suspended=False either.
    plan = run(
        jobset(rjob("w", 2)), [job("w", 0, ready=1), job("w", 1, ready=1)], objects=[service()]
    )
    assert condition(plan, c.RESTARTING) is None
    assert condition(plan, c.SUSPENDED) is None


def test_startup_conditions_are_mutually_exclusive_in_place() -> None:
    status = {
        "conditions": [
            cond("StartupPolicyCompleted", "True", "InOrderStartupPolicyCompleted", "m"),
            cond("Other", "True", "R", "m"),
        ]
    }
    js = jobset(
        rjob("a", 1), rjob("b", 1), status=status, startupPolicy={"startupPolicyOrder": "InOrder"}
    )
    plan = run(js, [], objects=[service()])  # restarted: nothing exists, "a" starts again
    assert plan.status["conditions"] == [
        # flipped in place: reason, message and time untouched
        cond("StartupPolicyCompleted", "False", "InOrderStartupPolicyCompleted", "m"),
        cond("Other", "True", "R", "m"),
        {
            "type": "StartupPolicyInProgress",
            "status": "True",
            "lastTransitionTime": NOW_STR,
            "reason": "InOrderStartupPolicyInProgress",
            "message": "in order startup policy is in progress",
        },
    ]


# ---- success policy -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "replicas", "succeeded", "complete"),
    [
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": []},
            (1, 2, 3),
            {"rj1": 1, "rj2": 2, "rj3": 3},
            True,
            id="all-empty-targets-all-succeeded",
        ),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": []},
            (1, 2, 3),
            {"rj1": 1, "rj2": 2, "rj3": 2},
            False,
            id="all-empty-targets-one-missing",
        ),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": ["rj1", "rj2"]},
            (1, 2, 3),
            {"rj1": 1, "rj2": 2},
            True,
            id="all-replicated-jobs-match-expected-3",
        ),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": ["rj1", "rj3"]},
            (1, 2, 3),
            {"rj1": 1, "rj2": 2, "rj3": 2},
            False,
            id="some-replicated-jobs-dont-match-expected-4",
        ),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": ["rj1", "rj3"]},
            (1, 2, 3),
            {"rj1": 1, "rj3": 3},
            True,
            id="targets-met-others-running",
        ),
        pytest.param(
            {"operator": "Any"}, (1, 2, 3), {"rj3": 1}, True, id="any-job-completion-fulfills"
        ),
        pytest.param(
            {"operator": "Any", "targetReplicatedJobs": ["rj1"]},
            (1, 2, 3),
            {"rj2": 2},
            False,
            id="any-with-target-non-target-succeeded",
        ),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": ["rj1"]},
            (0, 2, 3),
            {"rj2": 1},
            True,
            id="all-over-zero-replica-targets-first-success",
        ),
    ],
)
def test_success_policy(
    policy: dict[str, Any], replicas: tuple[int, ...], succeeded: dict[str, int], complete: bool
) -> None:
    names = ("rj1", "rj2", "rj3")
    js = jobset(*[rjob(n, r) for n, r in zip(names, replicas, strict=True)], successPolicy=policy)
    jobs = []
    for n, r in zip(names, replicas, strict=True):
        for i in range(r):
            jobs.append(job(n, i, state="succeeded" if i < succeeded.get(n, 0) else "active"))
    plan = run(js, jobs, objects=[service()])
    if complete:
        assert condition(plan, c.COMPLETED)["status"] == "True"
        assert plan.status["terminalState"] == "Completed"
        assert not [a for a in plan.actions if a.type == "DeleteJob"]  # deleted next pass
    else:
        assert condition(plan, c.COMPLETED) is None


# ---- startup policy ---------------------------------------------------------------------------


# Upstream's allReplicasStarted also counts failed Jobs as started. Within a pass a current
# failed Job runs the failure policy and ends the pass before startup sequencing, so that term
# is unreachable through decide(); the cases below cover ready, succeeded and active.
@pytest.mark.parametrize(
    ("ready", "succeeded", "active", "started"),
    [
        pytest.param(0, 0, 0, False, id="replicas-4-nothing"),
        pytest.param(4, 0, 0, True, id="replicas-4-all-ready"),
        pytest.param(3, 1, 0, True, id="replicas-4-ready-and-succeeded-mix"),
        pytest.param(0, 0, 4, False, id="replicas-4-all-active-not-ready"),
        pytest.param(3, 0, 1, False, id="replicas-4-one-not-ready"),
        pytest.param(5, 0, 0, False, id="surplus-ready-jobs-are-not-exactly-started"),
    ],
)
def test_all_replicas_started_gates_the_next_replicated_job(
    ready: int, succeeded: int, active: int, started: bool
) -> None:
    jobs = []
    states = ["ready"] * ready + ["succeeded"] * succeeded + ["active"] * active
    for i, state in enumerate(states):
        if state == "succeeded":
            jobs.append(job("first", i, state="succeeded"))
        else:
            jobs.append(job("first", i, active=1, ready=int(state == "ready")))
    js = jobset(
        rjob("first", 4), rjob("second", 1), startupPolicy={"startupPolicyOrder": "InOrder"}
    )
    plan = run(js, jobs, objects=[service()])
    created = [a.name for a in plan.actions if a.type == "CreateJob" and "second" in a.name]
    assert created == (["js-second-0"] if started else [])
    # Either way a replicated Job is still starting ("first", or the just-created "second").
    assert condition(plan, c.STARTUP_IN_PROGRESS)["status"] == "True"
    assert condition(plan, c.STARTUP_COMPLETED) is None


def test_any_order_and_nil_startup_policy_create_everything() -> None:
    for sp in ({"startupPolicyOrder": "AnyOrder"}, None):
        extra = {"startupPolicy": sp} if sp else {}
        plan = run(jobset(rjob("a", 1), rjob("b", 1), **extra), objects=[service()])
        assert [a.name for a in plan.actions if a.type == "CreateJob"] == ["js-a-0", "js-b-0"]
        assert condition(plan, c.STARTUP_IN_PROGRESS) is None


def test_in_order_zero_replicas_count_as_started() -> None:
    js = jobset(rjob("none", 0), rjob("b", 1), startupPolicy={"startupPolicyOrder": "InOrder"})
    plan = run(js, objects=[service()])
    assert [a.name for a in plan.actions if a.type == "CreateJob"] == ["js-b-0"]


# ---- dependsOn ----------------------------------------------------------------------------------


def counts_jobs(rj: str, replicas: int, ready: int, succeeded: int, failed: int) -> list[Any]:
    out = []
    for i in range(replicas):
        if i < succeeded:
            out.append(job(rj, i, state="succeeded"))
        elif i < succeeded + ready:
            out.append(job(rj, i, ready=1, active=1))
        elif i < succeeded + ready + failed:
            out.append(job(rj, i, active=1))  # counted below through the stored status
        else:
            out.append(job(rj, i, active=1))
    return out


@pytest.mark.parametrize(
    ("deps", "model", "dataset", "met"),
    [
        pytest.param(None, (2, 0, 0), (2, 0, 0), True, id="no-dependencies"),
        pytest.param(
            [("model", "Complete"), ("dataset", "Complete")],
            (0, 2, 0),
            (0, 2, 0),
            True,
            id="depends-on-complete-reached",
        ),
        pytest.param(
            [("model", "Complete"), ("dataset", "Complete")],
            (1, 1, 0),
            (0, 2, 0),
            False,
            id="one-dependency-not-complete",
        ),
        pytest.param(
            [("model", "Complete"), ("dataset", "Complete")],
            (1, 1, 0),
            (1, 1, 0),
            False,
            id="two-dependencies-not-complete",
        ),
        pytest.param(
            [("model", "Ready"), ("dataset", "Ready")],
            (1, 1, 0),
            (2, 0, 0),
            True,
            id="depends-on-ready-reached-with-mix",
        ),
        pytest.param(
            [("model", "Ready"), ("dataset", "Ready")],
            (1, 0, 0),
            (1, 1, 0),
            False,
            id="one-dependency-not-ready",
        ),
        pytest.param(
            [("model", "Ready"), ("dataset", "Ready")],
            (1, 0, 0),
            (1, 0, 0),
            False,
            id="two-dependencies-not-ready",
        ),
    ],
)
def test_dependency_reached_status(
    deps: list[tuple[str, str]] | None,
    model: tuple[int, int, int],
    dataset: tuple[int, int, int],
    met: bool,
) -> None:
    js = jobset(rjob("model", 2), rjob("dataset", 2), rjob("trainer", 1, depends_on=deps))
    jobs = counts_jobs("model", 2, *model) + counts_jobs("dataset", 2, *dataset)
    plan = run(js, jobs, objects=[service()])
    created = [a.name for a in plan.actions if a.type == "CreateJob"]
    assert created == (["js-trainer-0"] if met else [])


def test_dependency_on_a_later_replicated_job_is_never_met() -> None:
    js = jobset(rjob("first", 1, depends_on=[("second", "Ready")]), rjob("second", 0))
    plan = run(js, objects=[service()])
    assert [a.name for a in plan.actions if a.type == "CreateJob"] == []


def test_dependency_on_zero_replicas_is_met() -> None:
    js = jobset(rjob("none", 0), rjob("b", 1, depends_on=[("none", "Complete")]))
    plan = run(js, objects=[service()])
    assert [a.name for a in plan.actions if a.type == "CreateJob"] == ["js-b-0"]


# ---- TTL after finished -----------------------------------------------------------------------


def finished_at(seconds_ago: int, type_: str = "Completed") -> dict[str, Any]:
    t = (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "terminalState": type_,
        "conditions": [
            {
                "type": type_,
                "status": "True",
                "reason": "R",
                "message": "m",
                "lastTransitionTime": t,
            }
        ],
    }


@pytest.mark.parametrize(
    ("ttl", "status", "delete", "requeue"),
    [
        pytest.param(None, {}, False, 0, id="jobset-not-finished-ttl-not-set"),
        pytest.param(5, {}, False, 0, id="jobset-not-finished-ttl-5s"),
        pytest.param(None, finished_at(0), False, 0, id="jobset-completed-now-ttl-not-set"),
        pytest.param(5, finished_at(10), True, 0, id="jobset-completed-10s-ago-ttl-5s"),
        pytest.param(5, finished_at(2), False, 3, id="jobset-completed-2s-ago-ttl-5s"),
        pytest.param(0, finished_at(0), True, 0, id="jobset-completed-now-ttl-0s"),
        pytest.param(10, finished_at(0), False, 10, id="jobset-completed-now-ttl-10s"),
        pytest.param(15, finished_at(10), False, 5, id="jobset-completed-10s-ago-ttl-15s"),
        pytest.param(0, finished_at(0, "Failed"), True, 0, id="jobset-failed-now-ttl-0s"),
        pytest.param(10, finished_at(0, "Failed"), False, 10, id="jobset-failed-now-ttl-10s"),
        pytest.param(15, finished_at(10, "Failed"), False, 5, id="jobset-failed-10s-ago-ttl-15s"),
        pytest.param(10, finished_at(-5), False, 15, id="finished-in-the-future-clock-skew"),
    ],
)
def test_ttl_after_finished(
    ttl: int | None, status: dict[str, Any], delete: bool, requeue: int
) -> None:
    extra = {"ttlSecondsAfterFinished": ttl} if ttl is not None else {}
    js = jobset(rjob("w", 1), status=status, **extra)
    plan = run(
        js, [job("w", 0, state="succeeded")] if status else [job("w", 0)], objects=[service()]
    )
    deletes = [a for a in plan.actions if a.type == "DeleteJobSet"]
    assert bool(deletes) is delete
    if delete:
        assert deletes[0].propagation_policy == "Foreground"
        assert plan.actions[-1].type == "DeleteJobSet"
    assert plan.requeue_after_seconds == requeue


def test_ttl_jobset_being_deleted_is_left_alone() -> None:
    js = jobset(rjob("w", 1), status=finished_at(100), ttlSecondsAfterFinished=10)
    js["metadata"]["deletionTimestamp"] = NOW_STR
    plan = run(js, [job("w", 0, state="succeeded")])
    assert plan.actions == [] and plan.requeue_after_seconds == 0


def test_ttl_invalid_completion_time_is_an_error() -> None:
    status = {
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "R",
                "message": "m",
                "lastTransitionTime": "",
            }
        ]
    }
    js = jobset(rjob("w", 1), status=status, ttlSecondsAfterFinished=10)
    with pytest.raises(InvalidInput, match="unable to find the time when the JobSet"):
        run(js, [job("w", 0, state="succeeded")])


def test_terminal_pass_deletes_active_jobs_then_requeues() -> None:
    js = jobset(rjob("w", 3), status=finished_at(0, "Failed"), ttlSecondsAfterFinished=2)
    jobs = [job("w", 0, state="failed"), job("w", 1, active=1), job("w", 2, deleting=True)]
    plan = run(js, jobs)
    # The terminating one is skipped; the finished one stays.
    assert [t for t in types(plan) if t[0] == "DeleteJob"] == [("DeleteJob", "js-w-1")]
    assert plan.requeue_after_seconds == 2


# ---- volume claim policies ---------------------------------------------------------------------

PVC_SPEC = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}


def vcp(name: str, when: str | None, **meta: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"templates": [{"metadata": {"name": name, **meta}, "spec": PVC_SPEC}]}
    if when:
        out["retentionPolicy"] = {"whenDeleted": when}
    return out


def test_pvcs_with_retention_policies_labels_and_annotations() -> None:
    policies = [
        vcp("test-volume", "Delete", labels={"app": "x"}, annotations={"note": "y"}),
        vcp("test-volume-retain", "Retain"),
    ]
    plan = run(jobset(rjob("w", 1), volumeClaimPolicies=policies), objects=[service()])
    pvcs = {a.name: a.object for a in plan.actions if a.type == "CreatePVC"}
    owner = [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "js",
            "uid": "uid-js-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pvcs == {
        "test-volume-js": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "test-volume-js",
                "namespace": "default",
                "labels": {"app": "x", c.JOBSET_NAME: "js"},
                "annotations": {"note": "y"},
                "ownerReferences": owner,
            },
            "spec": PVC_SPEC,
        },
        "test-volume-retain-js": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "test-volume-retain-js",
                "namespace": "default",
                "labels": {c.JOBSET_NAME: "js"},
            },
            "spec": PVC_SPEC,
        },
    }


def test_existing_pvc_not_created_again_and_suspended_still_creates() -> None:
    from decider.core.model import ObservedObject

    existing = ObservedObject(api_version="v1", kind="PersistentVolumeClaim", name="a-js")
    js = jobset(
        rjob("w", 1), volumeClaimPolicies=[vcp("a", "Delete"), vcp("b", "Delete")], suspend=True
    )
    plan = run(js, objects=[service(), existing])
    assert [a.name for a in plan.actions if a.type == "CreatePVC"] == ["b-js"]


@pytest.mark.parametrize(
    ("containers", "init", "want"),
    [
        pytest.param(["a", "b"], [], ["a", "b"], id="add-volumes-for-matching-mounts"),
        pytest.param([], [], [], id="no-volumes-without-mounts"),
        pytest.param(["b"], [], ["b"], id="only-matching-volumes"),
        pytest.param([], ["c"], ["c"], id="volumes-from-init-container-mounts"),
    ],
)
def test_add_volumes(containers: list[str], init: list[str], want: list[str]) -> None:
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "volumes": [{"name": "own"}],
        "containers": [
            {
                "name": "m",
                "image": "i",
                "volumeMounts": [{"name": v, "mountPath": f"/{v}"} for v in containers],
            }
        ],
    }
    if init:
        pod_spec["initContainers"] = [
            {
                "name": "i",
                "image": "i",
                "volumeMounts": [{"name": v, "mountPath": f"/{v}"} for v in init],
            }
        ]
    policies = [
        vcp("a", "Delete"),
        {
            "templates": [
                {"metadata": {"name": "b"}, "spec": PVC_SPEC},
                {"metadata": {"name": "c"}, "spec": PVC_SPEC},
            ],
            "retentionPolicy": {"whenDeleted": "Retain"},
        },
    ]
    plan = run(
        jobset(rjob("w", 1, pod={"spec": pod_spec}), volumeClaimPolicies=policies),
        objects=[service()],
    )
    created = next(a.object for a in plan.actions if a.type == "CreateJob")
    volumes = created["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "own"}] + [
        {"name": v, "persistentVolumeClaim": {"claimName": f"{v}-js"}} for v in want
    ]


# ---- elastic scaling (TestSyncJobScaling) ----------------------------------------------------


@pytest.mark.parametrize(
    ("template", "live", "gate", "patch"),
    [
        pytest.param((4, 4), (4, 4), True, None, id="jobs-in-sync-no-patch"),
        pytest.param(
            (4, 4),
            (2, 2),
            True,
            {"spec": {"parallelism": 4, "completions": 4}},
            id="jobs-out-of-sync-patch",
        ),
        pytest.param((4, 2), (2, 2), True, None, id="parallelism-changed-only-invalid-no-patch"),
        pytest.param((2, 4), (2, 2), True, None, id="completions-changed-only-invalid-no-patch"),
        pytest.param((4, 4), (2, 2), False, None, id="out-of-sync-gate-disabled-no-patch"),
        pytest.param(
            (1, 1),
            (3, 3),
            True,
            {"spec": {"parallelism": 1, "completions": 1}},
            id="scale-down-patch",
        ),
    ],
)
def test_sync_job_scaling(
    template: tuple[int, int], live: tuple[int, int], gate: bool, patch: dict[str, Any] | None
) -> None:
    js = jobset(rjob("w", 2, parallelism=template[0], completions=template[1]))
    jobs = [job("w", i, parallelism=live[0], completions=live[1], active=1) for i in range(2)]
    jobs.append(job("w", 9, state="succeeded", parallelism=live[0], completions=live[1]))
    plan = run(js, jobs, objects=[service()], gates={"ElasticJobSet": gate})
    patches = [(a.name, a.patch) for a in plan.actions if a.type == "PatchJob"]
    if patch is None:
        assert patches == []
    else:
        # Active Jobs only; the finished one is left alone.
        assert patches == [("js-w-0", patch), ("js-w-1", patch)]


# ---- in-place restart (TestReconcileInPlaceRestart) ------------------------------------------

IPR = {"InPlaceRestart": True}


def pod(name: str, attempt: str | None = None, restarts: int = 0, phase: str = "Running") -> Any:
    ann = {c.IN_PLACE_RESTART_ATTEMPT: attempt} if attempt is not None else {}
    return ObservedPod(name=name, phase=phase, annotations=ann, max_container_restarts=restarts)


@pytest.mark.parametrize(
    ("max_restarts", "status", "pods", "want", "failed"),
    [
        pytest.param(
            1, {}, [pod("p1", restarts=2)], {}, True, id="container-exceeded-max-restarts-fails"
        ),
        pytest.param(
            1, {}, [pod("p1", "2")], {}, True, id="pod-in-place-attempt-exceeded-max-restarts-fails"
        ),
        pytest.param(
            3,
            {},
            [pod("p1", "0"), pod("p2", "0")],
            {"currentInPlaceRestartAttempt": 0},
            False,
            id="current-attempt-set-when-all-pods-in-sync-first-time",
        ),
        pytest.param(
            3,
            {"currentInPlaceRestartAttempt": 0, "previousInPlaceRestartAttempt": 0},
            [pod("p1", "1"), pod("p2", "1")],
            {"currentInPlaceRestartAttempt": 1, "previousInPlaceRestartAttempt": 0},
            False,
            id="current-attempt-updated-after-first-restart",
        ),
        pytest.param(3, {}, [], {}, False, id="no-pods-no-update"),
        pytest.param(3, {}, [pod("p1")], {}, False, id="pod-without-annotation-no-update"),
        pytest.param(
            3, {}, [pod("p1", "0"), pod("p2")], {}, False, id="one-pod-not-yet-annotated-no-update"
        ),
        pytest.param(3, {}, [pod("p1"), pod("p2")], {}, False, id="no-annotations-no-update"),
        pytest.param(
            3,
            {"currentInPlaceRestartAttempt": 0},
            [pod("p1", "0"), pod("p2", "1")],
            {"currentInPlaceRestartAttempt": 0, "previousInPlaceRestartAttempt": 0},
            False,
            id="previous-attempt-set-when-one-pod-restarted",
        ),
        pytest.param(
            3,
            {"currentInPlaceRestartAttempt": 1, "previousInPlaceRestartAttempt": 0},
            [pod("p1", "1"), pod("p2", "2")],
            {"currentInPlaceRestartAttempt": 1, "previousInPlaceRestartAttempt": 1},
            False,
            id="previous-attempt-raised-when-one-pod-restarted-again",
        ),
        pytest.param(
            3,
            {"previousInPlaceRestartAttempt": 4},
            [pod("p1", "1"), pod("p2", "2")],
            {"previousInPlaceRestartAttempt": 4},
            False,
            id="previous-attempt-never-lowered",
        ),
        pytest.param(
            1,
            {},
            [pod("p1", "5", phase="Failed"), pod("p2", "0")],
            {},
            False,
            id="failed-pod-attempt-skipped",
        ),
        pytest.param(
            1,
            {"restarts": 2, "restartsCountTowardsMax": 1},
            [pod("p1", "2")],
            {"previousInPlaceRestartAttempt": 1},
            False,
            id="uncounted-restarts-do-not-exceed",
        ),
    ],
)
def test_reconcile_in_place_restart(
    max_restarts: int, status: dict[str, Any], pods: list[Any], want: dict[str, Any], failed: bool
) -> None:
    fp = {"maxRestarts": max_restarts, "restartStrategy": "InPlaceRestart"}
    # Stored replicatedJobsStatus already matches the Jobs: any status write is in-place's.
    stored = [
        {"name": "rj-1", "ready": 2, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}
    ]
    js = jobset(
        rjob("rj-1", 2), failurePolicy=fp, status={**status, "replicatedJobsStatus": stored}
    )
    jobs = [job("rj-1", i, ready=1, active=1, attempt=status.get("restarts", 0)) for i in range(2)]
    plan = run(js, jobs, objects=[service()], pods=pods, gates=IPR)
    if failed:
        got = condition(plan, c.FAILED)
        assert (got["reason"], got["message"]) == (
            "ReachedMaxRestarts",
            "jobset failed due to reaching max number of restarts",
        )
        assert plan.status["terminalState"] == "Failed"
        return
    assert condition(plan, c.FAILED) is None
    for key in ("currentInPlaceRestartAttempt", "previousInPlaceRestartAttempt"):
        assert plan.status.get(key) == want.get(key)
    wrote = any(a.type == "UpdateStatus" for a in plan.actions)
    assert wrote is (want != {k: v for k, v in status.items() if "InPlace" in k})


@pytest.mark.parametrize("value", ["x", "-1", "1_0", " 1", "\u0661"])
def test_in_place_restart_attempt_annotation_must_be_a_non_negative_integer(value: str) -> None:
    """getPodInPlaceRestartAttempts (wantErr "pods with invalid integer annotations"): the
    reconcile returns the error, so no status is written; the steps before it acted
    (tests/upstream/test_stored_state.py shows them)."""
    fp = {"maxRestarts": 3, "restartStrategy": "InPlaceRestart"}
    js = jobset(rjob("rj-1", 1), failurePolicy=fp)
    plan = run(js, [job("rj-1", 0)], objects=[service()], pods=[pod("p1", value)], gates=IPR)
    assert "UpdateStatus" not in [a.type for a in plan.actions]
    assert any("in-place-restart-attempt" in s and "not a non-negative integer" in s
               for s in plan.explanation), plan.explanation


def test_in_place_restart_needs_completions_equal_parallelism() -> None:
    fp = {"maxRestarts": 3, "restartStrategy": "InPlaceRestart"}
    js = jobset(rjob("rj-1", 1, parallelism=2, completions=None), failurePolicy=fp)
    with pytest.raises(InvalidInput, match="completions"):
        run(js, [job("rj-1", 0)], objects=[service()], pods=[pod("p1", "0")], gates=IPR)


def test_in_place_restart_gate_off_is_not_reconciled() -> None:
    fp = {"maxRestarts": 0, "restartStrategy": "InPlaceRestart"}
    js = jobset(rjob("rj-1", 1), failurePolicy=fp)
    plan = run(js, [job("rj-1", 0)], objects=[service()], pods=[pod("p1", restarts=5)])
    assert condition(plan, c.FAILED) is None


# ---- managedBy --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("managed_by", "controller", "ours"),
    [
        pytest.param(None, "", True, id="unset-is-upstreams"),
        pytest.param("jobset.sigs.k8s.io/jobset-controller", "", True, id="reserved-value"),
        pytest.param("other-controller", "", False, id="other-controller-skipped"),
        pytest.param(
            "other-controller", "other-controller", True, id="decides-as-the-named-controller"
        ),
        pytest.param(
            "jobset.sigs.k8s.io/jobset-controller",
            "jobset-decider.io/shim",
            False,
            id="upstreams-jobset-skipped-by-the-shim",
        ),
    ],
)
@pytest.mark.parametrize("suspend", [True, False], ids=["suspended", "unsuspended"])
def test_managed_by(managed_by: str | None, controller: str, ours: bool, suspend: bool) -> None:
    status = {
        "restarts": 1,
        "conditions": [cond("Failed", "False", "ByTest", "")],
        "replicatedJobsStatus": [
            {"name": "w", "ready": 2, "succeeded": 3, "failed": 4, "active": 5, "suspended": 6}
        ],
    }
    extra = {"managedBy": managed_by} if managed_by is not None else {}
    js = jobset(rjob("w", 2), status=status, suspend=suspend, **extra)
    plan = run(js, controller=controller)
    if ours:
        assert any(a.type == "CreateJob" for a in plan.actions)
    else:
        assert plan.actions == []
        # Nothing is written; the plan's status keeps every stored value (normalized with the
        # zero defaults of absent counters).
        assert {k: plan.status[k] for k in status} == status
