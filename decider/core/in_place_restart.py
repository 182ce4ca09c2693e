"""InPlaceRestart (KEP-467, gate InPlaceRestart): restart pods in place behind a barrier.

The agent in each pod writes its in-place restart attempt on the pod; the controller only moves
two status fields: previousInPlaceRestartAttempt (agents at or below it restart their pod) and
currentInPlaceRestartAttempt (agents at it lift the barrier, once every pod agrees). The JobSet
fails (ReachedMaxRestarts, no job suffix) once any container restarted more than maxRestarts times,
or once in-place restarts that count exceed maxRestarts.
"""

from __future__ import annotations

import re

from decider.core import conditions
from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.state import PassState

# strconv.Atoi in base 10: a sign, then ASCII digits (int() would also take " 1", "1_0" and
# non-ASCII digits), within int64 (Atoi's range on the 64-bit platforms upstream ships for).
_ATOI = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT64 = 2**63


def _atoi(raw: str) -> int | None:
    value = int(raw) if _ATOI.fullmatch(raw) else None
    return value if value is not None and -_INT64 <= value < _INT64 else None


def _int32(value: int) -> int:
    """Go's int32(v) of an int: the low 32 bits, as a signed number."""
    return (value + 2**31) % 2**32 - 2**31


def _attempts(st: PassState) -> list[int] | None:
    """The pods' attempts as upstream's getPodInPlaceRestartAttempts reads them; None when one
    is refused there (then the pass returns upstream's error, execute)."""
    out = []
    for pod in st.observed.pods:
        if pod.phase == "Failed" or c.IN_PLACE_RESTART_ATTEMPT not in pod.annotations:
            continue
        raw = pod.annotations[c.IN_PLACE_RESTART_ATTEMPT]
        value = _atoi(raw)
        if value is None or value < 0:
            # A pod annotation anyone may write: the API server stores it, upstream acts up to
            # this step and returns an error. Refusing the request would act on nothing.
            st.explain(f"pod {pod.name}: annotation {c.IN_PLACE_RESTART_ATTEMPT} is {raw!r}, "
                       "not a non-negative integer: the pass stops at the in-place restart "
                       "step, after its deletes, creates and resumes, without a status write, "
                       "and is retried (upstream: invalid value for annotation "
                       f"{c.IN_PLACE_RESTART_ATTEMPT}, must be non-negative integer)")
            return None
        wrapped = _int32(value)
        if wrapped != value:
            st.explain(f"pod {pod.name}: in-place restart attempt {value} is past int32; read "
                       f"as {wrapped}, its low 32 bits, as upstream's int32() reads it")
        out.append(wrapped)
    return out


def _total_pods(st: PassState) -> int:
    total = 0
    for i, rjob in enumerate(st.js.replicated_jobs):
        if rjob.completions is None or rjob.parallelism is None or \
                rjob.completions != rjob.parallelism:
            raise InvalidInput.at(f"spec.replicatedJobs[{i}].template.spec",
                                  f"{rjob.name}: in-place restart requires "
                                  "completions == parallelism != nil")
        total += rjob.replicas * rjob.parallelism
    return total


def execute(st: PassState) -> bool:
    """The in-place restart step; False when it returns upstream's error (a pod's attempt
    annotation that is no non-negative integer): the pass then ends as a failed reconcile."""
    policy = st.js.failure_policy
    assert policy is not None
    max_container = max((p.max_container_restarts for p in st.observed.pods), default=0)
    if max_container > policy.max_restarts:
        conditions.set_failed(st, c.REASON_REACHED_MAX_RESTARTS, c.MSG_REACHED_MAX_RESTARTS)
        st.explain(f"a container restarted {max_container} times, more than maxRestarts "
                   f"{policy.max_restarts}: the JobSet fails (ReachedMaxRestarts)")
        return True
    attempts = _attempts(st)
    if attempts is None:
        return False
    # int32 arithmetic, as upstream's exceededMaxRestarts (a wrapped attempt may wrap again).
    uncounted = _int32(st.restarts - st.restarts_count_towards_max)
    highest = max(attempts, default=0)
    if _int32(highest - uncounted) > policy.max_restarts:
        conditions.set_failed(st, c.REASON_REACHED_MAX_RESTARTS, c.MSG_REACHED_MAX_RESTARTS)
        st.explain(f"in-place restart attempt {highest} exceeds maxRestarts "
                   f"{policy.max_restarts}: the JobSet fails (ReachedMaxRestarts)")
        return True
    total = _total_pods(st)
    if attempts and len(attempts) == total and len(set(attempts)) == 1:
        if st.status.get("currentInPlaceRestartAttempt") != attempts[0]:
            st.status["currentInPlaceRestartAttempt"] = attempts[0]
            st.dirty = True
            st.explain(f"all {total} pods reached in-place restart attempt {attempts[0]}: "
                       "lift the barrier")
        return True
    if not attempts or max(attempts) == 0:
        return True
    previous = _int32(max(attempts) - 1)
    old = st.status.get("previousInPlaceRestartAttempt")
    if old is not None and previous <= old:
        return True
    st.status["previousInPlaceRestartAttempt"] = previous
    st.dirty = True
    st.explain(f"a pod is at in-place restart attempt {max(attempts)}: pods at or below "
               f"attempt {previous} restart in place")
    return True
