"""One reconcile pass, rule by rule (upstream jobset_controller.go and its policy files)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from decider.core import constants as c
from decider.core.errors import InvalidInput
from support.builders import (
    NOW,
    NOW_STR,
    condition,
    events,
    job,
    jobset,
    kinds,
    rjob,
    rjs,
    run,
    service,
    types,
)

FAILED_COND = {"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "m",
               "lastTransitionTime": "2026-01-01T11:00:00Z"}
COMPLETED_COND = {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                  "message": "jobset completed successfully",
                  "lastTransitionTime": "2026-01-01T11:00:00Z"}


# --- replicatedJobsStatus -------------------------------------------------------------------

@pytest.mark.parametrize("j,field", [
    (job("w", 0, ready=1), "ready"),
    (job("w", 0, ready=1, parallelism=2, completions=1), "ready"),  # min(parallelism, completions)
    (job("w", 0, ready=0, parallelism=0, completions=None), "ready"),  # parallelism 0 is ready
    (job("w", 0, active=1), "active"),
    (job("w", 0, suspend=True), "suspended"),
    (job("w", 0, state="succeeded"), "succeeded"),
    (job("w", 0, state="failed"), "failed"),
], ids=["ready/succeeded+ready>=pods", "ready/min-parallelism-completions",
        "ready/parallelism-zero", "active/active-pods", "suspended/spec-suspend",
        "succeeded/complete-condition", "failed/failed-condition"])
def test_replicated_job_status_counts(j, field) -> None:
    js = jobset(rjob("w", 1), failurePolicy={"maxRestarts": 5})
    entry = rjs(run(js, [j], objects=[service()]), "w")
    assert entry[field] == 1
    assert all(entry[k] == 0 for k in ("ready", "active", "suspended", "succeeded", "failed")
               if k != field)


def test_status_is_sorted_by_name_descending_and_unchanged_status_is_not_written() -> None:
    js = jobset(rjob("a", 1), rjob("c", 1), rjob("b", 1))
    plan = run(js, [job("a", 0), job("b", 0), job("c", 0)], objects=[service()])
    assert [e["name"] for e in plan.status["replicatedJobsStatus"]] == ["c", "b", "a"]
    assert ("UpdateStatus", "js") in types(plan)
    again = run(jobset(rjob("a", 1), rjob("c", 1), rjob("b", 1), status=plan.status),
                [job("a", 0), job("b", 0), job("c", 0)], objects=[service()])
    assert ("UpdateStatus", "js") not in types(again)


# --- attempts -------------------------------------------------------------------------------

def test_previous_attempt_jobs_are_deleted_foreground_with_uid() -> None:
    js = jobset(rjob("w", 2), status={"restarts": 1})
    plan = run(js, [job("w", 0, attempt=0), job("w", 1, attempt=0, deleting=True),
                    job("w", 1, attempt=1)], objects=[service()])
    deletes = [a for a in plan.actions if a.type == "DeleteJob"]
    assert [(a.name, a.uid, a.propagation_policy) for a in deletes] == [
        ("js-w-0", "uid-w-0-0", "Foreground")]
    # Names still taken by old objects are not recreated in the same pass (Recreate).
    assert kinds(plan, "CreateJob") == []


def test_blocking_recreate_waits_for_every_old_job() -> None:
    js = jobset(rjob("w", 2), status={"restarts": 1},
                failurePolicy={"restartStrategy": "BlockingRecreate", "maxRestarts": 3})
    plan = run(js, [job("w", 1, attempt=0, deleting=True)], objects=[service()])
    assert kinds(plan, "CreateJob") == []
    recreate = run(jobset(rjob("w", 2), status={"restarts": 1},
                          failurePolicy={"restartStrategy": "Recreate", "maxRestarts": 3}),
                   [job("w", 1, attempt=0, deleting=True)], objects=[service()])
    assert kinds(recreate, "CreateJob") == ["js-w-0"]


@pytest.mark.parametrize("labels,field", [
    ({c.RESTART_ATTEMPT: "abc"}, f"jobs[0].labels[{c.RESTART_ATTEMPT}]"),
], ids=["malformed-restart-attempt"])
def test_malformed_labels_name_the_field(labels, field) -> None:
    with pytest.raises(InvalidInput) as info:
        run(jobset(rjob("w", 1)), [job("w", 0, labels=labels)])
    assert info.value.errors[0].field == field


# --- terminal and TTL -----------------------------------------------------------------------

@pytest.mark.parametrize("cond", [FAILED_COND, COMPLETED_COND], ids=["failed", "completed"])
def test_finished_jobset_deletes_active_jobs_only(cond) -> None:
    js = jobset(rjob("w", 3), status={"conditions": [cond]})
    plan = run(js, [job("w", 0), job("w", 1, state="succeeded"), job("w", 2, deleting=True)])
    assert kinds(plan, "DeleteJob") == ["js-w-0"]
    assert kinds(plan, "CreateJob") == []


@pytest.mark.parametrize("ttl,age,expect_delete,requeue", [
    (60, 30, False, 30),
    (60, 60, True, 0),
    (0, 0, True, 0),
    (None, 1000, False, 0),
], ids=["ttl/requeue-remaining", "ttl/expired", "ttl/zero", "ttl/unset"])
def test_ttl_after_finished(ttl, age, expect_delete, requeue) -> None:
    finished = (NOW - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
    js = jobset(rjob("w", 1), status={"conditions": [dict(COMPLETED_COND,
                                                          lastTransitionTime=finished)]}, **spec)
    plan = run(js)
    assert (kinds(plan, "DeleteJobSet") == ["js"]) is expect_delete
    assert plan.requeue_after_seconds == requeue
    if expect_delete:
        assert plan.actions[-1].type == "DeleteJobSet"
        assert plan.actions[-1].propagation_policy == "Foreground"


@pytest.mark.parametrize("ttl,finished,now_after,requeue_after,requeue_seconds", [
    # Upstream requeues for expireAt - now exactly; the whole seconds round it up.
    (5, "2026-01-01T12:00:00Z", 0.988, timedelta(seconds=4.012), 5),
    (5, "2026-01-01T12:00:00Z", 4.999999, timedelta(microseconds=1), 1),
    (5, "2026-01-01T12:00:00Z", 0, timedelta(seconds=5), 5),
    (60, "2026-01-01T11:59:30Z", 0.25, timedelta(seconds=29.75), 30),
    # Finished "in the future" (clock skew): the whole TTL and the skew, as upstream.
    (10, "2026-01-01T12:00:05Z", 0.5, timedelta(seconds=14.5), 15),
    # The deadline itself, and past it by a microsecond: delete, no requeue.
    (5, "2026-01-01T12:00:00Z", 5, timedelta(0), 0),
    (5, "2026-01-01T11:59:55Z", 0.000001, timedelta(0), 0),
], ids=["sub-second-left", "a-microsecond-left", "whole-ttl-left", "partly-elapsed",
        "finished-in-the-future", "at-the-deadline", "just-past-the-deadline"])
def test_ttl_requeues_for_the_exact_remainder(ttl, finished, now_after, requeue_after,
                                              requeue_seconds) -> None:
    js = jobset(rjob("w", 1), status={"conditions": [dict(COMPLETED_COND,
                                                          lastTransitionTime=finished)]},
                ttlSecondsAfterFinished=ttl)
    plan = run(js, now=NOW + timedelta(seconds=now_after))
    assert plan.requeue_after == requeue_after
    assert plan.requeue_after_seconds == requeue_seconds
    assert (kinds(plan, "DeleteJobSet") == ["js"]) is (requeue_after == timedelta(0))


# --- failure policy (issue 2 scope: nil policy, budget, default action) ---------------------

def test_no_failure_policy_fails_with_first_failed_job() -> None:
    plan = run(jobset(rjob("w", 3)), [
        job("w", 0, state="failed", failed_at="2026-01-01T11:30:00Z"),
        job("w", 1, state="failed", failed_at="2026-01-01T11:10:00Z"),
        job("w", 2)], objects=[service()])
    failed = condition(plan, "Failed")
    assert failed == {"type": "Failed", "status": "True", "lastTransitionTime": NOW_STR,
                      "reason": "FailedJobs",
                      "message": "jobset failed due to one or more job failures "
                                 "(first failed job: js-w-1)"}
    assert plan.status["terminalState"] == "Failed"
    assert ("Warning", "FailedJobs") in events(plan)
    # Failure stops the pass: nothing is created, nothing deleted yet (next pass does that).
    assert [t for t, _ in types(plan)] == ["UpdateStatus", "Event"]


def test_default_action_restarts_and_counts() -> None:
    js = jobset(rjob("w", 2), failurePolicy={"maxRestarts": 2})
    plan = run(js, [job("w", 0, state="failed"), job("w", 1)], objects=[service()])
    assert plan.status["restarts"] == 1
    assert plan.status["restartsCountTowardsMax"] == 1
    assert condition(plan, c.RESTARTING) == {
        "type": c.RESTARTING, "status": "True", "lastTransitionTime": NOW_STR,
        "reason": "DefaultFailurePolicy",
        "message": "applying RestartJobSet failure policy action (first failed job: js-w-0)"}
    assert ("Warning", "RestartJobSetFailurePolicyAction") in events(plan)


@pytest.mark.parametrize("max_restarts,counted", [(0, 0), (2, 2)],
                         ids=["maxRestarts-0-fails-at-once", "budget-spent"])
def test_reaching_max_restarts_fails(max_restarts, counted) -> None:
    js = jobset(rjob("w", 1), failurePolicy={"maxRestarts": max_restarts},
                status={"restarts": counted, "restartsCountTowardsMax": counted})
    plan = run(js, [job("w", 0, attempt=counted, state="failed")], objects=[service()])
    assert condition(plan, "Failed")["reason"] == "ReachedMaxRestarts"
    assert condition(plan, "Failed")["message"] == (
        "jobset failed due to reaching max number of restarts (first failed job: js-w-0)")
    assert plan.status["restarts"] == counted


# --- success policy -------------------------------------------------------------------------

@pytest.mark.parametrize("policy,succeeded,completes", [
    ({"operator": "All"}, ["a0", "b0"], False),
    ({"operator": "All"}, ["a0", "b0", "b1"], True),
    ({"operator": "Any"}, ["b1"], True),
    ({"operator": "All", "targetReplicatedJobs": ["a"]}, ["a0"], True),
    ({"operator": "All", "targetReplicatedJobs": ["b"]}, ["a0", "b0"], False),
    ({"operator": "Any", "targetReplicatedJobs": ["b"]}, ["a0"], False),
], ids=["all/partial", "all/every-job", "any/one-job", "all/targets-met",
        "all/targets-partial", "any/untargeted-success"])
def test_success_policy(policy, succeeded, completes) -> None:
    js = jobset(rjob("a", 1), rjob("b", 2), successPolicy=policy)
    jobs = [job(n[0], int(n[1]), state="succeeded" if n in succeeded else "active")
            for n in ("a0", "b0", "b1")]
    plan = run(js, jobs, objects=[service()])
    assert (condition(plan, "Completed") is not None) is completes
    if completes:
        assert condition(plan, "Completed")["reason"] == "AllJobsCompleted"
        assert plan.status["terminalState"] == "Completed"
        assert ("Normal", "AllJobsCompleted") in events(plan)


def test_success_all_over_zero_replica_targets_completes_on_first_success() -> None:
    js = jobset(rjob("a", 1), rjob("z", 0),
                successPolicy={"operator": "All", "targetReplicatedJobs": ["z"]})
    plan = run(js, [job("a", 0, state="succeeded")], objects=[service()])
    assert plan.status["terminalState"] == "Completed"


def test_failure_beats_success_in_the_same_pass() -> None:
    js = jobset(rjob("w", 2), successPolicy={"operator": "Any"})
    plan = run(js, [job("w", 0, state="succeeded"), job("w", 1, state="failed")])
    assert plan.status["terminalState"] == "Failed"


# --- suspend and resume ---------------------------------------------------------------------

def test_suspend_suspends_active_jobs_and_sets_condition() -> None:
    js = jobset(rjob("w", 2), suspend=True)
    plan = run(js, [job("w", 0), job("w", 1, suspend=True)], objects=[service()])
    suspends = [a for a in plan.actions if a.type == "SuspendJob"]
    assert [(a.name, a.patch) for a in suspends] == [("js-w-0", {"spec": {"suspend": True}})]
    assert condition(plan, "Suspended")["reason"] == "SuspendedJobs"
    assert condition(plan, "Suspended")["message"] == "jobset is suspended"


def test_resume_merges_scheduling_directives_and_clears_start_time() -> None:
    pod = {"metadata": {"labels": {"kueue": "admitted"}},
           "spec": {"nodeSelector": {"pool": "a"},
                    "tolerations": [{"key": "gpu", "operator": "Exists"}],
                    "schedulingGates": [{"name": "gate"}],
                    "containers": [{"name": "m"}]}}
    js = jobset(rjob("w", 1, pod=pod), status={"conditions": [
        {"type": "Suspended", "status": "True", "reason": "SuspendedJobs",
         "message": "jobset is suspended", "lastTransitionTime": "2026-01-01T10:00:00Z"}]})
    plan = run(js, [job("w", 0, suspend=True, start_time="2026-01-01T09:00:00Z")],
               objects=[service()])
    resume = next(a for a in plan.actions if a.type == "ResumeJob")
    assert resume.clear_start_time is True
    assert resume.patch == {"spec": {"suspend": False, "template": {
        "metadata": {"labels": {"kueue": "admitted"}},
        "spec": {"nodeSelector": {"pool": "a"},
                 "tolerations": [{"key": "gpu", "operator": "Exists"}],
                 "schedulingGates": [{"name": "gate"}]}}}}
    assert condition(plan, "Suspended") == {
        "type": "Suspended", "status": "False", "lastTransitionTime": NOW_STR,
        "reason": "ResumeJobs", "message": "jobset is resumed"}


def test_never_suspended_jobset_has_no_suspended_condition() -> None:
    plan = run(jobset(rjob("w", 1)), [job("w", 0)], objects=[service()])
    assert condition(plan, "Suspended") is None


# --- conditions -----------------------------------------------------------------------------

def test_same_status_new_message_keeps_transition_time() -> None:
    old = {"type": c.RESTARTING, "status": "True", "reason": "DefaultFailurePolicy",
           "message": "applying RestartJobSet failure policy action (first failed job: x)",
           "lastTransitionTime": "2026-01-01T08:00:00Z"}
    js = jobset(rjob("w", 1), failurePolicy={"maxRestarts": 5},
                status={"restarts": 1, "restartsCountTowardsMax": 1, "conditions": [old]})
    plan = run(js, [job("w", 0, attempt=1, state="failed")], objects=[service()])
    cond = condition(plan, c.RESTARTING)
    assert cond["lastTransitionTime"] == "2026-01-01T08:00:00Z"
    assert cond["message"].endswith("(first failed job: js-w-0)")


def test_restarting_false_only_after_a_restart() -> None:
    ready = [job("w", 0, ready=1)]
    assert condition(run(jobset(rjob("w", 1)), ready, objects=[service()]), c.RESTARTING) is None
    js = jobset(rjob("w", 1), status={"conditions": [
        {"type": c.RESTARTING, "status": "True", "reason": "DefaultFailurePolicy",
         "message": "m", "lastTransitionTime": "2026-01-01T08:00:00Z"}]})
    cond = condition(run(js, ready, objects=[service()]), c.RESTARTING)
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "JobsReady", "all jobs are ready")


# --- managedBy ------------------------------------------------------------------------------

@pytest.mark.parametrize("managed_by,controller,decided", [
    (None, "", True),
    ("jobset.sigs.k8s.io/jobset-controller", "", True),
    ("kueue.x-k8s.io/multikueue", "", False),
    ("jobset-decider.io/shim", "jobset-decider.io/shim", True),
    (None, "jobset-decider.io/shim", True),
    ("jobset.sigs.k8s.io/jobset-controller", "jobset-decider.io/shim", False),
], ids=["unset-is-ours", "upstream-name", "other-controller", "our-name", "unset-with-name",
        "upstream-name-not-ours"])
def test_managed_by(managed_by, controller, decided) -> None:
    spec = {} if managed_by is None else {"managedBy": managed_by}
    plan = run(jobset(rjob("w", 1), **spec), controller=controller)
    assert bool(plan.actions) is decided
