"""TTL after finished: a finished JobSet is deleted ttlSecondsAfterFinished after it finished.

The finish time is the lastTransitionTime of the first True Completed or Failed condition. Before
the deadline the pass asks to be requeued for exactly the time left, as upstream does (the plan
also carries it rounded up to whole seconds, for clients that read only seconds); at or after
it, the JobSet is deleted in the foreground.
"""

from __future__ import annotations

from datetime import timedelta

from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.model import Action
from decider.core.state import PassState, parse_time


def execute(st: PassState) -> None:
    js = st.js
    ttl = js.ttl_seconds_after_finished
    if ttl is None or js.deletion_timestamp:
        return
    for i, cond in enumerate(st.status.get("conditions") or ()):
        if cond.get("type") in (c.COMPLETED, c.FAILED) and cond.get("status") == "True":
            finished_at = parse_time(cond.get("lastTransitionTime") or "")
            if finished_at is None:
                raise InvalidInput.at(
                    f"status.conditions[{i}].lastTransitionTime",
                    f"unable to find the time when the JobSet {js.namespace}/{js.name} finished")
            break
    else:
        raise InvalidInput.at("status.conditions",
                              f"unable to find the status of the finished JobSet "
                              f"{js.namespace}/{js.name}")
    # A difference of two datetimes plus an int32 of seconds: within timedelta's range, whatever
    # the dates.
    remaining = finished_at - st.now + timedelta(seconds=ttl)
    if remaining <= timedelta(0):
        st.act(Action(type="DeleteJobSet", name=js.name, api_version=c.API_VERSION,
                      kind=c.KIND, uid=js.uid, propagation_policy=c.FOREGROUND,
                      reason=f"ttlSecondsAfterFinished ({ttl}s) has passed since the JobSet "
                             "finished"))
        st.explain(f"the JobSet finished {int(ttl - remaining.total_seconds())}s ago and its TTL "
                   f"is {ttl}s: delete it")
        return
    st.requeue_after = remaining
    left = f"{remaining.total_seconds():.3f}".rstrip("0").rstrip(".")
    st.explain(f"the JobSet is finished; its TTL expires in {left}s")
