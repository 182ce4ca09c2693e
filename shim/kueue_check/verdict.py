"""What the check writes for one Workload: Kueue's Ready, Retry or Rejected, and why.

Pure: the decider's answers (or the error a call ended with) in, an AdmissionCheckState out.

- `Rejected` when the decider finds the JobSet invalid (a JobSet created while the webhook was
  down, say), with its field errors; when it refuses the JobSet outright (INVALID_ARGUMENT and
  the other answers that asking again will not change); or when its pod sets and the
  Workload's disagree, naming each difference. Kueue then deactivates the Workload.
- `Retry` when the decider cannot answer now: it sheds load (RESOURCE_EXHAUSTED or UNAVAILABLE
  carrying gRPC's retry pushback, `grpc-retry-pushback-ms`), and `requeueAfterSeconds` is that
  pushback rounded up to whole seconds, at least 1; or it is unreachable or out of time, and the
  wait is the controller's `--retry-after`. Kueue releases the quota and queues the Workload
  again after that long.
- `Ready` otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from decider_api.v1 import decider_pb2 as pb
from shim.kueue_check.podsets import differences

PUSHBACK = "grpc-retry-pushback-ms"
READY, RETRY, REJECTED, PENDING = "Ready", "Retry", "Rejected", "Pending"
# Answers that the same request will always get: the JobSet itself is the problem.
FINAL_CODES = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE,
                         grpc.StatusCode.FAILED_PRECONDITION})
# Kueue's AdmissionCheckState.message is at most 32768 characters.
MAX_MESSAGE = 32768


@dataclass(frozen=True)
class Verdict:
    state: str
    message: str
    requeue_after_seconds: int | None = None


@dataclass(frozen=True)
class CallFailed:
    """How a decider call ended when it did not answer."""

    method: str
    code: grpc.StatusCode
    details: str
    # The last attempt's trailing metadata, as the server sent it.
    trailers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, method: str, exc: grpc.RpcError) -> CallFailed:
        code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
        details = exc.details() if hasattr(exc, "details") else str(exc)
        trailers = exc.trailing_metadata() if hasattr(exc, "trailing_metadata") else ()
        return cls(method, code, details or "",
                   tuple((str(k), v if isinstance(v, str) else v.decode("utf-8", "replace"))
                         for k, v in (trailers or ())))


def pushback_seconds(trailers: Sequence[tuple[str, str]]) -> int | None:
    """The server's pushback in whole seconds (at least 1), or None without a usable one."""
    for key, value in trailers:
        if key.lower() == PUSHBACK:
            try:
                ms = int(value.strip())
            except ValueError:
                return None
            # A negative pushback means "do not retry" to a gRPC client; to Kueue it is no wait.
            return max(1, math.ceil(ms / 1000)) if ms >= 0 else None
    return None


def _trim(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."


def failed(call: CallFailed, retry_after: int) -> Verdict:
    what = f"decider {call.method}: {call.code.name}: {call.details}"
    pushback = pushback_seconds(call.trailers)
    shedding = call.code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
    if shedding and pushback is not None:
        return Verdict(RETRY, _trim(f"{what} (shedding load; pushback {pushback}s)"), pushback)
    if call.code in FINAL_CODES or call.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        # RESOURCE_EXHAUSTED without a pushback: the JobSet is past one of the decider's limits.
        return Verdict(REJECTED, _trim(what))
    return Verdict(RETRY, _trim(what), retry_after)


def judge(jobset: str, validate: pb.ValidateResponse | CallFailed,
          pod_sets: pb.PodSetsResponse | CallFailed | None, workload_pod_sets: Sequence[Any],
          retry_after: int) -> Verdict:
    """The check's state for a JobSet's Workload. `pod_sets` is None when Validate was not
    answered or found the JobSet invalid (PodSets is then not asked)."""
    if isinstance(validate, CallFailed):
        return failed(validate, retry_after)
    if not validate.valid:
        errors = "; ".join(f"{e.field}: {e.message}" if e.field else e.message
                           for e in validate.errors)
        return Verdict(REJECTED, _trim(f"decider Validate: JobSet {jobset} is invalid: {errors}"))
    if pod_sets is None:
        raise ValueError("a valid JobSet's pod sets are needed")
    if isinstance(pod_sets, CallFailed):
        return failed(pod_sets, retry_after)
    diffs = differences(pod_sets.pod_sets, workload_pod_sets)
    if diffs:
        return Verdict(REJECTED, _trim(f"decider PodSets: the pod sets of JobSet {jobset} and of "
                                       f"its Workload disagree: " + "; ".join(diffs)))
    summary = ", ".join(f"{p.name} {p.count}" for p in pod_sets.pod_sets)
    return Verdict(READY, f"decider: JobSet {jobset} is valid; its pod sets agree ({summary})")
