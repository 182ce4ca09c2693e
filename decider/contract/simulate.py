"""The Simulate contract <-> the core's simulator (decider/core/simulate.py).

The observed half of a SimulateRequest is a DecideRequest and goes through
`convert.observed_from_proto`, so a simulation is held to every limit a Decide is, raw objects
included; its errors are named from the request (`observed.jobset_json`).
"""

from __future__ import annotations

from decider.contract import limits
from decider.contract.convert import failure_policy_to_proto, observed_from_proto, plan_to_proto
from decider.contract.limits import Limits
from decider.core.errors import FieldError, InvalidInput, TooLarge
from decider.core.sim_outcome import Outcome
from decider.core.sim_steps import SimEvent, Step
from decider.core.simulate import MAX_EVENTS, simulate
from decider.core.state import format_time
from decider_api.names import SIMULATION_EVENT_NAMES, SIMULATION_EVENT_TYPES
from decider_api.v1 import decider_pb2 as pb


def _within(prefix: str, exc: InvalidInput | TooLarge) -> InvalidInput | TooLarge:
    """`exc`, its fields named from the enclosing message (`observed.jobset_json`)."""
    if isinstance(exc, TooLarge):
        text = str(exc).removeprefix(f"{exc.field}: ") if exc.field else str(exc)
        return TooLarge(f"{prefix}.{exc.field}" if exc.field else prefix, text)
    return InvalidInput([FieldError(f"{prefix}.{e.field}" if e.field else prefix, e.message)
                         for e in exc.errors])


def _sim_event(msg: pb.SimulationEvent, index: int) -> SimEvent:
    name = SIMULATION_EVENT_NAMES.get(msg.type)
    if name is None:
        raise InvalidInput.at(f"events[{index}].type",
                              f"Unsupported value: {msg.type}: supported values: "
                              + ", ".join(pb.SimulationEventType.Name(v)
                                          for v in SIMULATION_EVENT_NAMES))
    return SimEvent(type=name, at_seconds=msg.at_seconds, job=msg.job, reason=msg.reason,
                    message=msg.message)


def _sim_event_to_proto(ev: SimEvent) -> pb.SimulationEvent:
    return pb.SimulationEvent(at_seconds=ev.at_seconds,
                              type=SIMULATION_EVENT_TYPES[ev.type],
                              job=ev.job, reason=ev.reason, message=ev.message)


def _outcome_to_proto(o: Outcome) -> pb.SimulationOutcome:
    msg = pb.SimulationOutcome(
        terminal_state=o.terminal_state, reason=o.reason, restarts=o.restarts,
        restarts_count_towards_max=o.restarts_count_towards_max,
        restarts_left=o.restarts_left, deleted_jobs=o.deleted_jobs,
        failure_policy=[failure_policy_to_proto(d) for d in o.failure_policy],
        summary=o.summary, passes=o.passes, settled=o.settled,
        end_time=format_time(o.end_time), jobset_deleted=o.jobset_deleted,
        events_not_applied=o.events_not_applied)
    if o.deadline_exceeded_at is not None:
        msg.deadline_exceeded_time = format_time(o.deadline_exceeded_at)
    for job in o.recreated_jobs:
        entry = msg.recreated_jobs.add(name=job.name, restart_attempt=job.restart_attempt)
        if job.job_restart_attempt is not None:
            entry.job_restart_attempt = job.job_restart_attempt
    return msg


def _field_bytes(size: int) -> int:
    """Bytes a length-delimited field of `size` bytes takes in its parent: its tag (one byte,
    fields 1 to 15) and its length as a varint."""
    return 1 + max(1, (size.bit_length() + 6) // 7) + size


def simulate_response(req: pb.SimulateRequest,
                      lim: Limits = limits.DEFAULT) -> pb.SimulateResponse:
    """Simulate one request; InvalidInput naming the field for input it cannot simulate,
    TooLarge at the first pass whose steps would not fit in one message."""
    if not req.HasField("observed"):
        raise InvalidInput.at("observed", "Required value")
    limits.check_count(len(req.events), "events", MAX_EVENTS, "events")
    # Event strings are typed fields: held to max_string_bytes like any other.
    limits.check_strings(req.events, "events", lim)
    events = [_sim_event(e, i) for i, e in enumerate(req.events)]
    try:
        observed = observed_from_proto(req.observed, lim)
    except (InvalidInput, TooLarge) as exc:
        raise _within("observed", exc) from None
    response = pb.SimulateResponse()
    steps_bytes = 0

    def step_bytes(s: Step) -> int:
        # Each step goes into the answer as it is decided: the simulator charges its exact
        # size to the answer's budget, and it is built once, not again at the end.
        nonlocal steps_bytes
        msg = response.steps.add(pass_number=s.number, time=format_time(s.time),
                                 at_seconds=s.at_seconds,
                                 events=[_sim_event_to_proto(e) for e in s.events])
        msg.plan.CopyFrom(plan_to_proto(s.plan))
        size = _field_bytes(msg.ByteSize())
        steps_bytes += size
        return size

    sim = simulate(observed, events, req.max_passes, step_bytes)
    assert sim.outcome is not None
    response.outcome.SetInParent()
    response.outcome.CopyFrom(_outcome_to_proto(sim.outcome))
    budget = observed.options.max_plan_bytes
    needed = steps_bytes + _field_bytes(response.outcome.ByteSize())
    if budget and needed > budget:
        # The outcome lists the recreated and deleted Jobs: on the largest JobSets it is what
        # takes steps that just fit over the limit.
        last = sim.steps[-1]
        raise TooLarge("", f"Simulate: the steps and their outcome need {needed:,} bytes, "
                           f"over the limit of {budget:,} bytes per message; the simulation "
                           f"ended at pass {last.number} (+{last.at_seconds}s)")
    return response
