"""Upstream's integration table ("jobset is created and its jobs go through a series of updates"),
replayed as sequences of decide passes over an in-memory cluster.

Each scenario starts from the JobSet upstream's entry builds, applies each step's Job or JobSet
change, reconciles to a fixed point and checks what upstream checks after that step — plus the
exact conditions, counters, actions and events the upstream steps only sample.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from decider.core import constants as c
from upstream.fixtures import NAME, NS, UID, started, two_rjobs
from upstream.sim import World, kinds, named, plan_events

A0 = f"{NAME}-replicated-job-a-0"
B = [f"{NAME}-replicated-job-b-{i}" for i in range(3)]
ALL = [A0, *B]


def first_failed(job: str) -> str:
    return f"(first failed job: {job})"


# ---- success ----------------------------------------------------------------------------------


def creates_all_jobs(w: World) -> None:
    first = w.plans[0]
    # Service first, then the Jobs of each replicated Job in spec order, then one status write.
    assert [(a.type, a.name) for a in first.actions] == [
        ("CreateService", NAME),
        *[("CreateJob", n) for n in ALL],
        ("UpdateStatus", NAME),
    ]
    assert w.live() == ALL
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 0), "replicated-job-a": (0, 0, 0, 0, 0)}
    assert [e["name"] for e in w.status["replicatedJobsStatus"]] == [
        "replicated-job-b",
        "replicated-job-a",
    ]
    assert w.status["conditions"] == []
    assert all(not s for s in w.suspended().values())


def succeeds_after_all_jobs_succeed(w: World) -> None:
    w.complete(*ALL)
    plan = w.step()
    assert kinds(plan) == ["UpdateStatus", "Event"]
    assert w.cond_summary(c.COMPLETED) == (
        "True",
        "AllJobsCompleted",
        "jobset completed successfully",
    )
    assert w.status["terminalState"] == "Completed"
    assert w.rjs() == {"replicated-job-b": (0, 3, 0, 0, 0), "replicated-job-a": (0, 1, 0, 0, 0)}
    assert w.events == [("Normal", "AllJobsCompleted", "jobset completed successfully")]
    # Finished: nothing is deleted (no active Jobs), nothing more happens.
    assert w.settle()[-1].actions == []
    assert w.live() == ALL


def ignores_jobs_of_same_named_owner_with_other_uid(w: World) -> None:
    stranger = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "dummy-job",
            "namespace": NS,
            "uid": "dummy-uid",
            "labels": {
                c.JOBSET_NAME: NAME,
                c.REPLICATED_JOB_NAME: "non-existent-replicated-job",
                c.RESTART_ATTEMPT: "0",
            },
            "ownerReferences": [
                {
                    "apiVersion": c.API_VERSION,
                    "kind": c.KIND,
                    "name": NAME,
                    "controller": True,
                    "uid": "12345678-1234-1234-1234-123456789abc",
                }
            ],
        },
        "spec": {"template": {"spec": {"containers": []}}},
        "status": {},
    }
    w.jobs["dummy-job"] = stranger
    w.complete(*ALL)
    w.settle()
    assert w.cond_summary(c.COMPLETED)[0] == "True"
    assert w.rjs() == {"replicated-job-b": (0, 3, 0, 0, 0), "replicated-job-a": (0, 1, 0, 0, 0)}
    assert "dummy-job" in w.jobs and not w.jobs["dummy-job"]["metadata"].get("deletionTimestamp")
    assert all(a.name != "dummy-job" for p in w.plans for a in p.actions)


def not_complete_while_one_job_runs(w: World) -> None:
    w.complete(A0, B[0], B[1])
    w.ready(B[2])
    w.settle()
    assert w.condition(c.COMPLETED) is None
    assert w.status["terminalState"] == ""
    assert w.rjs() == {"replicated-job-b": (1, 2, 0, 1, 0), "replicated-job-a": (0, 1, 0, 0, 0)}


def success_all_with_empty_targets(w: World) -> None:
    w.complete(*w.of("replicated-job-a"))
    w.settle()
    assert w.condition(c.COMPLETED) is None
    w.complete(*w.of("replicated-job-b"))
    w.settle()
    assert w.cond_summary(c.COMPLETED)[:2] == ("True", "AllJobsCompleted")


def success_all_with_target(w: World) -> None:
    w.complete(*w.of("replicated-job-a"))
    w.settle()
    assert w.condition(c.COMPLETED) is None
    w.complete(B[0])
    w.settle()
    assert w.condition(c.COMPLETED) is None
    w.complete(B[1], B[2])
    w.settle()
    assert w.cond_summary(c.COMPLETED)[:2] == ("True", "AllJobsCompleted")


def success_any_with_target(w: World) -> None:
    w.complete(B[0])
    w.settle()
    assert w.cond_summary(c.COMPLETED)[:2] == ("True", "AllJobsCompleted")
    assert w.status["terminalState"] == "Completed"


def success_any_without_target(w: World) -> None:
    w.complete(B[0])
    w.step()
    assert w.cond_summary(c.COMPLETED)[:2] == ("True", "AllJobsCompleted")


def active_jobs_deleted_after_success(w: World) -> None:
    w.complete(B[0])
    w.step()
    assert w.cond_summary(c.COMPLETED)[0] == "True"
    plan = w.step()
    # Only the active Jobs go, in the foreground; the finished one stays.
    assert named(plan, "DeleteJob") == [A0, B[1], B[2]]
    assert {a.propagation_policy for a in plan.actions if a.type == "DeleteJob"} == {"Foreground"}
    assert "UpdateStatus" not in kinds(plan)
    w.finalize()
    assert w.live() == [B[0]]
    assert w.settle()[-1].actions == []


# ---- failure ------------------------------------------------------------------------------------


def fails_without_failure_policy(w: World) -> None:
    w.fail(A0)
    plan = w.step()
    assert w.cond_summary(c.FAILED) == (
        "True",
        "FailedJobs",
        f"jobset failed due to one or more job failures {first_failed(A0)}",
    )
    assert w.status["terminalState"] == "Failed"
    assert w.condition(c.RESTARTING) is None  # a False condition is never created from nothing
    assert plan_events(plan) == [("Warning", "FailedJobs", w.condition(c.FAILED)["message"])]


def active_jobs_deleted_after_failure(w: World) -> None:
    w.fail(A0)
    w.step()
    plan = w.step()
    assert named(plan, "DeleteJob") == B
    w.finalize()
    assert w.live() == [A0]


def fails_after_reaching_max_restarts(w: World) -> None:
    w.fail(A0)
    w.step()
    assert w.condition(c.FAILED) is None
    assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (1, 1)
    assert w.cond_summary(c.RESTARTING) == (
        "True",
        "DefaultFailurePolicy",
        f"applying RestartJobSet failure policy action {first_failed(A0)}",
    )
    assert w.events == [
        ("Warning", "DefaultFailurePolicy", w.condition(c.RESTARTING)["message"]),
        ("Warning", "RestartJobSetFailurePolicyAction", w.condition(c.RESTARTING)["message"]),
    ]
    plan = w.step()
    assert named(plan, "DeleteJob") == ALL and named(plan, "CreateJob") == []
    w.finalize()
    w.settle()
    assert w.attempts() == {1: 4}
    w.fail(B[0])
    w.step()
    assert w.cond_summary(c.FAILED) == (
        "True",
        "ReachedMaxRestarts",
        f"jobset failed due to reaching max number of restarts {first_failed(B[0])}",
    )
    assert w.cond_summary(c.RESTARTING) == ("False", "JobSetFailed", "jobset failed")
    assert w.status["restarts"] == 1


def rule(
    action: str,
    reasons: list[str] | None = None,
    patterns: list[str] | None = None,
    targets: list[str] | None = None,
    name: str = "",
) -> dict[str, object]:
    out: dict[str, object] = {"action": action}
    if name:
        out["name"] = name
    if reasons is not None:
        out["onJobFailureReasons"] = reasons
    if patterns is not None:
        out["onJobFailureMessagePatterns"] = patterns
    if targets is not None:
        out["targetReplicatedJobs"] = targets
    return out


def fails_now(reason: str, message: str = "", job: str = A0) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        w.fail(job, reason, message)
        w.step()
        assert w.cond_summary(c.FAILED) == (
            "True",
            "FailJobSetFailurePolicyAction",
            f"applying FailJobSet failure policy action {first_failed(job)}",
        )
        assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (0, 0)
        assert w.status["terminalState"] == "Failed"

    return scenario


def restarts_instead(
    reason: str,
    message: str = "",
    job: str = A0,
    *,
    counts: bool = True,
    rule_reason: str = "DefaultFailurePolicy",
) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        w.fail(job, reason, message)
        w.step()
        assert w.condition(c.FAILED) is None
        assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (1, int(counts))
        assert w.condition(c.RESTARTING)["reason"] == rule_reason
        w.step()
        w.finalize()
        w.settle()
        assert w.attempts() == {1: 4}

    return scenario


def restarting_condition_transitions(w: World) -> None:
    w.fail(A0, "PodFailurePolicy")
    w.step()
    assert w.cond_summary(c.RESTARTING)[:2] == ("True", "FailurePolicy_Rule1")
    w.step()
    w.finalize()
    w.settle()
    w.ready(*ALL)
    plan = w.step()
    assert w.cond_summary(c.RESTARTING) == ("False", "JobsReady", "all jobs are ready")
    assert plan_events(plan) == [("Normal", "JobsReady", "all jobs are ready")]


def restart_jobset_keeps_job_counters_empty(w: World) -> None:
    w.fail(A0, "PodFailurePolicy")
    w.step()
    assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (1, 1)
    for entry in w.status["replicatedJobsStatus"]:
        assert "jobRestarts" not in entry and "jobRestartsCountTowardsMax" not in entry


def restart_job_only_recreates_that_job(ignore_max: bool) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        w.fail(A0, "PodFailurePolicy")
        plan = w.step()
        action = "RestartJobAndIgnoreMaxRestarts" if ignore_max else "RestartJob"
        message = f"applying {action} failure policy action {first_failed(A0)}"
        # No RestartingJobSet condition for per-Job restarts; only the action's event.
        assert w.condition(c.RESTARTING) is None
        assert plan_events(plan) == [("Warning", f"{action}FailurePolicyAction", message)]
        assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (0, 0)
        entry = next(e for e in w.status["replicatedJobsStatus"] if e["name"] == "replicated-job-a")
        assert entry["jobRestarts"] == [1]
        if ignore_max:
            assert "jobRestartsCountTowardsMax" not in entry
        else:
            assert entry["jobRestartsCountTowardsMax"] == [1]
        plan = w.step()
        assert named(plan, "DeleteJob") == [A0]
        w.finalize()
        plan = w.settle()[0]
        assert named(plan, "CreateJob") == [A0]
        labels = w.jobs[A0]["metadata"]["labels"]
        assert (labels[c.RESTART_ATTEMPT], labels[c.JOB_RESTART_ATTEMPT]) == ("0", "1")
        assert {w.jobs[b]["metadata"]["labels"][c.JOB_RESTART_ATTEMPT] for b in B} == {"0"}
        assert w.jobs[A0]["metadata"]["annotations"][c.JOB_RESTART_ATTEMPT] == "1"

    return scenario


def recreate_strategy(blocking: bool) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        w.fail(A0, "PodFailurePolicy")
        w.step()
        assert w.status["restarts"] == 1
        w.step()
        w.finalize(3)
        w.settle()
        if blocking:
            assert w.attempts() == {0: 1}
        else:
            assert w.attempts() == {0: 1, 1: 3}
        w.finalize(1)
        w.settle()
        assert w.attempts() == {1: 4}

    return scenario


def ignore_max_restarts_three_times(w: World) -> None:
    for attempt in (1, 2, 3):
        w.fail(w.of("replicated-job-a")[0], "PodFailurePolicy")
        w.step()
        assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (attempt, 0)
        assert w.cond_summary(c.RESTARTING)[:2] == ("True", "FailurePolicy_failurePolicyRule0")
        w.step()
        w.finalize()
        w.settle()
        assert w.attempts() == {attempt: 4}
    for entry in w.status["replicatedJobsStatus"]:
        assert "jobRestarts" not in entry


def rules_order_test_3(w: World) -> None:
    for attempt in (1, 2, 3):
        w.fail(A0, "MaxFailedIndexesExceeded")
        w.step()
        assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (attempt, 0)
        w.step()
        w.finalize()
        w.settle()
    w.fail(B[0])
    w.step()
    assert w.cond_summary(c.FAILED)[:2] == ("True", "FailJobSetFailurePolicyAction")
    assert (w.status["restarts"], w.status["restartsCountTowardsMax"]) == (3, 0)


def succeeds_after_one_failure(w: World) -> None:
    w.complete(A0)
    w.fail(B[0])
    w.step()
    # Failure beats success in the same pass.
    assert w.condition(c.COMPLETED) is None and w.status["restarts"] == 1
    plan = w.step()
    # The successful Job of the old attempt is recreated too.
    assert named(plan, "DeleteJob") == ALL
    w.finalize()
    w.settle()
    w.complete(*ALL)
    w.settle()
    assert w.cond_summary(c.COMPLETED)[:2] == ("True", "AllJobsCompleted")
    assert w.cond_summary(c.RESTARTING) == (
        "False",
        "JobSetCompleted",
        "jobset completed successfully",
    )


# ---- suspend / resume -------------------------------------------------------------------------


def created_suspended(w: World) -> None:
    assert all(w.suspended().values()) and len(w.jobs) == 4
    assert w.cond_summary(c.SUSPENDED) == ("True", "SuspendedJobs", "jobset is suspended")
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 3), "replicated-job-a": (0, 0, 0, 0, 1)}
    assert w.condition(c.RESTARTING) is None


POD_UPDATES = {
    "labels": {"label": "value"},
    "annotations": {"annotation": "value"},
    "nodeSelector": {"node-selector-test-a": "node-selector-test-a"},
    "tolerations": [{"key": "key", "operator": "Exists"}],
}


def resume_with_pod_template_updates(w: World) -> None:
    w.mark_suspended(*ALL)
    for rj in w.jobset["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]
        pod["metadata"] = {
            "labels": POD_UPDATES["labels"],
            "annotations": POD_UPDATES["annotations"],
        }
        pod["spec"]["nodeSelector"] = POD_UPDATES["nodeSelector"]
        pod["spec"]["tolerations"] = POD_UPDATES["tolerations"]
    # Still suspended: the template edits wait for the resume.
    assert w.settle()[-1].actions == []
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 3), "replicated-job-a": (0, 0, 0, 0, 1)}
    w.update_spec(suspend=False)
    plan = w.step()
    assert named(plan, "ResumeJob") == ALL
    assert all(not s for s in w.suspended().values())
    assert w.cond_summary(c.SUSPENDED) == ("False", "ResumeJobs", "jobset is resumed")
    for job in w.jobs.values():
        pod = job["spec"]["template"]
        assert pod["metadata"]["labels"]["label"] == "value"
        assert pod["metadata"]["labels"][c.JOBSET_NAME] == NAME  # kept, merged not replaced
        assert pod["metadata"]["annotations"]["annotation"] == "value"
        assert pod["spec"]["nodeSelector"] == POD_UPDATES["nodeSelector"]
        assert {"key": "key", "operator": "Exists"} in pod["spec"]["tolerations"]
        assert "startTime" not in job["status"]
    w.complete(*ALL)
    w.settle()
    assert w.cond_summary(c.COMPLETED)[0] == "True"
    assert w.rjs() == {"replicated-job-b": (0, 3, 0, 0, 0), "replicated-job-a": (0, 1, 0, 0, 0)}


def suspend_running_jobset(w: World) -> None:
    assert not any(w.suspended().values())
    w.update_spec(suspend=True)
    plan = w.step()
    assert named(plan, "SuspendJob") == ALL
    assert all(
        a.patch == {"spec": {"suspend": True}} for a in plan.actions if a.type == "SuspendJob"
    )
    assert all(w.suspended().values())
    assert w.cond_summary(c.SUSPENDED) == ("True", "SuspendedJobs", "jobset is suspended")


def anyorder_resume(w: World) -> None:
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 3), "replicated-job-a": (0, 0, 0, 0, 1)}
    w.update_spec(suspend=False)
    w.settle()
    assert not any(w.suspended().values())
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 0), "replicated-job-a": (0, 0, 0, 0, 0)}


def inorder_suspended_keeps_jobs_suspended(w: World) -> None:
    # Suspended: InOrder does not gate creation, and sets no startup condition.
    assert len(w.jobs) == 4 and all(w.suspended().values())
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 3), "replicated-job-a": (0, 0, 0, 0, 1)}
    assert w.condition(c.STARTUP_IN_PROGRESS) is None
    assert w.condition(c.STARTUP_COMPLETED) is None


def inorder_resume(w: World) -> None:
    w.update_spec(suspend=False)
    w.settle()
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 3), "replicated-job-a": (0, 0, 0, 0, 0)}
    assert w.cond_summary(c.STARTUP_IN_PROGRESS)[:2] == ("True", "InOrderStartupPolicyInProgress")
    # Suspended stays True while the sequence is still resuming.
    assert w.cond_summary(c.SUSPENDED)[0] == "True"
    w.ready(*w.of("replicated-job-a"))
    w.settle()
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 0, 0), "replicated-job-a": (1, 0, 0, 1, 0)}
    assert w.condition(c.STARTUP_COMPLETED) is None
    w.ready(*w.of("replicated-job-b"))
    w.settle()
    assert w.rjs() == {"replicated-job-b": (3, 0, 0, 3, 0), "replicated-job-a": (1, 0, 0, 1, 0)}
    assert w.cond_summary(c.STARTUP_COMPLETED) == (
        "True",
        "InOrderStartupPolicyCompleted",
        "in order startup policy has completed",
    )
    assert w.condition(c.STARTUP_IN_PROGRESS)["status"] == "False"
    assert w.cond_summary(c.SUSPENDED) == ("False", "ResumeJobs", "jobset is resumed")


# ---- InOrder startup -------------------------------------------------------------------------


def inorder_waits_for_ready(w: World) -> None:
    assert w.live() == [A0]
    assert w.cond_summary(c.STARTUP_IN_PROGRESS) == (
        "True",
        "InOrderStartupPolicyInProgress",
        "in order startup policy is in progress",
    )
    w.ready(A0)
    w.settle()
    assert w.live() == ALL
    assert w.rjs()["replicated-job-a"] == (1, 0, 0, 1, 0)
    w.active(*B)
    w.settle()
    assert w.rjs() == {"replicated-job-b": (0, 0, 0, 3, 0), "replicated-job-a": (1, 0, 0, 1, 0)}
    assert w.condition(c.STARTUP_COMPLETED) is None
    w.ready(*B)
    plan = w.step()
    assert w.rjs() == {"replicated-job-b": (3, 0, 0, 3, 0), "replicated-job-a": (1, 0, 0, 1, 0)}
    assert w.cond_summary(c.STARTUP_COMPLETED)[:2] == ("True", "InOrderStartupPolicyCompleted")
    assert w.condition(c.STARTUP_IN_PROGRESS)["status"] == "False"
    assert plan_events(plan) == [
        ("Normal", "InOrderStartupPolicyCompleted", "in order startup policy has completed")
    ]


def inorder_sequence_restarts_after_failure(w: World) -> None:
    assert w.live() == [A0]
    w.ready(A0)
    w.settle()
    w.ready(*B)
    w.settle()
    assert w.condition(c.STARTUP_COMPLETED)["status"] == "True"
    w.complete(A0)
    w.fail(B[0])
    w.step()
    assert w.status["restarts"] == 1
    w.step()
    w.finalize()
    w.settle()
    # The sequence starts again from the first replicated Job.
    assert w.live() == [A0]
    assert w.cond_summary(c.STARTUP_IN_PROGRESS)[0] == "True"
    assert w.condition(c.STARTUP_COMPLETED)["status"] == "False"
    w.ready(A0)
    w.settle()
    w.ready(*B)
    w.settle()
    assert w.rjs() == {"replicated-job-b": (3, 0, 0, 3, 0), "replicated-job-a": (1, 0, 0, 1, 0)}
    assert w.condition(c.STARTUP_COMPLETED)["status"] == "True"
    assert w.attempts() == {1: 4}
    assert w.cond_summary(c.RESTARTING) == ("False", "JobsReady", "all jobs are ready")


# ---- DependsOn ----------------------------------------------------------------------------------


def dep_b_on_a_ready(w: World) -> None:
    assert w.live() == ["depends-on-rjob-a-0"]
    w.ready("depends-on-rjob-a-0")
    w.settle()
    assert w.rjs()["rjob-a"] == (1, 0, 0, 1, 0)
    assert len(w.live()) == 4
    w.ready(*w.of("rjob-b"))
    w.settle()
    assert w.rjs() == {"rjob-b": (3, 0, 0, 3, 0), "rjob-a": (1, 0, 0, 1, 0)}


def dep_chain_complete_then_ready(w: World) -> None:
    assert w.live() == ["depends-on-rjob-a-0"]
    w.complete("depends-on-rjob-a-0")
    w.settle()
    assert len(w.live()) == 2
    assert w.rjs()["rjob-a"] == (0, 1, 0, 0, 0)
    w.ready("depends-on-rjob-b-0")
    w.settle()
    assert len(w.live()) == 5
    assert w.rjs() == {
        "rjob-c": (0, 0, 0, 0, 0),
        "rjob-b": (1, 0, 0, 1, 0),
        "rjob-a": (0, 1, 0, 0, 0),
    }
    w.complete(*w.live())
    w.settle()
    assert w.rjs() == {
        "rjob-c": (0, 3, 0, 0, 0),
        "rjob-b": (0, 1, 0, 0, 0),
        "rjob-a": (0, 1, 0, 0, 0),
    }
    assert w.cond_summary(c.COMPLETED)[0] == "True"


def dep_c_on_two(first: str) -> Callable[[World], None]:
    def scenario(w: World) -> None:
        assert w.live() == ["depends-on-rjob-a-0", "depends-on-rjob-b-0"]
        if first == "complete":
            w.complete("depends-on-rjob-a-0")
        else:
            w.ready("depends-on-rjob-a-0")
        # Only one of the two dependencies met: rjob-c waits.
        w.settle()
        assert len(w.live()) == 2
        w.complete("depends-on-rjob-b-0")
        w.settle()
        assert len(w.live()) == 5
        want_a = (0, 1, 0, 0, 0) if first == "complete" else (1, 0, 0, 1, 0)
        assert w.rjs() == {"rjob-c": (0, 0, 0, 0, 0), "rjob-b": (0, 1, 0, 0, 0), "rjob-a": want_a}
        w.complete(*w.live())
        w.settle()
        assert w.rjs() == {
            "rjob-c": (0, 3, 0, 0, 0),
            "rjob-b": (0, 1, 0, 0, 0),
            "rjob-a": (0, 1, 0, 0, 0),
        }

    return scenario


def dep_resume_suspended(w: World) -> None:
    # Suspended: DependsOn still gates creation.
    assert w.live() == ["depends-on-rjob-a-0"]
    assert w.rjs() == {"rjob-b": (0, 0, 0, 0, 0), "rjob-a": (0, 0, 0, 0, 1)}
    w.update_spec(suspend=False)
    w.settle()
    assert w.rjs() == {"rjob-b": (0, 0, 0, 0, 0), "rjob-a": (0, 0, 0, 0, 0)}
    assert w.live() == ["depends-on-rjob-a-0"]
    w.ready("depends-on-rjob-a-0")
    w.settle()
    assert len(w.live()) == 4
    assert w.rjs() == {"rjob-b": (0, 0, 0, 0, 0), "rjob-a": (1, 0, 0, 1, 0)}
    assert not any(w.suspended().values())
    w.ready(*w.of("rjob-b"))
    w.settle()
    assert w.rjs() == {"rjob-b": (3, 0, 0, 3, 0), "rjob-a": (1, 0, 0, 1, 0)}


# ---- services, coordinator, PVCs ------------------------------------------------------------


def service_recreated_after_delete(w: World) -> None:
    assert list(w.others) == [("Service", NAME)]
    svc = w.others[("Service", NAME)]
    assert svc["spec"] == {
        "clusterIP": "None",
        "selector": {c.JOBSET_NAME: NAME},
        "publishNotReadyAddresses": True,
    }
    w.delete_other("Service", NAME)
    plan = w.step()
    assert kinds(plan) == ["CreateService"]
    assert list(w.others) == [("Service", NAME)]


def coordinator_on_every_job(w: World) -> None:
    endpoint = f"{NAME}-replicated-job-a-0-0.{NAME}"
    for job in w.jobs.values():
        for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
            assert meta["labels"][c.COORDINATOR] == endpoint
            assert meta["annotations"][c.COORDINATOR] == endpoint


# ---- scenario table ---------------------------------------------------------------------------


def fp(
    *rules: dict[str, object], max_restarts: int = 1, strategy: str | None = None
) -> dict[str, object]:
    out: dict[str, object] = {"maxRestarts": max_restarts, "rules": list(rules)}
    if strategy:
        out["restartStrategy"] = strategy
    return out


RESTART_JOB = {"RestartJob": True}
PFP = "PodFailurePolicy"

SCENARIOS = [
    pytest.param(two_rjobs(), {}, creates_all_jobs, id="jobset-should-successfully-create-jobs"),
    pytest.param(
        two_rjobs(),
        {},
        succeeds_after_all_jobs_succeed,
        id="jobset-should-succeed-after-all-jobs-succeed",
    ),
    pytest.param(
        two_rjobs(),
        {},
        ignores_jobs_of_same_named_owner_with_other_uid,
        id="ignore-jobs-with-same-owner-name-but-different-owner-uid",
    ),
    pytest.param(
        two_rjobs(),
        {},
        not_complete_while_one_job_runs,
        id="not-succeed-if-any-job-is-not-completed",
    ),
    pytest.param(
        two_rjobs(),
        {},
        success_all_with_empty_targets,
        id="success-policy/all-with-empty-replicated-jobs-list",
    ),
    pytest.param(
        two_rjobs(successPolicy={"operator": "All", "targetReplicatedJobs": ["replicated-job-b"]}),
        {},
        success_all_with_target,
        id="success-policy/all-with-replicated-jobs",
    ),
    pytest.param(
        two_rjobs(successPolicy={"operator": "Any", "targetReplicatedJobs": ["replicated-job-b"]}),
        {},
        success_any_with_target,
        id="success-policy/any-with-replicated-job",
    ),
    pytest.param(
        two_rjobs(successPolicy={"operator": "Any", "targetReplicatedJobs": []}),
        {},
        success_any_without_target,
        id="success-policy/any-without-replicated-job",
    ),
    pytest.param(
        two_rjobs(successPolicy={"operator": "Any", "targetReplicatedJobs": []}),
        {},
        active_jobs_deleted_after_success,
        id="active-jobs-are-deleted-after-jobset-succeeds",
    ),
    pytest.param(
        two_rjobs(),
        {},
        fails_without_failure_policy,
        id="failure-policy/no-failure-policy-fails-on-any-job-failure",
    ),
    pytest.param(
        two_rjobs(),
        {},
        active_jobs_deleted_after_failure,
        id="active-jobs-are-deleted-after-jobset-fails",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp()),
        {},
        fails_after_reaching_max_restarts,
        id="failure-policy/fails-after-reaching-max-restarts",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(rule("FailJobSet", reasons=[]))),
        {},
        fails_now(PFP),
        id="failure-policy/fail-jobset-immediately",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(rule("FailJobSet", reasons=["BackoffLimitExceeded"]))),
        {},
        restarts_instead(PFP),
        id="failure-policy/fail-jobset-reason-not-matched",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(rule("FailJobSet", reasons=[], patterns=["some message"]))),
        {},
        restarts_instead(PFP, "some critical error with a message"),
        id="failure-policy/fail-jobset-message-not-matched",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(rule("FailJobSet", reasons=[PFP], patterns=["some message"]))),
        {},
        restarts_instead(PFP, "some critical error with a message"),
        id="failure-policy/fail-jobset-reason-matched-message-not",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(rule("FailJobSet", reasons=[PFP], patterns=["some message"]))),
        {},
        fails_now(PFP, "some message"),
        id="failure-policy/fail-jobset-reason-and-message-matched",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(rule("FailJobSet", reasons=[PFP], patterns=["some message"]))),
        {},
        fails_now(PFP, "this is some message with critical error"),
        id="failure-policy/fail-jobset-message-pattern-found-inside-message",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(rule("RestartJobSet", reasons=[PFP]), rule("FailJobSet", reasons=[]))
        ),
        {},
        restarts_instead(PFP, rule_reason="FailurePolicy_failurePolicyRule0"),
        id="failure-policy/restart-jobset-rule-without-restart-job-gate",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(rule("RestartJobSet", reasons=[PFP]), rule("FailJobSet", reasons=[]))
        ),
        RESTART_JOB,
        restart_jobset_keeps_job_counters_empty,
        id="failure-policy/restart-jobset-rule-with-restart-job-gate",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(rule("RestartJobSet", reasons=[PFP], name="Rule1"))),
        {},
        restarting_condition_transitions,
        id="failure-policy/restarting-condition-transitions",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(rule("RestartJob", reasons=[PFP]), rule("FailJobSet", reasons=[]))
        ),
        RESTART_JOB,
        restart_job_only_recreates_that_job(False),
        id="failure-policy/restart-job-action",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule("RestartJobAndIgnoreMaxRestarts", reasons=[PFP]),
                rule("FailJobSet", reasons=[]),
            )
        ),
        RESTART_JOB,
        restart_job_only_recreates_that_job(True),
        id="failure-policy/restart-job-and-ignore-max-restarts-action",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(strategy="Recreate")),
        {},
        recreate_strategy(False),
        id="failure-policy/recreate-strategy-recreates-each-job-once-gone",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp(strategy="BlockingRecreate")),
        {},
        recreate_strategy(True),
        id="failure-policy/blocking-recreate-waits-for-every-old-job",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule("RestartJobSetAndIgnoreMaxRestarts", reasons=[PFP]),
                rule("FailJobSet", reasons=[]),
            )
        ),
        {},
        ignore_max_restarts_three_times,
        id="failure-policy/restart-jobset-and-ignore-max-restarts-without-gate",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule("RestartJobSetAndIgnoreMaxRestarts", reasons=[PFP]),
                rule("FailJobSet", reasons=[]),
            )
        ),
        RESTART_JOB,
        ignore_max_restarts_three_times,
        id="failure-policy/restart-jobset-and-ignore-max-restarts-with-gate",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule("FailJobSet", reasons=["FailedIndexes"], targets=["replicated-job-b"])
            )
        ),
        {},
        fails_now("FailedIndexes", job=B[0]),
        id="failure-policy/target-replicated-jobs-contains-parent",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule("FailJobSet", reasons=["BackoffLimitExceeded"], targets=["replicated-job-a"])
            )
        ),
        {},
        restarts_instead("BackoffLimitExceeded", job=B[0]),
        id="failure-policy/target-replicated-jobs-lacks-parent",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule(
                    "FailJobSet", reasons=["MaxFailedIndexesExceeded"], targets=["replicated-job-a"]
                ),
                rule(
                    "RestartJobSet",
                    reasons=["MaxFailedIndexesExceeded"],
                    targets=["replicated-job-a"],
                ),
            )
        ),
        {},
        fails_now("MaxFailedIndexesExceeded"),
        id="failure-policy/rules-order-test-1",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule(
                    "RestartJobSet",
                    reasons=["MaxFailedIndexesExceeded"],
                    targets=["replicated-job-a"],
                ),
                rule(
                    "FailJobSet", reasons=["MaxFailedIndexesExceeded"], targets=["replicated-job-a"]
                ),
            )
        ),
        {},
        restarts_instead(
            "MaxFailedIndexesExceeded", rule_reason="FailurePolicy_failurePolicyRule0"
        ),
        id="failure-policy/rules-order-test-2",
    ),
    pytest.param(
        two_rjobs(
            failurePolicy=fp(
                rule(
                    "RestartJobSetAndIgnoreMaxRestarts",
                    reasons=["MaxFailedIndexesExceeded"],
                    targets=["replicated-job-a"],
                ),
                rule("FailJobSet", reasons=[], targets=[]),
            )
        ),
        {},
        rules_order_test_3,
        id="failure-policy/rules-order-test-3",
    ),
    pytest.param(
        two_rjobs(failurePolicy=fp()),
        {},
        succeeds_after_one_failure,
        id="job-succeeds-after-one-failure",
    ),
    pytest.param(
        two_rjobs(suspend=True),
        {},
        created_suspended,
        id="suspend/jobset-created-in-suspended-state",
    ),
    pytest.param(
        two_rjobs(suspend=True),
        {},
        resume_with_pod_template_updates,
        id="suspend/resume-a-suspended-jobset-merges-pod-template-updates",
    ),
    pytest.param(
        two_rjobs(suspend=False), {}, suspend_running_jobset, id="suspend/suspend-a-running-jobset"
    ),
    pytest.param(
        two_rjobs(suspend=True, startupPolicy={"startupPolicyOrder": "InOrder"}),
        {},
        inorder_suspended_keeps_jobs_suspended,
        id="startup-policy/in-order-suspend-keeps-jobs-suspended",
    ),
    pytest.param(
        two_rjobs(suspend=True, startupPolicy={"startupPolicyOrder": "AnyOrder"}),
        {},
        anyorder_resume,
        id="startup-policy/any-order-resume-suspended-jobset",
    ),
    pytest.param(
        two_rjobs(suspend=True, startupPolicy={"startupPolicyOrder": "InOrder"}),
        {},
        inorder_resume,
        id="startup-policy/in-order-resume-suspended-jobset",
    ),
    pytest.param(
        two_rjobs(startupPolicy={"startupPolicyOrder": "InOrder"}),
        {},
        inorder_waits_for_ready,
        id="startup-policy/in-order-job-a-not-ready-then-job-b-does-not-run",
    ),
    pytest.param(
        two_rjobs(startupPolicy={"startupPolicyOrder": "InOrder"}, failurePolicy=fp()),
        {},
        inorder_sequence_restarts_after_failure,
        id="startup-policy/in-order-sequence-restarts-after-jobset-restart",
    ),
    pytest.param(two_rjobs(), {}, service_recreated_after_delete, id="service-deleted"),
    pytest.param(
        two_rjobs(coordinator={"replicatedJob": "replicated-job-a", "jobIndex": 0, "podIndex": 0}),
        {},
        coordinator_on_every_job,
        id="coordinator-label-and-annotation-on-all-jobs",
    ),
]


def _dep_scenarios() -> list[object]:
    from upstream.fixtures import three_deps

    ready_a = [("rjob-a", "Ready")]
    return [
        pytest.param(
            three_deps(None, ready_a, replicas=(1, 3)),
            {},
            dep_b_on_a_ready,
            id="depends-on/rjob-b-on-ready-rjob-a",
        ),
        pytest.param(
            three_deps(None, [("rjob-a", "Complete")], [("rjob-b", "Ready")]),
            {},
            dep_chain_complete_then_ready,
            id="depends-on/rjob-b-on-complete-a-rjob-c-on-ready-b",
        ),
        pytest.param(
            three_deps(None, None, [("rjob-a", "Complete"), ("rjob-b", "Complete")]),
            {},
            dep_c_on_two("complete"),
            id="depends-on/rjob-c-on-complete-a-and-b",
        ),
        pytest.param(
            three_deps(None, None, [("rjob-a", "Ready"), ("rjob-b", "Complete")]),
            {},
            dep_c_on_two("ready"),
            id="depends-on/rjob-c-on-ready-a-and-complete-b",
        ),
        pytest.param(
            three_deps(None, ready_a, replicas=(1, 3), suspend=True),
            {},
            dep_resume_suspended,
            id="depends-on/resume-suspended-jobset",
        ),
    ]


@pytest.mark.parametrize(("js", "gates", "scenario"), SCENARIOS + _dep_scenarios())
def test_integration_scenario(
    js: dict[str, object], gates: dict[str, bool], scenario: Callable[[World], None]
) -> None:
    w = started(js, gates=gates)
    scenario(w)


def test_ids_are_unique() -> None:
    ids = [p.id for p in SCENARIOS + _dep_scenarios()]  # type: ignore[attr-defined]
    assert len(ids) == len(set(ids))
    assert UID and NS


def test_ttl_after_finished_deletes_only_the_jobset_with_ttl() -> None:
    """Upstream: "JobSet controller should delete it after configured ttl duration passes"."""
    with_ttl = started(two_rjobs(ttlSecondsAfterFinished=2))
    without = started(two_rjobs())
    with_ttl.fail(A0)
    without.complete(*ALL)
    with_ttl.step()
    without.step()
    assert with_ttl.cond_summary(c.FAILED)[0] == "True"
    assert without.cond_summary(c.COMPLETED)[0] == "True"
    # Next pass: the active Jobs of the failed JobSet go; the TTL asks for a requeue.
    plan = with_ttl.step()
    assert named(plan, "DeleteJob") == B
    assert plan.requeue_after_seconds == 2
    with_ttl.finalize()
    for w in (with_ttl, without):
        w.tick(1)
    assert with_ttl.step().requeue_after_seconds == 1
    assert not with_ttl.jobset_deleted
    for w in (with_ttl, without):
        w.tick(1)
        w.step()
    assert with_ttl.jobset_deleted and not without.jobset_deleted
    assert with_ttl.plans[-1].actions[-1].type == "DeleteJobSet"


def test_generate_name_headless_service_named_after_the_jobset() -> None:
    js = two_rjobs()
    js["metadata"]["generateName"] = "name-prefix"
    js["metadata"]["name"] = "name-prefix-x7k2q"
    w = started(js)
    assert list(w.others) == [("Service", "name-prefix-x7k2q")]
    assert {j["spec"]["template"]["spec"]["subdomain"] for j in w.jobs.values()} == {
        "name-prefix-x7k2q"
    }


def test_managed_by_another_controller_nothing_happens() -> None:
    """Upstream: "A JobSet is managed by another controller" (suspended, unsuspended, status)."""
    status = {
        "restarts": 1,
        "conditions": [
            {
                "type": "Failed",
                "status": "False",
                "reason": "ByTest",
                "message": "",
                "lastTransitionTime": "2026-03-01T08:00:00Z",
            }
        ],
        "replicatedJobsStatus": [
            {
                "name": "replicated-job-a",
                "ready": 2,
                "succeeded": 3,
                "failed": 4,
                "active": 5,
                "suspended": 6,
            }
        ],
    }
    w = World(jobset=two_rjobs(managedBy="other-controller", suspend=True, status=status))
    assert w.settle()[-1].actions == []
    w.update_spec(suspend=False)
    assert w.settle()[-1].actions == []
    assert w.jobs == {} and w.others == {}
    assert w.jobset["status"] == status


def test_resume_keeps_node_selector_strategy_directives() -> None:
    """Exclusive placement (nodeSelector strategy) survives a suspend/resume cycle: the resume
    merges the template's directives into the Job's instead of replacing them."""
    js = two_rjobs(suspend=True)
    js["metadata"]["annotations"] = {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool",
        "alpha.jobset.sigs.k8s.io/node-selector": "true",
    }
    w = started(js)
    w.jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].update(
        nodeSelector={"pool": "a"}, tolerations=[{"key": "kueue", "operator": "Exists"}]
    )
    w.update_spec(suspend=False)
    w.settle()
    pod = w.jobs[A0]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "alpha.jobset.sigs.k8s.io/namespaced-job": f"{NS}_{A0}",
        "pool": "a",
    }
    assert pod["tolerations"] == [
        {
            "key": "alpha.jobset.sigs.k8s.io/no-schedule",
            "operator": "Exists",
            "effect": "NoSchedule",
        },
        {"key": "kueue", "operator": "Exists"},
    ]
    assert not any(w.suspended().values())
