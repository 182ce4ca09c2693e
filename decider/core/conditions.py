"""JobSet conditions, set by upstream's rules so that every consumer sees the same history.

Rules (upstream `updateCondition`):
- same type, different status: replace it, lastTransitionTime = now;
- same type and status, different reason or message: replace it, keep lastTransitionTime;
- identical: nothing changes, no status write, no event;
- no condition of that type: add it only when the new status is True (a False condition is never
  created from nothing);
- StartupPolicyInProgress and StartupPolicyCompleted exclude each other: setting one True flips
  the other, if True, to False in place.
Every change marks the status dirty and queues an event recorded after the status write.
"""

from __future__ import annotations

from typing import Any

from decider.core import constants as c
from decider.core.state import PassState

_EXCLUSIVE = {c.STARTUP_IN_PROGRESS: c.STARTUP_COMPLETED,
              c.STARTUP_COMPLETED: c.STARTUP_IN_PROGRESS}


def find(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == type_:
            return cond
    return None


def is_true(status: dict[str, Any], type_: str) -> bool:
    cond = find(status, type_)
    return cond is not None and cond.get("status") == "True"


def set_condition(st: PassState, type_: str, status: str, reason: str, message: str,
                  event_type: str) -> bool:
    """Apply one condition by upstream's rules; return whether anything changed."""
    new = {"type": type_, "status": status, "lastTransitionTime": st.now_str,
           "reason": reason, "message": message}
    conditions: list[dict[str, Any]] = st.status.setdefault("conditions", [])
    changed = False
    found = False
    for i, cur in enumerate(conditions):
        if cur.get("type") == type_:
            found = True
            if cur.get("status") != status:
                conditions[i] = new
                changed = True
            elif cur.get("reason") != reason or cur.get("message") != message:
                new["lastTransitionTime"] = cur.get("lastTransitionTime", st.now_str)
                conditions[i] = new
                changed = True
        elif (_EXCLUSIVE.get(type_) == cur.get("type") and cur.get("status") == "True"
              and status == "True"):
            cur["status"] = "False"
            changed = True
    if not found and status == "True":
        conditions.append(new)
        changed = True
    if changed:
        st.dirty = True
        st.enqueue_event(event_type, reason, message)
    return changed


def set_restarting_false(st: PassState, reason: str, message: str) -> None:
    set_condition(st, c.RESTARTING, "False", reason, message, c.NORMAL)


def set_completed(st: PassState) -> None:
    set_condition(st, c.COMPLETED, "True", c.REASON_ALL_JOBS_COMPLETED, c.MSG_COMPLETED, c.NORMAL)
    set_restarting_false(st, c.REASON_JOBSET_COMPLETED, c.MSG_COMPLETED)
    _set_terminal(st, c.COMPLETED)


def set_failed(st: PassState, reason: str, message: str) -> None:
    set_condition(st, c.FAILED, "True", reason, message, c.WARNING)
    set_restarting_false(st, c.REASON_JOBSET_FAILED, c.MSG_JOBSET_FAILED)
    _set_terminal(st, c.FAILED)


def _set_terminal(st: PassState, state: str) -> None:
    if st.status.get("terminalState") != state:
        st.status["terminalState"] = state
        st.dirty = True


def finished(status: dict[str, Any]) -> bool:
    """A JobSet is finished once a Completed or Failed condition is True."""
    return is_true(status, c.COMPLETED) or is_true(status, c.FAILED)
