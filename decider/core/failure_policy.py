"""Failure policy: what a failed child Job does to its JobSet (upstream failure_policy.go).

- No failure policy: the JobSet fails at once (reason FailedJobs).
- Rules are tried in order; the first rule that some failed Job satisfies wins, and among the
  Jobs that satisfy it the one whose Failed condition is earliest is "the first failed job".
- A rule is satisfied when the Job's failure reason is listed (or none are), a message pattern
  is found anywhere in the failure message (or none are given), and the Job's replicated Job is a
  target (or none are). A Job without a replicated-Job label satisfies no rule.
- No rule matched: RestartJobSet on the globally earliest failure (reason DefaultFailurePolicy).
- Restart budget: restartsCountTowardsMax, plus every per-Job counter under the RestartJob gate.
"""

from __future__ import annotations

from datetime import UTC, datetime

from decider.core import access as acc
from decider.core import conditions
from decider.core import constants as c
from decider.core.children import job_restarts
from decider.core.errors import InvalidInput
from decider.core.jobset import FailureRule
from decider.core.model import FailureOutcome, JobCondition, ObservedJob
from decider.core.state import PassState, parse_time

# A Failed condition with no time: before every instant, as a zero metav1.Time.
_NO_TIME = datetime.min.replace(tzinfo=UTC)


def _failure(job: ObservedJob) -> JobCondition | None:
    for cond in job.conditions:
        if cond.type == c.JOB_FAILED and cond.status == "True":
            return cond
    return None


def _failure_key(cond: JobCondition) -> tuple[int, datetime]:
    # A Failed condition with no time sorts first, as a zero metav1.Time does in Go.
    # Compare instants, not wall clocks, as metav1.Time.Before does (11:30+02:00 is before
    # 10:00Z): aware datetimes compare so. Converting to UTC first overflowed for a time like
    # 0001-01-01T00:00:00+01:00, which Go's time reads without complaint.
    t = parse_time(cond.last_transition_time)
    return (0, _NO_TIME) if t is None else (1, t)


def first_failed(jobs: list[ObservedJob],
                 accept: object = None) -> tuple[ObservedJob | None, JobCondition | None]:
    """The Job whose Failed condition is strictly earliest; ties keep list order."""
    best: ObservedJob | None = None
    best_cond: JobCondition | None = None
    best_key: tuple[int, datetime] | None = None
    for job in jobs:
        cond = _failure(job)
        if cond is None or (accept is not None and not accept(job, cond)):  # type: ignore[operator]
            continue
        key = _failure_key(cond)
        if best_key is None or key < best_key:
            best, best_cond, best_key = job, cond, key
    return best, best_cond


class RuleMatcher:
    """rule_applies for many failed Jobs: Jobs that failed alike share their failure message,
    so each rule's patterns are run once per distinct message, not once per Job."""

    def __init__(self) -> None:
        self._messages: dict[tuple[int, str], bool] = {}

    def applies(self, index: int, rule: FailureRule, job: ObservedJob,
                cond: JobCondition) -> bool:
        if rule.reasons and cond.reason not in rule.reasons:
            return False
        if rule.patterns:
            message = cond.message or ""
            found = self._messages.get((index, message))
            if found is None:
                found = _message_matches(rule, message)
                self._messages[(index, message)] = found
            if not found:
                return False
        return _targets(rule, job)


def _message_matches(rule: FailureRule, message: str) -> bool:
    # Go's regexp.MatchString: a match anywhere in the message.
    return any(p is not None and p.matches(message) for p in rule.patterns)


def _targets(rule: FailureRule, job: ObservedJob) -> bool:
    rjob = job.labels.get(c.REPLICATED_JOB_NAME, "")
    if not rjob:
        return False
    return not rule.targets or rjob in rule.targets


def rule_applies(rule: FailureRule, job: ObservedJob, cond: JobCondition) -> bool:
    if rule.reasons and cond.reason not in rule.reasons:
        return False
    if rule.patterns and not _message_matches(rule, cond.message or ""):
        return False
    return _targets(rule, job)


