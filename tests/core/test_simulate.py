"""decider.core.simulate: Decide passes rolled forward under hypothetical events.

Each row names the rule it holds the simulator to. The JobSets start with their Jobs running
(restart attempt 1 where the JobSet has restarted once), as a scheduler would see them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from decider.core import constants as c
from decider.core.decide import decide
from decider.core.errors import InvalidInput
from decider.core.model import Observed, ObservedJob, Options
from decider.core.simulate import (
    DEFAULT_MAX_PASSES,
    JOB_FAILED,
    JOB_READY,
    JOB_RESUMED,
    JOB_SUCCEEDED,
    JOB_SUSPENDED,
    JOBSET_RESUMED,
    JOBSET_SUSPENDED,
    MAX_PASSES,
    SimEvent,
    Simulation,
    simulate,
)
from support.builders import NOW, job, jobset, rjob, service

NO_RETRY = {"name": "no-retry", "action": "FailJobSet",
            "onJobFailureReasons": ["PodFailurePolicy"]}


def trainer(max_restarts: int = 2, restarts: int = 1, rules: list[dict] | None = None,
            **spec: Any) -> dict[str, Any]:
    policy = {"maxRestarts": max_restarts, "rules": rules if rules is not None else [NO_RETRY]}
    status = {"restarts": restarts, "restartsCountTowardsMax": restarts}
    return jobset(rjob("leader", 1), rjob("workers", 3), failurePolicy=policy, status=status,
                  **spec)


def running(attempt: int = 1, **kw: Any) -> list[ObservedJob]:
    return [job(r, i, attempt=attempt, active=1, ready=1, **kw)
            for r, n in (("leader", 1), ("workers", 3)) for i in range(n)]


def run(js: dict[str, Any], events: list[SimEvent], jobs: list[ObservedJob] | None = None,
        gates: dict[str, bool] | None = None, max_passes: int = 0) -> Simulation:
    observed = Observed(jobset=js, now=NOW, jobs=running() if jobs is None else jobs,
                        objects=[service()], options=Options(feature_gates=gates or {}))
    return simulate(observed, events, max_passes)


def fail(name: str, at: int = 0, reason: str = "", message: str = "") -> SimEvent:
    return SimEvent(JOB_FAILED, at, name, reason, message)


ALL = ["js-leader-0", "js-workers-0", "js-workers-1", "js-workers-2"]


def test_default_restart_spends_the_last_restart_and_recreates_every_job() -> None:
    sim = run(trainer(), [fail("js-workers-1")])
    o = sim.outcome
    assert (o.terminal_state, o.restarts, o.restarts_count_towards_max, o.restarts_left) == (
        "", 2, 2, 0)
    assert [(j.name, j.restart_attempt) for j in o.recreated_jobs] == [(n, 2) for n in ALL]
    assert o.deleted_jobs == [] and o.settled
    assert [(d.job, d.rule, d.action) for d in o.failure_policy] == [
        ("js-workers-1", "", c.RESTART_JOBSET)]
    assert o.summary == ("job js-workers-1 fails with BackoffLimitExceeded: no rule matches, "
                         "default action RestartJobSet: the JobSet restarts (restart 2; 0 left "
                         "of maxRestarts 2); 4 Jobs are deleted and recreated")


def test_a_later_second_failure_reaches_max_restarts() -> None:
    sim = run(trainer(), [fail("js-workers-1"), fail("js-workers-2", at=60)])
    o = sim.outcome
    assert (o.terminal_state, o.reason, o.restarts, o.restarts_left) == (
        "Failed", c.REASON_REACHED_MAX_RESTARTS, 2, 0)
    second = next(s for s in sim.steps if s.plan.failure and s.at_seconds == 60)
    assert second.time == NOW + timedelta(seconds=60)
    assert second.plan.failure.job == "js-workers-2"
    assert o.end_time == NOW + timedelta(seconds=60)
    assert "the restart budget is spent (maxRestarts 2): the JobSet fails " \
           "(ReachedMaxRestarts); 3 Jobs are deleted" in o.summary
    assert o.deleted_jobs == ["js-leader-0", "js-workers-0", "js-workers-1"]


def test_rule_fail_jobset_fails_after_one_pass_and_names_the_rule() -> None:
    sim = run(trainer(), [fail("js-workers-1", reason="PodFailurePolicy", message="evicted")])
    first = sim.steps[0].plan
    assert first.status["terminalState"] == "Failed"
    assert (first.failure.rule, first.failure.action) == ("no-retry", "FailJobSet")
    o = sim.outcome
    assert (o.terminal_state, o.reason) == ("Failed", c.REASON_FAIL_JOBSET_ACTION)
    assert o.summary == ("job js-workers-1 fails with PodFailurePolicy: rule no-retry matches, "
                         "action FailJobSet: the JobSet fails; 3 Jobs are deleted")


def test_without_failure_policy_a_failure_fails_the_jobset() -> None:
    js = jobset(rjob("workers", 2))
    sim = run(js, [fail("js-workers-0")], jobs=[job("workers", i, active=1, ready=1)
                                                for i in range(2)])
    o = sim.outcome
    assert (o.terminal_state, o.reason, o.restarts_left) == ("Failed", c.REASON_FAILED_JOBS, 0)
    assert (o.failure_policy[0].rule, o.failure_policy[0].action) == ("", c.FAIL_JOBSET)
    assert "the JobSet has no failure policy" in o.summary


def test_restart_jobset_ignore_max_does_not_spend_the_budget() -> None:
    rule = {"name": "preempted", "action": c.RESTART_JOBSET_IGNORE_MAX,
            "onJobFailureReasons": ["PodFailurePolicy"]}
    sim = run(trainer(rules=[rule]), [fail("js-workers-0", reason="PodFailurePolicy")])
    o = sim.outcome
    assert (o.restarts, o.restarts_count_towards_max, o.restarts_left) == (2, 1, 1)
    assert "(restart 2, not counted towards maxRestarts)" in o.summary


def test_restart_job_recreates_that_job_alone() -> None:
    rule = {"name": "one", "action": c.RESTART_JOB}
    jobs = running(attempt=0, job_attempt=0)
    js = trainer(rules=[rule], restarts=0)
    sim = run(js, [fail("js-workers-2")], jobs=jobs, gates={c.GATE_RESTART_JOB: True})
    o = sim.outcome
    assert [(j.name, j.restart_attempt, j.job_restart_attempt) for j in o.recreated_jobs] == [
        ("js-workers-2", 0, 1)]
    assert o.restarts_left == 1 and o.terminal_state == ""
    assert "job js-workers-2 alone restarts; 1 Job is deleted and recreated" in o.summary


def test_success_completes_the_jobset() -> None:
    js = trainer(successPolicy={"operator": "All", "targetReplicatedJobs": ["leader"]})
    sim = run(js, [SimEvent(JOB_SUCCEEDED, 5, "js-leader-0")])
    o = sim.outcome
    assert (o.terminal_state, o.reason) == ("Completed", c.REASON_ALL_JOBS_COMPLETED)
    assert o.summary == "the JobSet completes (AllJobsCompleted)"
    assert o.deleted_jobs == ["js-workers-0", "js-workers-1", "js-workers-2"]


def test_ttl_after_finished_advances_time_and_deletes_the_jobset() -> None:
    sim = run(trainer(ttlSecondsAfterFinished=300),
              [fail("js-workers-1", reason="PodFailurePolicy")])
    o = sim.outcome
    assert o.jobset_deleted and o.settled
    assert sim.steps[-1].at_seconds == 300
    assert sim.steps[-1].plan.actions[-1].type == "DeleteJobSet"
    assert o.summary.endswith("; the JobSet is deleted when its TTL runs out (+300s)")


def test_suspending_the_jobset_suspends_every_job_and_sticks() -> None:
    sim = run(trainer(), [SimEvent(JOBSET_SUSPENDED, 10)])
    suspends = [a.name for s in sim.steps for a in s.plan.actions if a.type == "SuspendJob"]
    assert suspends == ALL
    assert sim.outcome.summary == "no Job fails: the JobSet stays suspended"
    resumed = run(trainer(), [SimEvent(JOBSET_SUSPENDED, 10), SimEvent(JOBSET_RESUMED, 20)])
    assert [a.name for s in resumed.steps for a in s.plan.actions
            if a.type == "ResumeJob"] == ALL
    assert resumed.outcome.summary == "no Job fails: the JobSet keeps running"


def test_independent_mode_leaves_a_job_suspended_by_someone_else() -> None:
    js = trainer()
    js["metadata"]["annotations"] = {c.RECONCILIATION_MODE: c.RECONCILIATION_MODE_INDEPENDENT}
    sim = run(js, [SimEvent(JOB_SUSPENDED, 0, "js-workers-1")])
    actions = [a.type for s in sim.steps for a in s.plan.actions]
    assert "ResumeJob" not in actions and sim.outcome.settled
    workers = next(r for r in sim.steps[-1].plan.status["replicatedJobsStatus"]
                   if r["name"] == "workers")
    assert (workers["suspended"], workers["ready"]) == (1, 2)
    back = run(js, [SimEvent(JOB_SUSPENDED, 0, "js-workers-1"),
                    SimEvent(JOB_RESUMED, 30, "js-workers-1")])
    workers = next(r for r in back.steps[-1].plan.status["replicatedJobsStatus"]
                   if r["name"] == "workers")
    assert (workers["suspended"], workers["ready"]) == (0, 3)


def test_outside_independent_mode_the_jobset_resumes_a_job_someone_suspended() -> None:
    sim = run(trainer(), [SimEvent(JOB_SUSPENDED, 0, "js-workers-1")])
    assert [a.name for s in sim.steps for a in s.plan.actions if a.type == "ResumeJob"] == [
        "js-workers-1"]


def test_an_event_waits_for_its_job_to_be_created() -> None:
    sim = run(trainer(), [fail("js-workers-1")], jobs=[])
    first = sim.steps[0]
    assert first.events == [] and [a.type for a in first.plan.actions].count("CreateJob") == 4
    assert sim.steps[1].events == [fail("js-workers-1")]
    assert sim.outcome.restarts == 2


def test_an_event_whose_job_never_exists_is_reported_not_applied() -> None:
    sim = run(trainer(), [fail("js-workers-9", at=7)])
    o = sim.outcome
    assert o.settled and o.events_not_applied == [
        "events[0]: JobFailed of job js-workers-9 at +7s: the Job never existed, unfinished, "
        "at or after that time"]
    assert o.summary.endswith("; 1 event never applied")


def test_a_job_that_becomes_ready_is_counted_ready() -> None:
    jobs = running()
    jobs[1] = job("workers", 0, attempt=1, active=1, ready=0)
    sim = run(trainer(), [SimEvent(JOB_READY, 3, "js-workers-0")], jobs=jobs)
    before = next(r for r in sim.steps[0].plan.status["replicatedJobsStatus"]
                  if r["name"] == "workers")
    after = next(r for r in sim.steps[-1].plan.status["replicatedJobsStatus"]
                 if r["name"] == "workers")
    assert (before["ready"], after["ready"]) == (2, 3)


def test_the_pass_limit_stops_a_simulation_that_never_rests() -> None:
    sim = run(trainer(), [fail("js-workers-1")], max_passes=2)
    o = sim.outcome
    assert (o.passes, o.settled) == (2, False)
    assert o.summary.endswith("; still changing after 2 passes (the pass limit)")


def test_a_simulation_that_would_pass_year_9999_says_so() -> None:
    observed = Observed(jobset=trainer(), now=datetime(9999, 12, 31, 23, 59, 0, tzinfo=UTC),
                        jobs=running(), objects=[service()])
    o = simulate(observed, [fail("js-workers-1", at=3600)]).outcome
    assert not o.settled
    assert "(the next would fall after year 9999, the last a Timestamp can hold)" in o.summary
    assert o.events_not_applied == [
        "events[0]: JobFailed of job js-workers-1 at +3600s: not reached, the simulation "
        "stopped first"]


@pytest.mark.parametrize("year", [1, 999], ids=["year-1", "year-999"])
def test_times_before_year_1000_keep_four_digits(year: int) -> None:
    """strftime's %Y wrote "999-...": the simulator then refused its own Jobs' times."""
    observed = Observed(jobset=trainer(), now=datetime(year, 5, 1, tzinfo=UTC),
                        jobs=running(), objects=[service()])
    sim = simulate(observed, [fail("js-workers-1", at=60)])
    stamp = f"{year:04d}-05-01T00:01:00Z"
    assert sim.steps[-1].time.year == year
    assert any(cond["lastTransitionTime"] == stamp
               for step in sim.steps for cond in step.plan.status.get("conditions") or ())


def test_each_pass_is_decide_itself() -> None:
    """Simulation and reality cannot diverge: the first pass is Decide on the same input."""
    observed = Observed(jobset=trainer(), now=NOW, jobs=running(), objects=[service()])
    sim = simulate(observed, [])
    assert sim.steps[0].plan == decide(observed)
    # The first pass writes replicatedJobsStatus, and says so; the second finds nothing to do.
    assert len(sim.steps) == 2 and not sim.steps[1].plan.actions and sim.outcome.settled
    assert [a.type for a in sim.steps[0].plan.actions] == ["UpdateStatus"]
    assert sim.steps[0].plan.explanation == ["status updated: replicatedJobsStatus"]
    assert sim.steps[1].plan.explanation == ["nothing to do: the JobSet is as it should be"]


def test_the_same_request_simulates_alike() -> None:
    events = [fail("js-workers-1"), fail("js-leader-0", at=60, reason="PodFailurePolicy")]
    assert run(trainer(), events) == run(trainer(), events)


@pytest.mark.parametrize("events,max_passes,field", [
    ([SimEvent("Exploded", 0, "js-workers-1")], 0, "events[0].type"),
    ([fail("js-workers-1", at=-1)], 0, "events[0].at_seconds"),
    ([SimEvent(JOB_FAILED, 0, "")], 0, "events[0].job"),
    ([SimEvent(JOBSET_SUSPENDED, 0, "js-workers-1")], 0, "events[0].job"),
    ([SimEvent(JOB_READY, 0, "js-workers-1", reason="x")], 0, "events[0].reason"),
    ([fail("js-workers-1")] * 1001, 0, "events"),
    ([], MAX_PASSES + 1, "max_passes"),
    ([], -1, "max_passes"),
], ids=["unknown-type", "negative-time", "job-event-without-job", "jobset-event-with-job",
        "reason-on-a-non-failure", "too-many-events", "too-many-passes", "negative-passes"])
def test_bad_requests_are_invalid_naming_the_field(events, max_passes, field) -> None:
    with pytest.raises(InvalidInput) as err:
        run(trainer(), events, max_passes=max_passes)
    assert err.value.errors[0].field == field


def test_an_invalid_jobset_is_invalid_naming_the_pass() -> None:
    rule = {"name": "one", "action": c.RESTART_JOB}
    with pytest.raises(InvalidInput) as err:
        run(trainer(rules=[rule]), [fail("js-workers-1", at=5)])
    assert err.value.errors[0].field == "spec.failurePolicy.rules"
    # Pass 1 writes replicatedJobsStatus, pass 2 is quiet, pass 3 (at +5s) meets the failure.
    assert err.value.errors[0].message.endswith("(simulation pass 3, +5s)")


def test_default_pass_limit() -> None:
    assert DEFAULT_MAX_PASSES == 100
