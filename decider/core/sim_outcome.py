"""Where a simulation ended, in the JobSet status's own terms, and in one sentence.

Everything here is read from what decide() answered (each pass's plan, its failure-policy
decision and status) and from the simulated cluster at the end; nothing is decided again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from decider.core import conditions
from decider.core import constants as c
from decider.core.failure_policy import counted_restarts
from decider.core.jobset import parse_jobset
from decider.core.model import FailureOutcome, ObservedJob, Plan
from decider.core.sim_cluster import Cluster
from decider.core.sim_steps import Step

_RESTART_ALL = (c.RESTART_JOBSET, c.RESTART_JOBSET_IGNORE_MAX)


@dataclass(frozen=True, slots=True)
class RecreatedJob:
    name: str
    # The new Job's restart-attempt label, and its job-restart-attempt label if it has one.
    restart_attempt: int
    job_restart_attempt: int | None = None


@dataclass(slots=True)
class Outcome:
    terminal_state: str
    reason: str
    restarts: int
    restarts_count_towards_max: int
    restarts_left: int
    recreated_jobs: list[RecreatedJob]
    deleted_jobs: list[str]
    failure_policy: list[FailureOutcome]
    summary: str
    passes: int
    settled: bool
    end_time: datetime
    jobset_deleted: bool
    events_not_applied: list[str] = field(default_factory=list)
    # When spec.activeDeadlineSeconds failed the JobSet, if it did.
    deadline_exceeded_at: datetime | None = None


def _label_int(job: ObservedJob, key: str) -> int | None:
    try:
        return int(job.labels[key])
    except (KeyError, ValueError):
        return None


def _terminal_reason(status: dict[str, Any]) -> str:
    state = status.get("terminalState") or ""
    cond = conditions.find(status, state) if state else None
    return str(cond.get("reason") or "") if cond and cond.get("status") == "True" else ""


def _budget(cluster: Cluster) -> int | None:
    """spec.failurePolicy.maxRestarts, or None without a failure policy."""
    policy = parse_jobset(cluster.jobset).failure_policy
    return None if policy is None else policy.max_restarts


def _left(status: dict[str, Any], budget: int | None, gate: bool) -> int:
    return 0 if budget is None else max(0, budget - counted_restarts(status, gate))


def _jobs(n: int) -> str:
    return f"{n} Job" if n == 1 else f"{n} Jobs"


def _effect(d: FailureOutcome, plan: Plan, budget: int | None, gate: bool) -> str:
    status = plan.status
    if status.get("terminalState") == c.FAILED:
        reason = _terminal_reason(status)
        if reason == c.REASON_REACHED_MAX_RESTARTS:
            return f"the restart budget is spent (maxRestarts {budget}): the JobSet fails " \
                   f"({reason})"
        return "the JobSet fails"
    if d.action == c.RESTART_JOBSET:
        return (f"the JobSet restarts (restart {status.get('restarts', 0)}; "
                f"{_left(status, budget, gate)} left of maxRestarts {budget})")
    if d.action == c.RESTART_JOBSET_IGNORE_MAX:
        return (f"the JobSet restarts (restart {status.get('restarts', 0)}, not counted "
                "towards maxRestarts)")
    return f"job {d.job} alone restarts"


def _consequence(window: Sequence[Step]) -> str:
    deleted: dict[str, None] = {}
    recreated: dict[str, None] = {}
    for step in window:
        for a in step.plan.actions:
            if a.type == "DeleteJob":
                deleted.setdefault(a.name, None)
            elif a.type == "CreateJob" and a.name in deleted:
                recreated.setdefault(a.name, None)
    if not deleted:
        return ""
    if len(recreated) == len(deleted):
        verb = "is" if len(deleted) == 1 else "are"
        return f"; {_jobs(len(deleted))} {verb} deleted and recreated"
    if recreated:
        return f"; {_jobs(len(deleted))} deleted, {len(recreated)} recreated"
    return f"; {_jobs(len(deleted))} {'is' if len(deleted) == 1 else 'are'} deleted"


def _failure_clause(d: FailureOutcome, window: Sequence[Step], budget: int | None,
                    gate: bool) -> str:
    if budget is None:
        policy = "the JobSet has no failure policy"
    elif d.rule:
        policy = f"rule {d.rule} matches, action {d.action}"
    else:
        policy = f"no rule matches, default action {d.action}"
    return (f"job {d.job} fails with {d.reason or 'no reason'}: {policy}: "
            f"{_effect(d, window[0].plan, budget, gate)}{_consequence(window)}")


def _deadline_step(steps: Sequence[Step]) -> Step | None:
    """The pass that failed the JobSet for its active deadline (KEP-1186), if one did."""
    for step in steps:
        status = step.plan.status
        if status.get("terminalState") == c.FAILED and \
                _terminal_reason(status) == c.REASON_DEADLINE_EXCEEDED:
            return step
    return None


def _deadline_clause(step: Step, cluster: Cluster) -> str:
    seconds = (cluster.jobset.get("spec") or {}).get("activeDeadlineSeconds")
    return (f"the active deadline ({seconds}s) passes at +{step.at_seconds}s: the JobSet fails "
            f"({c.REASON_DEADLINE_EXCEEDED})")


def _at_rest(status: dict[str, Any], jobset: dict[str, Any]) -> str:
    state = status.get("terminalState") or ""
    if state == c.COMPLETED:
        return f"the JobSet completes ({_terminal_reason(status)})"
    if state == c.FAILED:
        return f"the JobSet has failed ({_terminal_reason(status)})"
    if (jobset.get("spec") or {}).get("suspend") is True:
        return "no Job fails: the JobSet stays suspended"
    return "no Job fails: the JobSet keeps running"


def summary(cluster: Cluster, steps: Sequence[Step], settled: bool, not_applied: int,
            budget: int | None, out_of_dates: bool = False) -> str:
    gate = cluster.options.gate(c.GATE_RESTART_JOB)
    fired = [i for i, s in enumerate(steps) if s.plan.failure is not None]
    clauses = []
    for k, i in enumerate(fired):
        end = fired[k + 1] if k + 1 < len(fired) else len(steps)
        decision = steps[i].plan.failure
        assert decision is not None
        clauses.append(_failure_clause(decision, steps[i:end], budget, gate))
    status = cluster.jobset.get("status") or {}
    deadline = _deadline_step(steps)
    if deadline is not None:
        clauses.append(_deadline_clause(deadline, cluster))
    text = "; then ".join(clauses) if clauses else _at_rest(status, cluster.jobset)
    if clauses and status.get("terminalState") == c.COMPLETED:
        text += f"; then {_at_rest(status, cluster.jobset)}"
    if cluster.jobset_deleted:
        text += f"; the JobSet is deleted when its TTL runs out (+{steps[-1].at_seconds}s)"
    if not settled:
        text += f"; still changing after {len(steps)} passes " + (
            "(the next would fall after year 9999, the last a Timestamp can hold)"
            if out_of_dates else "(the pass limit)")
    if not_applied:
        text += f"; {not_applied} event{'s' if not_applied > 1 else ''} never applied"
    return text


def outcome(cluster: Cluster, steps: Sequence[Step], *, settled: bool, out_of_dates: bool = False,
            not_applied: list[str]) -> Outcome:
    status = cluster.jobset.get("status") or {}
    budget = _budget(cluster)
    recreated = [RecreatedJob(name=name, restart_attempt=_label_int(job, c.RESTART_ATTEMPT) or 0,
                              job_restart_attempt=_label_int(job, c.JOB_RESTART_ATTEMPT))
                 for name, job in sorted(cluster.recreated.items())]
    return Outcome(
        terminal_state=str(status.get("terminalState") or ""),
        reason=_terminal_reason(status),
        restarts=int(status.get("restarts") or 0),
        restarts_count_towards_max=int(status.get("restartsCountTowardsMax") or 0),
        restarts_left=_left(status, budget, cluster.options.gate(c.GATE_RESTART_JOB)),
        recreated_jobs=recreated,
        deleted_jobs=sorted(n for n in cluster.deleted if n not in cluster.jobs),
        failure_policy=[s.plan.failure for s in steps if s.plan.failure],
        summary=summary(cluster, steps, settled, len(not_applied), budget, out_of_dates),
        passes=len(steps),
        settled=settled,
        end_time=cluster.now,
        jobset_deleted=cluster.jobset_deleted,
        events_not_applied=not_applied,
        deadline_exceeded_at=step.time if (step := _deadline_step(steps)) else None,
    )