def _with_first_failed(message: str, job: ObservedJob) -> str:
    return f"{message} (first failed job: {job.name})"


def counted_restarts(status: dict, include_job_restarts: bool) -> int:
    """Restarts spent from the maxRestarts budget: restartsCountTowardsMax, plus every per-Job
    counter when the RestartJob gate counts them."""
    total = int(status.get("restartsCountTowardsMax") or 0)
    if include_job_restarts:
        for rjs in status.get("replicatedJobsStatus") or ():
            total += sum(rjs.get("jobRestartsCountTowardsMax") or ())
    return total


def total_restarts_count_towards_max(st: PassState) -> int:
    return counted_restarts(st.status, True)


def execute(st: PassState, failed: list[ObservedJob]) -> None:
    """Apply the failure policy to the current attempt's failed Jobs."""
    js = st.js
    policy = js.failure_policy
    if policy is None:
        job, cond = first_failed(failed)
        assert job is not None
        conditions.set_failed(st, c.REASON_FAILED_JOBS, _with_first_failed(
            "jobset failed due to one or more job failures", job))
        st.failure = _outcome(job, cond, None, c.FAIL_JOBSET)
        st.explain(f"job {job.name} failed and the JobSet has no failure policy: "
                   "the JobSet fails (FailedJobs)")
        return

    rule: FailureRule | None = None
    job: ObservedJob | None = None
    matcher = RuleMatcher()
    for index, candidate in enumerate(policy.rules):
        job, _ = first_failed(failed, lambda j, cond, i=index, r=candidate:
                              matcher.applies(i, r, j, cond))
        if job is not None:
            rule = candidate
            break
    if rule is None:
        action = c.RESTART_JOBSET
        job, _ = first_failed(failed)
        assert job is not None
        st.explain(f"job {job.name} failed; no failure policy rule matched; "
                   f"default action {action}")
    else:
        assert job is not None
        action = rule.action
        cond = _failure(job)
        st.explain(f"job {job.name} failed with reason {cond.reason if cond else ''!s}; "
                   f"rule '{rule.name}' matched; action {action}")
    st.failure = _outcome(job, _failure(job), rule, action)
    _APPLIERS[action](st, job, rule)


def _outcome(job: ObservedJob, cond: JobCondition | None, rule: FailureRule | None,
             action: str) -> FailureOutcome:
    return FailureOutcome(rule=rule.name if rule else "", action=action, job=job.name,
                          reason=cond.reason if cond else "",
                          message=cond.message if cond else "")


def _fail_jobset(st: PassState, job: ObservedJob, rule: FailureRule | None) -> None:
    conditions.set_failed(st, c.REASON_FAIL_JOBSET_ACTION, _with_first_failed(
        "applying FailJobSet failure policy action", job))


def _budget_exhausted(st: PassState, include_job_restarts: bool) -> bool:
    policy = st.js.failure_policy
    assert policy is not None
    return counted_restarts(st.status, include_job_restarts) >= policy.max_restarts


def _fail_reached_max(st: PassState, job: ObservedJob) -> None:
    conditions.set_failed(st, c.REASON_REACHED_MAX_RESTARTS,
                          _with_first_failed(c.MSG_REACHED_MAX_RESTARTS, job))
    max_restarts = st.js.failure_policy.max_restarts if st.js.failure_policy else 0
    st.explain(f"the restart budget (maxRestarts {max_restarts}) is spent: "
               "the JobSet fails (ReachedMaxRestarts)")


def _recreate_all(st: PassState, job: ObservedJob, rule: FailureRule | None,
                  action: str, counts: bool) -> None:
    message = _with_first_failed(f"applying {action} failure policy action", job)
    st.status["restarts"] = acc.incremented(st.restarts, "status.restarts")
    if counts:
        st.status["restartsCountTowardsMax"] = acc.incremented(
            st.restarts_count_towards_max, "status.restartsCountTowardsMax")
    st.dirty = True
    reason = c.REASON_RULE_PREFIX + rule.name if rule else c.REASON_DEFAULT_FAILURE_POLICY
    conditions.set_condition(st, c.RESTARTING, "True", reason, message, c.WARNING)
    st.enqueue_event(c.WARNING, action + "FailurePolicyAction", message)
    st.explain(f"restart attempt {st.restarts} recorded; every Job of attempt {st.restarts - 1} "
               "will be deleted and recreated")


