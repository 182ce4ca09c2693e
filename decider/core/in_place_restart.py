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

_ATOI = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _attempts(st: PassState) -> list[int]:
    out = []
    for i, pod in enumerate(st.observed.pods):
        if pod.phase == "Failed" or c.IN_PLACE_RESTART_ATTEMPT not in pod.annotations:
            continue
        raw = pod.annotations[c.IN_PLACE_RESTART_ATTEMPT]
        # strconv.Atoi, as upstream: int() would also take " 1", "1_0" and non-ASCII digits.
        value = int(raw) if _ATOI.fullmatch(raw) else -1
        if value < 0:
            raise InvalidInput.at(f"pods[{i}].annotations[{c.IN_PLACE_RESTART_ATTEMPT}]",
                                  f"pod {pod.name}: must be a non-negative integer, got {raw!r}")
        if value > c.MAX_INT32:
            # The attempt lands in status.currentInPlaceRestartAttempt, an int32.
            raise InvalidInput.at(f"pods[{i}].annotations[{c.IN_PLACE_RESTART_ATTEMPT}]",
                                  f"pod {pod.name}: must be at most {c.MAX_INT32}, got {raw!r}")
        out.append(value)
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


def execute(st: PassState) -> None:
    policy = st.js.failure_policy
    assert policy is not None
    max_container = max((p.max_container_restarts for p in st.observed.pods), default=0)
    if max_container > policy.max_restarts:
        conditions.set_failed(st, c.REASON_REACHED_MAX_RESTARTS, c.MSG_REACHED_MAX_RESTARTS)
        st.explain(f"a container restarted {max_container} times, more than maxRestarts "
                   f"{policy.max_restarts}: the JobSet fails (ReachedMaxRestarts)")
        return
    attempts = _attempts(st)
    uncounted = st.restarts - st.restarts_count_towards_max
    highest = max(attempts, default=0)
    if highest - uncounted > policy.max_restarts:
        conditions.set_failed(st, c.REASON_REACHED_MAX_RESTARTS, c.MSG_REACHED_MAX_RESTARTS)
        st.explain(f"in-place restart attempt {highest} exceeds maxRestarts "
                   f"{policy.max_restarts}: the JobSet fails (ReachedMaxRestarts)")
        return
    total = _total_pods(st)
    if attempts and len(attempts) == total and len(set(attempts)) == 1:
        if st.status.get("currentInPlaceRestartAttempt") != attempts[0]:
            st.status["currentInPlaceRestartAttempt"] = attempts[0]
            st.dirty = True
            st.explain(f"all {total} pods reached in-place restart attempt {attempts[0]}: "
                       "lift the barrier")
        return
    if not attempts or max(attempts) == 0:
        return
    previous = max(attempts) - 1
    old = st.status.get("previousInPlaceRestartAttempt")
    if old is not None and previous <= old:
        return
    st.status["previousInPlaceRestartAttempt"] = previous
    st.dirty = True
    st.explain(f"a pod is at in-place restart attempt {max(attempts)}: pods at or below "
               f"attempt {previous} restart in place")
