"""A pass that must not be retried at once: the guard refused the plan, or the decider the input.

Either way the same input gets the same answer, so the JobSet is told (a Warning event, the
reason and the rule or the decider's message) and the pass is retried on a slow backoff; a
change to the JobSet or its objects still runs a pass at once.
"""

from __future__ import annotations

import grpc

from shim.events import EventRecorder
from shim.guard import Refusal
from shim.kube import Obj

PLAN_REFUSED_REASON = "PlanRefused"
DECISION_REFUSED_REASON = "DecisionRefused"
# Answers that asking again at once will not change: the input is refused (INVALID_ARGUMENT,
# OUT_OF_RANGE, FAILED_PRECONDITION), or it is more than the decider takes (RESOURCE_EXHAUSTED:
# a request past its limits, or a decider shedding load; either way a retry in 5 ms only adds
# to it). Any other code (UNAVAILABLE, DEADLINE_EXCEEDED, ...) is a transient failure.
REFUSAL_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)
# A refused plan is told at most once a minute, like a conflicting create.
PLAN_EVENT_INTERVAL = 60.0
# A refused decision is told once: events live an hour by default, and a successful pass or a
# different message tells again.
DECISION_EVENT_INTERVAL = 3600.0


class PlanRefused(Exception):
    """The plan breaks a guard rule: nothing of it is applied."""

    def __init__(self, jobset: Obj, refusal: Refusal) -> None:
        super().__init__(f"plan refused, nothing of it applied: {refusal}")
        self.jobset = jobset
        self.refusal = refusal


class DecisionRefused(Exception):
    """The decider answered with a status that asking again at once will not change."""

    def __init__(self, jobset: Obj, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"the decider refused to decide ({code.name}): {details}")
        self.jobset = jobset
        self.code = code


def as_refusal(jobset: Obj, exc: grpc.RpcError) -> DecisionRefused | None:
    """The DecisionRefused an RPC error means, or None for a transient one."""
    code = exc.code() if hasattr(exc, "code") else None
    if code not in REFUSAL_CODES:
        return None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return DecisionRefused(jobset, code, details or "")


def report(recorder: EventRecorder, exc: PlanRefused | DecisionRefused) -> bool:
    """The Warning event on the JobSet, rate-limited; True if it was due."""
    if isinstance(exc, PlanRefused):
        r = exc.refusal
        key: tuple[str, ...] = ("plan", str(r.index), r.rule, r.detail)
        return recorder.warn_once(
            exc.jobset, PLAN_REFUSED_REASON, str(exc), key, PLAN_EVENT_INTERVAL
        )
    key = ("decision", exc.code.name, str(exc))
    return recorder.warn_once(
        exc.jobset, DECISION_REFUSED_REASON, str(exc), key, DECISION_EVENT_INTERVAL
    )