def _restart_jobset(st: PassState, job: ObservedJob, rule: FailureRule | None) -> None:
    if _budget_exhausted(st, st.gate(c.GATE_RESTART_JOB)):
        _fail_reached_max(st, job)
        return
    _recreate_all(st, job, rule, c.RESTART_JOBSET, counts=True)


def _restart_jobset_ignore_max(st: PassState, job: ObservedJob, rule: FailureRule | None) -> None:
    _recreate_all(st, job, rule, c.RESTART_JOBSET_IGNORE_MAX, counts=False)


def _recreate_job(st: PassState, job: ObservedJob, action: str, counts: bool) -> None:
    rjob_name = job.labels.get(c.REPLICATED_JOB_NAME)
    if rjob_name is None:
        raise InvalidInput.at(f"jobs[{job.name}].labels[{c.REPLICATED_JOB_NAME}]",
                              f"failed job {job.name} is missing the label")
    raw_index = job.labels.get(c.JOB_INDEX)
    try:
        index = int(raw_index)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInput.at(f"jobs[{job.name}].labels[{c.JOB_INDEX}]",
                              f"failed job {job.name} has an invalid job index {raw_index!r}"
                              ) from None
    entry = next((e for e in st.status.get("replicatedJobsStatus") or ()
                  if e.get("name") == rjob_name), None)
    keys = ["jobRestarts"] + (["jobRestartsCountTowardsMax"] if counts else [])
    for key in keys:
        values = job_restarts(st.js, st.status, rjob_name, key)
        if not 0 <= index < len(values):
            raise InvalidInput.at(f"jobs[{job.name}].labels[{c.JOB_INDEX}]",
                                  f"failed job {job.name} has index {index} out of bounds for "
                                  f"replicated job {rjob_name} (replicas: {len(values)})")
        values[index] = acc.incremented(
            values[index], f"status.replicatedJobsStatus[name={rjob_name}].{key}[{index}]")
        if entry is not None:
            entry[key] = values
    st.dirty = True
    message = _with_first_failed(f"applying {action} failure policy action", job)
    st.enqueue_event(c.WARNING, action + "FailurePolicyAction", message)
    attempt = job_restarts(st.js, st.status, rjob_name, "jobRestarts")[index]
    st.explain(f"job {job.name} alone will be deleted and recreated (job restart attempt "
               f"{attempt})")


def _gate_required(st: PassState, action: str) -> None:
    if not st.gate(c.GATE_RESTART_JOB):
        raise InvalidInput.at("spec.failurePolicy.rules",
                              f"{action} failure policy action cannot be used when the feature "
                              "gate RestartJob is disabled")


def _restart_job(st: PassState, job: ObservedJob, rule: FailureRule | None) -> None:
    _gate_required(st, c.RESTART_JOB)
    if total_restarts_count_towards_max(st) >= st.js.failure_policy.max_restarts:  # type: ignore[union-attr]
        _fail_reached_max(st, job)
        return
    _recreate_job(st, job, c.RESTART_JOB, counts=True)


def _restart_job_ignore_max(st: PassState, job: ObservedJob, rule: FailureRule | None) -> None:
    _gate_required(st, c.RESTART_JOB_IGNORE_MAX)
    _recreate_job(st, job, c.RESTART_JOB_IGNORE_MAX, counts=False)


_APPLIERS = {
    c.FAIL_JOBSET: _fail_jobset,
    c.RESTART_JOBSET: _restart_jobset,
    c.RESTART_JOBSET_IGNORE_MAX: _restart_jobset_ignore_max,
    c.RESTART_JOB: _restart_job,
    c.RESTART_JOB_IGNORE_MAX: _restart_job_ignore_max,
}
