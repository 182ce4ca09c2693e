"""Execution attempts (KEP-1282, gate ExecutionAttemptsTracking), ported from upstream's tests of
#1283 (6bb03cac, merged): pkg/controllers/jobset_controller_test.go (TestSyncExecutionAttempts,
TestResumeJob, TestConstructJobsFromTemplate's new cases), failure_policy_test.go's RestartJobSet
cases and the test/integration/controller entries; plus the ordering the controller has
(jobset_controller.go @4f0cbded): the resume's count is written before any Job resumes, and the
same pass resumes the Jobs with it (spec/upstream-next.md, correction 4). Ids name the upstream
case."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from decider.core import constants as c
from decider.core import execution_attempts
from decider.core.children import classify
from decider.core.jobset import parse_jobset
from decider.core.model import Observed, ObservedJob, Options
from decider.core.state import PassState
from support.builders import NOW, job, jobset, rjob, run
from upstream.fixtures import two_rjobs
from upstream.sim import World

GATE = {c.GATE_EXECUTION_ATTEMPTS: True}
KEY = c.EXECUTION_ATTEMPT
SUSPENDED_COND = {"type": "Suspended", "status": "True", "reason": "SuspendedJobs",
                  "message": "jobset is suspended", "lastTransitionTime": "2026-01-01T11:00:00Z"}


def _annotated(j: ObservedJob, value: str | None) -> ObservedJob:
    return dataclasses.replace(j, annotations={} if value is None else {KEY: value})


def _active(index: int, suspended: bool, attempt: str | None) -> ObservedJob:
    return _annotated(job("rjob", index, suspend=suspended), attempt)


def _done(index: int, attempt: str | None) -> ObservedJob:
    return _annotated(job("rjob", index, state="succeeded", suspend=False), attempt)


def _js(suspend: bool = False, restarts: int = 0, attempts: int | None = None,
        was_suspended: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {"restarts": restarts}
    if attempts is not None:
        status["executionAttempts"] = attempts
    if was_suspended:
        status["conditions"] = [dict(SUSPENDED_COND)]
    return jobset(rjob("rjob", 2), suspend=suspend, status=status)


# ---- TestSyncExecutionAttempts ----------------------------------------------------------------

@pytest.mark.parametrize(("js", "jobs", "gates", "want", "written"), [
    pytest.param(_js(), [], GATE, 0, False, id="new jobset initializes ExecutionAttempts to 0"),
    pytest.param(_js(restarts=3), [], GATE, 3, False,
                 id="running jobset with Restarts > 0 initializes ExecutionAttempts to Restarts"),
    pytest.param(_js(restarts=2, was_suspended=True), [], GATE, 3, True,
                 id="resuming jobset after upgrade with Restarts > 0 initializes to Restarts + 1"),
    pytest.param(_js(was_suspended=True), [_active(0, True, None)], GATE, 0, True,
                 id="resuming jobset after upgrade with Restarts == 0 initializes to 0"),
    pytest.param(_js(suspend=True), [], GATE, None, False,
                 id="currently suspended jobset does not initialize ExecutionAttempts yet"),
    pytest.param(_js(attempts=1, was_suspended=True), [_active(0, True, "1")], GATE, 2, True,
                 id="standard resume increments ExecutionAttempts when all active jobs are "
                    "suspended"),
    pytest.param(_js(attempts=2, was_suspended=True), [_active(0, True, "1")], GATE, 2, False,
                 id="reconcile retry after resume status update does not double increment when "
                    "child jobs still carry previous attempt"),
    pytest.param(_js(attempts=0, was_suspended=True), [_active(0, True, None)], GATE, 0, False,
                 id="reconcile retry for initially suspended JobSet does not increment to 1 "
                    "when child jobs are unannotated"),
    pytest.param(_js(attempts=2, was_suspended=True),
                 [_active(0, False, "2"), _active(1, True, "2")], GATE, 2, False,
                 id="standard resume does not increment when in-order startup is in progress "
                    "(some jobs unsuspended)"),
    pytest.param(_js(restarts=2, attempts=3, was_suspended=True), [_active(0, True, None)],
                 GATE, 3, False,
                 id="reconcile retry for upgraded JobSet with Restarts > 0 does not increment "
                    "beyond initialized attempt when child jobs are unannotated"),
    pytest.param(_js(attempts=2, was_suspended=True), [_done(0, "2"), _active(1, True, None)],
                 GATE, 2, False,
                 id="in-order startup resume does not increment when active job was created "
                    "suspended (unannotated) and previous job succeeded"),
    pytest.param(_js(attempts=2, was_suspended=True), [_done(0, "1"), _active(1, True, "2")],
                 GATE, 3, True,
                 id="standard resume increments when active job has current attempt annotation "
                    "alongside completed successful jobs"),
    pytest.param(_js(restarts=3), [], {}, None, False,
                 id="feature gate disabled leaves ExecutionAttempts nil"),
    # The branch for a resume without active Jobs, and without any Job at all.
    pytest.param(_js(attempts=1, was_suspended=True), [_done(0, "1")], GATE, 2, True,
                 id="no active jobs: the finished jobs' attempt tells the resume is new"),
    pytest.param(_js(attempts=2, was_suspended=True), [_done(0, "1")], GATE, 2, False,
                 id="no active jobs: the count past a finished job's attempt is not counted "
                    "again"),
    pytest.param(_js(attempts=1, was_suspended=True), [], GATE, 1, False,
                 id="no jobs at all: nothing is counted"),
    pytest.param(_js(attempts=1, was_suspended=True), [_active(0, True, "x1")], GATE, 2, True,
                 id="an annotation Atoi refuses is skipped"),
])
def test_sync_execution_attempts(js: dict[str, Any], jobs: list[ObservedJob],
                                 gates: dict[str, bool], want: int | None,
                                 written: bool) -> None:
    parsed = parse_jobset(copy.deepcopy(js))
    st = PassState.start(parsed, Observed(jobset=js, now=NOW, jobs=jobs,
                                          options=Options(feature_gates=gates)))
    execution_attempts.sync(st, classify(parsed, jobs, st.status, False))
    assert st.status.get("executionAttempts") == want
    writes = [a for a in st.actions if a.type == "UpdateStatus"]
    assert bool(writes) is written
    if written:
        # Written as the status stands then, synchronously, before any Job resumes.
        assert writes[0].status == st.status


# ---- failure_policy_test.go: RestartJobSet -----------------------------------------------------

@pytest.mark.parametrize(("restarts", "attempts", "gates", "want"), [
    pytest.param(1, None, GATE, 2,
                 id="RestartJobSet when ExecutionAttemptsTracking is enabled and "
                    "ExecutionAttempts is nil increments Restarts and initializes "
                    "ExecutionAttempts"),
    pytest.param(2, 3, GATE, 4,
                 id="RestartJobSet when ExecutionAttempts is already set increments "
                    "ExecutionAttempts by 1"),
    pytest.param(1, None, {}, None,
                 id="RestartJobSet with ExecutionAttemptsTracking disabled does not increment "
                    "ExecutionAttempts"),
])
def test_restart_jobset(restarts: int, attempts: int | None, gates: dict[str, bool],
                        want: int | None) -> None:
    status: dict[str, Any] = {"restarts": restarts, "restartsCountTowardsMax": restarts}
    if attempts is not None:
        status["executionAttempts"] = attempts
    js = jobset(rjob("rjob", 1), failurePolicy={"maxRestarts": 5}, status=status)
    plan = run(js, [job("rjob", 0, attempt=restarts, state="failed")], gates=gates)
    assert plan.status["restarts"] == restarts + 1
    assert plan.status.get("executionAttempts") == want


def test_a_single_job_restart_is_not_an_execution_attempt() -> None:
    js = jobset(rjob("rjob", 1), status={"restarts": 0, "executionAttempts": 0},
                failurePolicy={"maxRestarts": 5, "rules": [{"name": "r", "action": "RestartJob"}]})
    plan = run(js, [job("rjob", 0, state="failed")], gates={**GATE, c.GATE_RESTART_JOB: True})
    assert plan.status["executionAttempts"] == 0


# ---- TestResumeJob and TestConstructJobsFromTemplate ------------------------------------------

@pytest.mark.parametrize(("gates", "job_ann", "pod_ann"), [
    pytest.param(GATE, {KEY: "2"}, {"foo": "bar", KEY: "2"},
                 id="resume job updates execution-attempt annotations and wipes start time"),
    pytest.param({}, None, {"foo": "bar"},
                 id="resume job with ExecutionAttemptsTracking disabled does not update "
                    "execution-attempt annotations"),
])
def test_resume_job(gates: dict[str, bool], job_ann: dict[str, str] | None,
                    pod_ann: dict[str, str] | None) -> None:
    pod = {"metadata": {"annotations": {"foo": "bar"}},
           "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "b"}]}}
    js = jobset(rjob("rjob", 1, pod=pod), status={"restarts": 0, "executionAttempts": 2})
    suspended = dataclasses.replace(job("rjob", 0, suspend=True), annotations={KEY: "2"},
                                    start_time="2026-01-01T11:00:00Z")
    plan = run(js, [suspended], gates=gates)
    (resume,) = [a for a in plan.actions if a.type == "ResumeJob"]
    assert resume.clear_start_time
    assert resume.patch["spec"]["suspend"] is False
    # Written on every resume under the gate, as upstream's Update does, even where the Job
    # says 2 already.
    assert (resume.patch.get("metadata") or {}).get("annotations") == job_ann
    assert resume.patch["spec"]["template"]["metadata"].get("annotations") == pod_ann


@pytest.mark.parametrize(("gates", "status", "want"), [
    pytest.param(GATE, {"restarts": 0, "executionAttempts": 1}, "1",
                 id="resume job set with >0 ExecutionAttempts"),
    pytest.param({}, {"restarts": 0, "executionAttempts": 1}, None,
                 id="ExecutionAttemptsTracking disabled does not inject execution attempts "
                    "annotation"),
    pytest.param(GATE, None, "0", id="a new JobSet's Jobs are created in attempt 0"),
])
def test_construct_jobs_from_template(gates: dict[str, bool], status: dict[str, Any] | None,
                                      want: str | None) -> None:
    plan = run(jobset(rjob("rjob", 2), status=status), gates=gates)
    created = [a.object for a in plan.actions if a.type == "CreateJob"]
    assert len(created) == 2
    for obj in created:
        assert obj["metadata"]["annotations"].get(KEY) == want
        assert obj["spec"]["template"]["metadata"]["annotations"].get(KEY) == want
        assert KEY not in obj["metadata"]["labels"]  # an annotation, never a label


def test_a_jobset_created_suspended_creates_jobs_without_the_annotation() -> None:
    plan = run(jobset(rjob("rjob", 1), suspend=True), gates=GATE)
    (obj,) = [a.object for a in plan.actions if a.type == "CreateJob"]
    assert KEY not in obj["metadata"]["annotations"]
    assert "executionAttempts" not in plan.status


# ---- the resume's write comes first, and the same pass resumes the Jobs ----------------------

def test_the_resume_count_is_written_before_any_job_resumes() -> None:
    js = _js(attempts=1, was_suspended=True)
    jobs = [_active(0, True, "1"), _active(1, True, "1")]
    plan = run(js, jobs, gates=GATE)
    order = [a.type for a in plan.actions]
    first = order.index("UpdateStatus")
    assert first < order.index("ResumeJob")
    assert plan.actions[first].status["executionAttempts"] == 2
    # The same pass goes on (correction 4): the Jobs resume in attempt 2, and the pass's own
    # status write (the Suspended condition flips) comes last.
    for action in plan.actions:
        if action.type == "ResumeJob":
            assert action.patch["metadata"]["annotations"] == {KEY: "2"}
            assert action.patch["spec"]["template"]["metadata"]["annotations"][KEY] == "2"
    assert order == ["CreateService", "UpdateStatus", "ResumeJob", "ResumeJob", "UpdateStatus",
                     "Event"]
    assert plan.actions[4].status is None  # the plan's own status, Suspended=False in it
    assert plan.status["executionAttempts"] == 2


# ---- test/integration/controller entries ------------------------------------------------------

def _annotations(w: World) -> set[tuple[str | None, str | None]]:
    return {(j["metadata"].get("annotations", {}).get(KEY),
             j["spec"]["template"]["metadata"].get("annotations", {}).get(KEY))
            for j in w.jobs.values()}


def _cycle(w: World, suspend: bool) -> None:
    w.update_spec(suspend=suspend)
    w.settle()


def test_resume_a_suspended_jobset_with_execution_attempts_tracking_disabled() -> None:
    w = World(jobset=two_rjobs(suspend=True))
    w.settle()
    _cycle(w, False)
    assert "executionAttempts" not in w.status
    assert _annotations(w) == {(None, None)}


def test_suspend_and_resume_a_running_jobset_with_execution_attempts_tracking_enabled() -> None:
    w = World(jobset=two_rjobs(), gates=GATE)
    w.settle()
    assert w.status["executionAttempts"] == 0 and _annotations(w) == {("0", "0")}
    _cycle(w, True)
    _cycle(w, False)
    assert w.status["executionAttempts"] == 1 and _annotations(w) == {("1", "1")}


def test_multiple_suspend_and_resume_cycles_with_execution_attempts_tracking_enabled() -> None:
    w = World(jobset=two_rjobs(), gates=GATE)
    w.settle()
    for n in (1, 2):
        _cycle(w, True)
        _cycle(w, False)
        assert w.status["executionAttempts"] == n and _annotations(w) == {(str(n), str(n))}


def test_upgrade_migration_running_jobset_with_nil_attempts_and_restarts() -> None:
    w = World(jobset=two_rjobs(failurePolicy={"maxRestarts": 3}), gates=GATE)
    w.settle()
    w.fail("test-js-replicated-job-a-0")
    w.settle()
    w.finalize()
    w.settle()
    assert w.status["restarts"] == 1 and w.status["executionAttempts"] == 1
    assert _annotations(w) == {("1", "1")}
    # As if the gate had just been turned on: the count is unset, the JobSet running.
    w.jobset["status"].pop("executionAttempts")
    w.step()
    assert w.status["executionAttempts"] == 1


def test_child_job_deleted_while_suspended_is_recreated_on_resume_with_correct_attempts() -> None:
    w = World(jobset=two_rjobs(), gates=GATE)
    w.settle()
    _cycle(w, True)
    del w.jobs["test-js-replicated-job-b-1"]
    w.settle()  # recreated, suspended, in attempt 0 still
    _cycle(w, False)
    assert w.status["executionAttempts"] == 1 and _annotations(w) == {("1", "1")}


def test_initially_suspended_jobset_attempts_nil_then_0_then_1() -> None:
    w = World(jobset=two_rjobs(suspend=True), gates=GATE)
    w.settle()
    assert "executionAttempts" not in w.status and _annotations(w) == {(None, None)}
    _cycle(w, False)
    assert w.status["executionAttempts"] == 0 and _annotations(w) == {("0", "0")}
    _cycle(w, True)
    _cycle(w, False)
    assert w.status["executionAttempts"] == 1 and _annotations(w) == {("1", "1")}


def test_a_pass_repeated_after_the_resume_write_does_not_count_again() -> None:
    # The shim wrote the resume's count, then failed before resuming a Job; the next pass
    # decides on the written status and the still suspended Jobs.
    w = World(jobset=two_rjobs(), gates=GATE)
    w.settle()
    _cycle(w, True)
    w.update_spec(suspend=False)
    plan = w.decide()
    first = next(a for a in plan.actions if a.type == "UpdateStatus")
    w.jobset["status"] = copy.deepcopy(first.status)
    assert w.status["executionAttempts"] == 1
    again = w.decide()
    writes = [a for a in again.actions if a.type == "UpdateStatus" and a.status is not None]
    assert writes == [] and again.status["executionAttempts"] == 1
    w.apply(again)
    assert _annotations(w) == {("1", "1")}


def test_invariant_attempts_never_below_restarts() -> None:
    w = World(jobset=two_rjobs(failurePolicy={"maxRestarts": 5}), gates=GATE)
    w.settle()
    for _ in range(3):
        w.fail(next(iter(w.jobs)))
        w.settle()  # the restart, then the old attempt's Jobs deleted (foreground)
        w.finalize()
        w.settle()  # recreated
        _cycle(w, True)
        _cycle(w, False)
        assert w.status["executionAttempts"] >= w.status["restarts"]
    assert (w.status["restarts"], w.status["executionAttempts"]) == (3, 6)
