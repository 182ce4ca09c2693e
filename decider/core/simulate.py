"""What if? Decide passes rolled forward under hypothetical events, to an outcome.

A scheduler asks "if this Job fails now with this reason, what will the JobSet end up doing?".
One Decide pass cannot say: the controller is level-triggered and a restart takes several passes
(record it; delete the old attempt; recreate each Job). The simulator runs those passes with
`decide()` itself, so simulation and reality cannot diverge: each pass's plan is applied to a
model of the cluster (sim_cluster.py) and the next pass decides on the result.

Time: passes run at one `now` while they change something (each change triggers the next pass
at once, as watch events do). A pass that changes nothing is quiet; then time jumps to whatever
comes first, the plan's requeue (TTL after finished) or the next event. An event is applied just
before the first pass at or after its time; an event about a Job that does not exist yet (or has
finished) waits until a pass creates it. The simulation ends when a quiet pass has nothing left
to wait for, when the JobSet is deleted, or at the pass limit.

Size: the answer carries every pass's plan, so `Options.max_plan_bytes` is the budget of the
whole simulation, not of each pass. Each pass's Decide is lent only what the steps before it left
(so it refuses a plan that cannot fit before building it, as a lone Decide does), and each step,
once decided, is charged what the caller says it costs (`step_bytes`: the core does not know the
wire format). The simulation stops with TooLarge at the first pass over the budget: a request
whose answer could never be sent costs a few passes, not all of them.

Pure: no I/O, no clock; the same request simulates to the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta

from decider.core.decide import decide
from decider.core.errors import FieldError, InvalidInput, TooLarge
from decider.core.jobset import parse_jobset
from decider.core.model import Observed, Plan
from decider.core.sim_cluster import Cluster
from decider.core.sim_outcome import Outcome, outcome
from decider.core.sim_steps import SimEvent, Step
from decider.core.state import PlanTooLarge

JOB_FAILED = "JobFailed"
JOB_SUCCEEDED = "JobSucceeded"
JOB_READY = "JobReady"
JOB_SUSPENDED = "JobSuspended"
JOB_RESUMED = "JobResumed"
JOBSET_SUSPENDED = "JobSetSuspended"
JOBSET_RESUMED = "JobSetResumed"
JOB_EVENTS = (JOB_FAILED, JOB_SUCCEEDED, JOB_READY, JOB_SUSPENDED, JOB_RESUMED)
JOBSET_EVENTS = (JOBSET_SUSPENDED, JOBSET_RESUMED)
EVENT_TYPES = JOB_EVENTS + JOBSET_EVENTS

DEFAULT_MAX_PASSES = 100
# Every pass is a whole Decide; a thousand is minutes of work on the largest JobSets.
MAX_PASSES = 1000
MAX_EVENTS = 1000
# A century: far beyond any TTL or schedule, and far inside the range of a timestamp.
MAX_AT_SECONDS = 100 * 365 * 24 * 3600


@dataclass(slots=True)
class Simulation:
    steps: list[Step] = field(default_factory=list)
    outcome: Outcome | None = None


def check_request(events: list[SimEvent], max_passes: int) -> int:
    """The pass limit to use; InvalidInput naming the field for events or limits out of range."""
    if max_passes < 0 or max_passes > MAX_PASSES:
        raise InvalidInput.at("max_passes", f"must be between 0 (the default, "
                                            f"{DEFAULT_MAX_PASSES}) and {MAX_PASSES}, got "
                                            f"{max_passes}")
    if len(events) > MAX_EVENTS:
        raise InvalidInput.at("events", f"must have at most {MAX_EVENTS} items, has "
                                        f"{len(events)}")
    for i, ev in enumerate(events):
        if ev.type not in EVENT_TYPES:
            raise InvalidInput.at(f"events[{i}].type", f"Unsupported value: {ev.type!r}: "
                                                       "supported values: "
                                                       + ", ".join(EVENT_TYPES))
        if not 0 <= ev.at_seconds <= MAX_AT_SECONDS:
            raise InvalidInput.at(f"events[{i}].at_seconds",
                                  f"must be between 0 and {MAX_AT_SECONDS}, got {ev.at_seconds}")
        if ev.type in JOB_EVENTS and not ev.job:
            raise InvalidInput.at(f"events[{i}].job", f"Required value: {ev.type} names a Job")
        if ev.type in JOBSET_EVENTS and ev.job:
            raise InvalidInput.at(f"events[{i}].job", f"must be empty: {ev.type} happens to the "
                                                      "JobSet")
        if (ev.reason or ev.message) and ev.type != JOB_FAILED:
            raise InvalidInput.at(f"events[{i}].reason", f"only {JOB_FAILED} has a reason and "
                                                         "a message")
    return max_passes or DEFAULT_MAX_PASSES


def _apply_event(cluster: Cluster, ev: SimEvent) -> bool:
    """Apply `ev` if it can happen now; False when it has to wait (its Job is not there)."""
    if ev.type == JOBSET_SUSPENDED:
        cluster.suspend_jobset(True)
        return True
    if ev.type == JOBSET_RESUMED:
        cluster.suspend_jobset(False)
        return True
    job = cluster.job_for_event(ev.job)
    if job is None:
        return False
    if ev.type == JOB_FAILED:
        cluster.fail_job(job, ev.reason, ev.message)
    elif ev.type == JOB_SUCCEEDED:
        cluster.succeed_job(job)
    elif ev.type == JOB_READY:
        cluster.ready_job(job)
    else:
        cluster.suspend_job(job, ev.type == JOB_SUSPENDED)
    return True


def _check_jobset(observed: Observed) -> None:
    """The JobSet read as the first pass reads it, before any event: an event due at +0s
    (JobSetSuspended) edits it before that pass, and a JobSet whose metadata or spec is not an
    object made the edit crash (INTERNAL) where pass 1 would have named the field."""
    try:
        parse_jobset(observed.jobset)
    except InvalidInput as exc:
        raise InvalidInput([FieldError(e.field, f"{e.message} (simulation pass 1, +0s)")
                            for e in exc.errors]) from None


def _decide(observed: Observed, number: int, at_seconds: int, budget: int, spent: int) -> Plan:
    try:
        return decide(observed)
    except InvalidInput as exc:
        # The field is the JobSet's or an observed Job's, as Decide names it; say which pass.
        raise InvalidInput([FieldError(e.field, f"{e.message} (simulation pass {number}, "
                                                f"+{at_seconds}s)") for e in exc.errors]) from None
    except PlanTooLarge as exc:
        if not budget:
            raise
        # Decide saw only the share left to this pass; the caller set a limit on the answer.
        raise TooLarge("", f"Simulate: the steps so far already need at least "
                           f"{spent + exc.needed:,} bytes, over the limit of {budget:,} bytes "
                           f"per message; stopped at pass {number} (+{at_seconds}s), before "
                           f"building its plan ({exc.field + ': ' if exc.field else ''}"
                           f"{exc.what})") from None


def _over_budget(needed: int, budget: int, number: int, at_seconds: int) -> TooLarge:
    """The refusal of a simulation whose answer needs `needed` bytes by pass `number`."""
    return TooLarge("", f"Simulate: the steps so far already need {needed:,} bytes, over the "
                        f"limit of {budget:,} bytes per message; stopped at pass {number} "
                        f"(+{at_seconds}s)")


def simulate(observed: Observed, events: list[SimEvent], max_passes: int = 0,
             step_bytes: Callable[[Step], int] | None = None) -> Simulation:
    """Run Decide passes from `observed` under `events` until nothing is left to happen.

    `step_bytes`: what a step adds to the caller's answer, charged against
    `observed.options.max_plan_bytes` as each step is decided; TooLarge at the first step over
    it. None charges nothing: each pass is then held to the budget alone, as a Decide is."""
    limit = check_request(events, max_passes)
    _check_jobset(observed)
    start = observed.now
    cluster = Cluster(observed)
    budget = observed.options.max_plan_bytes if step_bytes is not None else 0
    spent = 0
    # Stable: events at one time apply in the order given.
    pending = sorted(enumerate(events), key=lambda item: item[1].at_seconds)
    sim = Simulation()
    settled = out_of_dates = False
    for number in range(1, limit + 1):
        elapsed = int((cluster.now - start).total_seconds())
        applied = []
        for item in list(pending):
            if item[1].at_seconds <= elapsed and _apply_event(cluster, item[1]):
                applied.append(item[1])
                pending.remove(item)
        seen = cluster.observed()
        if budget:
            # At least 1: a zero would lift Decide's limit instead of leaving nothing.
            seen.options = replace(seen.options, max_plan_bytes=max(budget - spent, 1))
        plan = _decide(seen, number, elapsed, budget, spent)
        step = Step(number=number, time=cluster.now, at_seconds=elapsed, events=applied,
                    plan=plan)
        sim.steps.append(step)
        if step_bytes is not None:
            spent += step_bytes(step)
            if budget and spent > budget:
                raise _over_budget(spent, budget, number, elapsed)
        if cluster.apply(plan):
            if cluster.jobset_deleted:
                settled = True
                break
            continue
        # A quiet pass: what wakes the controller next is a requeue or a future event. Due
        # events still waiting for their Job have nothing left to wait for.
        wakes = [ev.at_seconds for _, ev in pending if ev.at_seconds > elapsed]
        if plan.requeue_after_seconds > 0:
            wakes.append(elapsed + plan.requeue_after_seconds)
        if not wakes:
            settled = True
            break
        try:
            cluster.now = start + timedelta(seconds=min(wakes))
        except OverflowError:
            out_of_dates = True  # past year 9999: no later pass can be dated
            break
    sim.outcome = outcome(cluster, sim.steps, settled=settled, out_of_dates=out_of_dates,
                          not_applied=[_not_applied(i, ev, settled) for i, ev in pending])
    return sim


def _not_applied(index: int, ev: SimEvent, settled: bool) -> str:
    what = f"events[{index}]: {ev.type}" + (f" of job {ev.job}" if ev.job else "") + \
        f" at +{ev.at_seconds}s"
    if not settled:
        return f"{what}: not reached, the simulation stopped first"
    return f"{what}: the Job never existed, unfinished, at or after that time"
