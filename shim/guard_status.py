"""What a status write may say: the status rules of the plan guard.

An UpdateStatus action writes a whole status onto the JobSet (its own, `Action.status`, or the
plan's). The scope rules (shim/guard.py) already hold it to this JobSet's name and UID; these
hold its content to what a pass of the decider can write from the status it was decided on:

- the counters only go up: `restarts`, `restartsCountTowardsMax` and `executionAttempts`
  (ExecutionAttemptsTracking: never unset once set, one more per resume or restart, never
  less). Kueue accounts per execution attempt and the failure policy per restart: a count that
  goes back re-runs a JobSet past its maxRestarts or bills an attempt twice;
- `replicatedJobsStatus` names the JobSet's own replicated Jobs (or entries the status had
  already): an entry of another JobSet's status is not this JobSet's to write;
- `startTime` (JobSetActiveDeadlineSeconds) is unset or an RFC 3339 time, as the CRD's
  date-time format requires: the API server would refuse the write after the plan's other
  actions were applied.

Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from decider_api.v1 import decider_pb2 as pb
from shim.guard_content import Broken, dig, q, replicated_jobs

Obj = dict[str, Any]

# RFC 3339 as the API server's date-time format takes it (Go's time.RFC3339 with fractions).
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})",
                      re.ASCII)


def check(jobset: Obj, written: pb.JobSetStatus) -> None:
    """Refuse a status that no pass could have written over the JobSet's `jobset` status."""
    have = dig(jobset, "status")
    for key, field in (("restarts", "restarts"),
                       ("restartsCountTowardsMax", "restarts_count_towards_max")):
        before = _count(have.get(key))
        after = getattr(written, field)
        if after < before:
            raise Broken("status", f"the status sets {key} to {after}, below the JobSet's "
                                   f"{before}: a count never goes back")
    before = _count(have.get("executionAttempts"), None)
    if before is not None:
        after = written.execution_attempts if written.HasField("execution_attempts") else None
        if after is None or after < before:
            raise Broken("status", f"the status sets executionAttempts to {q(after)}, below "
                                   f"the JobSet's {before}: an attempt never goes back")
    known = {r.get("name") for r in replicated_jobs(jobset)}
    known |= {e.get("name") for e in have.get("replicatedJobsStatus") or ()
              if isinstance(e, dict)}
    for entry in written.replicated_jobs_status:
        if entry.name not in known:
            raise Broken("status", f"the status has replicatedJobsStatus {q(entry.name)}, not "
                                   "a replicated Job of this JobSet")
    if written.start_time and not _RFC3339.fullmatch(written.start_time):
        raise Broken("status", f"the status's startTime {q(written.start_time)} is not an "
                               "RFC 3339 time")


def _count(value: Any, default: int | None = 0) -> int | None:
    """A counter as the stored status has it; anything else counts as unset."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default
