"""Counters below zero in a stored status: what the API server keeps, the pass counts on from.

The CRD sets no minimum on `status.restarts`, `restartsCountTowardsMax`, the counts of
`replicatedJobsStatus` or their `jobRestarts` lists, so a status written by hand (or by a tool
with a bug) may hold a negative one, and the API server stores it. Upstream's reconcile reads
them as the int32s they are: it recomputes `replicatedJobsStatus` from the Jobs
(calculateReplicatedJobStatuses keeps only the `jobRestarts` lists), and adds one to a restart
counter from wherever it is. The pass does the same and says, once, what was odd.
"""

from __future__ import annotations

from typing import Any

from decider.core.state import PassState

_COUNTS = ("ready", "succeeded", "failed", "active", "suspended")
_LISTS = ("jobRestarts", "jobRestartsCountTowardsMax")
_SHOWN = 4


def _below_zero(status: dict[str, Any]) -> list[str]:
    out = [f"status.{key} is {status[key]}" for key in ("restarts", "restartsCountTowardsMax")
           if (status.get(key) or 0) < 0]
    for i, entry in enumerate(status.get("replicatedJobsStatus") or []):
        where = f"status.replicatedJobsStatus[{i}]"
        out += [f"{where}.{key} is {entry[key]}" for key in _COUNTS if (entry.get(key) or 0) < 0]
        for key in _LISTS:
            out += [f"{where}.{key}[{j}] is {v}" for j, v in enumerate(entry.get(key) or [])
                    if v < 0]
    return out


def explain(st: PassState) -> None:
    """One sentence when the stored status holds a counter below zero (the types were checked
    when the JobSet was read, decider/core/jobset.py)."""
    odd = _below_zero(st.js.status)
    if not odd:
        return
    shown = ", ".join(odd[:_SHOWN]) + (f" and {len(odd) - _SHOWN} more" if len(odd) > _SHOWN
                                       else "")
    st.explain(f"the stored status holds counters below zero ({shown}): the CRD sets no "
               "minimum there, so the API server keeps them; as upstream, replicatedJobsStatus "
               "is recomputed from the Jobs and restart counters count on from where they are")
