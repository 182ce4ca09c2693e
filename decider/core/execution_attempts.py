"""status.executionAttempts and the execution-attempt annotation (KEP-1282; gate
ExecutionAttemptsTracking).

Upstream: #1283 (syncExecutionAttempts, failurePolicyRecreateAll, labelAndAnnotateObject and
resumeJob), as at jobset_controller.go @4f0cbded. The count is unset while the JobSet never ran
(created suspended, or the gate off), 0 on its first run and one more for every resume and every
restart of the whole JobSet, so it is never below status.restarts. Kueue reads it for its own
accounting; each Job and its pods carry the attempt they run in as the annotation
jobset.sigs.k8s.io/execution-attempt.

A resume's count is written synchronously upstream, before any Job is resumed with it: a pass
that fails halfway must not count the same resume twice, and the guards below read the Jobs'
annotations to tell whether this resume was counted already. The plan says so with an
UpdateStatus action carrying the status as it stands then, ahead of the resumes (`sync`).
"""

from __future__ import annotations

from typing import Any

from decider.core import access as acc
from decider.core import conditions
from decider.core import constants as c
from decider.core.children import ChildJobs
from decider.core.model import Action, ObservedJob
from decider.core.state import PassState, copy_json


def attempts(status: dict[str, Any]) -> int | None:
    value = status.get("executionAttempts")
    return value if isinstance(value, int) else None


def sync(st: PassState, children: ChildJobs) -> None:
    """syncExecutionAttempts: the count of a running JobSet, and one more on a resume.

    - Suspended now: nothing (a JobSet created suspended keeps no count until it runs).
    - Not a resume (no Suspended=True condition): an unset count becomes status.restarts (a new
      JobSet: 0; a JobSet running when the gate was turned on: its restarts).
    - A resume with the count unset (the first run of a JobSet created suspended, or the first
      resume since the gate was turned on): restarts, plus one if it has restarted.
    - A resume with a count: one more, unless this resume was counted already (_counted).
    A resume's new count is written at once, before the Jobs resume (module docstring)."""
    if not st.gate(c.GATE_EXECUTION_ATTEMPTS) or st.js.suspend:
        return
    current = attempts(st.status)
    if not conditions.is_true(st.status, c.SUSPENDED):
        if current is None:
            st.status["executionAttempts"] = st.restarts
            st.dirty = True
            st.explain(f"execution attempts start at {st.restarts} (status.restarts)")
        return
    if current is None:
        new = acc.incremented(st.restarts, "status.restarts") if st.restarts > 0 \
            else st.restarts
        why = "the first run after a suspension"
    elif not _counted(st, children, current):
        new = acc.incremented(current, "status.executionAttempts")
        why = "the JobSet resumes"
    else:
        return
    st.status["executionAttempts"] = new
    st.act(Action(type="UpdateStatus", name=st.js.name, api_version=c.API_VERSION, kind=c.KIND,
                  uid=st.js.uid, status=copy_json(st.status),
                  reason="the resume's execution attempt is stored before any Job resumes"))
    st.explain(f"{why}: execution attempt {new}, written before the Jobs resume")


def _counted(st: PassState, children: ChildJobs, current: int) -> bool:
    """Whether this resume was counted already (a pass that failed after writing it):
    - an active Job already runs;
    - an active suspended Job has no annotation (created suspended: the count was set for this
      run when it was unset);
    - the count is past the annotation a suspended Job carries;
    - without active Jobs, the count is past a finished Job's annotation;
    - without any Job, nothing can tell, and nothing is counted."""
    if children.active:
        for job in children.active:
            if not job.suspend:
                return True
            value = job.annotations.get(c.EXECUTION_ATTEMPT)
            if value is None:
                return True
            attempt = _go_atoi(value)
            if attempt is not None and current > _int32(attempt):
                return True
        return False
    finished = [*children.successful, *children.failed]
    if not finished:
        return True
    for job in finished:
        value = job.annotations.get(c.EXECUTION_ATTEMPT)
        attempt = _go_atoi(value) if value is not None else None
        if attempt is not None and current > _int32(attempt):
            return True
    return False


def count_global_restart(st: PassState, restarts_before: int) -> None:
    """failurePolicyRecreateAll: a restart of the whole JobSet is a new execution attempt (an
    unset count becomes the new status.restarts)."""
    if not st.gate(c.GATE_EXECUTION_ATTEMPTS) or st.restarts <= restarts_before:
        return
    current = attempts(st.status)
    st.status["executionAttempts"] = st.restarts if current is None else \
        acc.incremented(current, "status.executionAttempts")
    st.dirty = True
    st.explain(f"the whole JobSet restarts: execution attempt {st.status['executionAttempts']}")


def annotation(st: PassState) -> dict[str, str]:
    """The annotation a Job created now carries, and its pod template (labelAndAnnotateObject):
    none while the count is unset."""
    if not st.gate(c.GATE_EXECUTION_ATTEMPTS):
        return {}
    current = attempts(st.status)
    return {} if current is None else {c.EXECUTION_ATTEMPT: str(current)}


def resume_annotation(st: PassState) -> dict[str, str]:
    """The annotation a resumed Job and its pod template get (resumeJob): the count, 0 when
    unset."""
    if not st.gate(c.GATE_EXECUTION_ATTEMPTS):
        return {}
    return {c.EXECUTION_ATTEMPT: str(attempts(st.status) or 0)}


def _go_atoi(value: str) -> int | None:
    """strconv.Atoi: an optional sign and ASCII digits, within int64; None otherwise."""
    body = value[1:] if value[:1] in ("+", "-") else value
    if not body or not body.isascii() or not body.isdigit():
        return None
    number = int(value)
    return number if -(2**63) <= number < 2**63 else None


def _int32(number: int) -> int:
    """Go's int32(x) of an int: the low 32 bits, signed."""
    return (number + 2**31) % 2**32 - 2**31


def job_attempt(job: ObservedJob) -> int | None:
    """The attempt a Job was created or last resumed in, from its annotation."""
    value = job.annotations.get(c.EXECUTION_ATTEMPT)
    return _go_atoi(value) if value is not None else None
