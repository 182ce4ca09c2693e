"""spec.activeDeadlineSeconds and status.startTime (KEP-1186; gate JobSetActiveDeadlineSeconds).

Upstream: pkg/controllers/active_deadline.go @1f784225 and its place in the reconcile,
jobset_controller.go @4f0cbded (#1320). The deadline bounds how long a JobSet may be
continuously active, as batch/v1 Job's does:

- status.startTime is when the JobSet last became active. It is set on the first pass that finds
  the JobSet unsuspended without one, cleared while the JobSet is suspended (so a resume starts
  the clock again), reset by a whole-JobSet restart and kept by a single-Job restart. With the
  gate off it is cleared, so a stale time cannot be enforced once the gate is on again (the code
  at 1f784225; the KEP says it is kept).
- The deadline is armed when the gate is on, the field is set, the JobSet is not suspended and
  has a startTime. Armed and expired, it is checked before the failure policy (a restart would
  reset the clock): a JobSet whose success policy is met completes, any other fails with reason
  DeadlineExceeded once its active Jobs are deleted. Armed and not yet expired, the pass asks to
  be decided again when it expires.

Pure: `now` is the pass's.
"""

from __future__ import annotations

from datetime import timedelta

from decider.core import conditions, deletion
from decider.core import constants as c
from decider.core.model import ObservedJob
from decider.core.state import PassState, format_time, parse_time

# Upstream computes the deadline as a time.Duration of nanoseconds: a deadline past what one
# holds is treated as never armed rather than wrapped into the past.
_MAX_SECONDS = c.MAX_INT64 // 1_000_000_000


def sync_start_time(st: PassState) -> None:
    """syncActiveDeadlineStartTime: set when active and unset, cleared while suspended or while
    the gate is off. It runs whether or not a deadline is set: startTime is the JobSet's
    active-start time, as a Job's is."""
    if not st.gate(c.GATE_ACTIVE_DEADLINE) or st.js.suspend:
        if st.status.pop("startTime", None) is not None:
            st.dirty = True
            st.explain("clear status.startTime: " + (
                "the JobSet is suspended, its active time stops" if st.gate(c.GATE_ACTIVE_DEADLINE)
                else "the JobSetActiveDeadlineSeconds feature gate is off"))
        return
    if not st.status.get("startTime"):
        st.status["startTime"] = st.now_str
        st.dirty = True
        st.explain(f"the JobSet is active: status.startTime is {st.now_str}")


def reset_on_global_restart(st: PassState, restarts_before: int) -> None:
    """resetStartTimeOnGlobalRestart: a restart of the whole JobSet (status.restarts went up in
    this pass) begins a fresh run, so the clock starts again; a single Job's restart does not
    touch it."""
    if not st.gate(c.GATE_ACTIVE_DEADLINE):
        return
    if st.restarts > restarts_before and st.status.get("startTime"):
        st.status["startTime"] = st.now_str
        st.dirty = True
        st.explain(f"the whole JobSet restarts: status.startTime is {st.now_str} again, its "
                   "active deadline counts from there")


def remaining(st: PassState) -> timedelta | None:
    """activeDeadlineRemaining: the time left before the deadline (zero or less: expired), or
    None when it is not armed."""
    js = st.js
    seconds = js.active_deadline_seconds
    if not st.gate(c.GATE_ACTIVE_DEADLINE) or seconds is None or js.suspend:
        return None
    started = parse_time(st.status.get("startTime") or "")
    if started is None or seconds > _MAX_SECONDS:
        return None
    # The difference of two datetimes first: startTime plus a huge deadline would leave the
    # calendar.
    return started - st.now + timedelta(seconds=seconds)


def expired(left: timedelta | None) -> bool:
    return left is not None and left <= timedelta(0)


def fail(st: PassState, active: list[ObservedJob]) -> None:
    """failJobSetOnActiveDeadline: delete the active Jobs first, then Failed/DeadlineExceeded
    (upstream records the condition and counts the metric only once the deletes succeeded)."""
    seconds = st.js.active_deadline_seconds
    deletion.delete_jobs(st, active, f"the JobSet's active deadline ({seconds}s) has passed")
    conditions.set_failed(st, c.REASON_DEADLINE_EXCEEDED, c.MSG_DEADLINE_EXCEEDED.format(seconds))
    st.explain(f"the JobSet has been active since {st.status.get('startTime')}, longer than its "
               f"activeDeadlineSeconds ({seconds}s): it fails with DeadlineExceeded")


def explain_requeue(st: PassState, left: timedelta) -> None:
    try:
        when = f" (at {format_time(st.now + left)})"
    except OverflowError:  # a deadline past year 9999
        when = ""
    secs = f"{left.total_seconds():.3f}".rstrip("0").rstrip(".")
    st.explain(f"the active deadline ({st.js.active_deadline_seconds}s) expires in {secs}s"
               f"{when}: decide again then")
