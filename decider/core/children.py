"""Which child Jobs belong to this attempt, and the replicatedJobsStatus they add up to.

Attempt detection (upstream `getChildJobs`): a Job whose `restart-attempt` label is below
`status.restarts` belongs to a previous attempt; with the RestartJob gate, so does a Job whose
`job-restart-attempt` label is below its index's `jobRestarts` entry. The rest are active,
successful or failed by their first finishing condition.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from decider.core import constants as c
from decider.core.errors import InvalidInput
from decider.core.jobset import JobSet
from decider.core.model import ObservedJob


@dataclass(slots=True)
class ChildJobs:
    active: list[ObservedJob] = field(default_factory=list)
    successful: list[ObservedJob] = field(default_factory=list)
    failed: list[ObservedJob] = field(default_factory=list)
    previous: list[ObservedJob] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    # Observed Jobs the JobSet does not control, by name (name_conflicts.py).
    foreign: dict[str, ObservedJob] = field(default_factory=dict)


# Upstream parses these labels with strconv.Atoi: an optional sign and ASCII digits, within
# int64. Python's int() also takes surrounding spaces, "1_0" and non-ASCII digits, which would
# turn a label upstream rejects (the pass aborts) into a restart attempt.
_ATOI = re.compile(r"[+-]?[0-9]+", re.ASCII)


@functools.lru_cache(maxsize=4096)
def _atoi(value: str) -> int | None:
    # Cached: ten thousand Jobs carry a handful of distinct label values ("0", "1", ...).
    if _ATOI.fullmatch(value) and -(2**63) <= int(value) < 2**63:
        return int(value)
    return None


def _label_int(job: ObservedJob, index: int, key: str) -> int:
    value = job.labels.get(key)
    parsed = _atoi(value) if isinstance(value, str) else None
    if parsed is not None:
        return parsed
    raise InvalidInput.at(f"jobs[{index}].labels[{key}]",
                          f"job {job.name}: must be an integer, got {value!r}")


def job_restarts(js: JobSet, status: dict[str, Any], rjob_name: str, key: str) -> list[int]:
    """Per-index restart counters of a replicated Job; zeros when status has none yet."""
    for rjs in status.get("replicatedJobsStatus") or ():
        if rjs.get("name") == rjob_name and rjs.get(key):
            return list(rjs[key])
    return [0] * js.replicas_of(rjob_name)


class RestartCounters:
    """job_restarts for many replicated Jobs of one status: the status is indexed once, where
    asking job_restarts for each replicated Job would walk it for each one."""

    def __init__(self, js: JobSet, status: dict[str, Any], key: str) -> None:
        self.js = js
        self.found: dict[Any, list[int]] = {}
        for rjs in status.get("replicatedJobsStatus") or ():
            name = rjs.get("name")
            # The first entry of a name that has counters, as job_restarts reads it.
            if rjs.get(key) and name not in self.found:
                self.found[name] = rjs[key]

    def of(self, rjob_name: str) -> list[int]:
        values = self.found.get(rjob_name)
        return list(values) if values is not None else [0] * self.js.replicas_of(rjob_name)


def classify(js: JobSet, jobs: list[ObservedJob], status: dict[str, Any],
             restart_job_gate: bool) -> ChildJobs:
    out = ChildJobs()
    restarts = int(status.get("restarts") or 0)
    targets: dict[str, list[int]] = {}
    counters: RestartCounters | None = None
    uid = js.uid
    add_name = out.names.add
    for i, job in enumerate(jobs):
        # Owned means controlled by this JobSet's UID; a same-named JobSet's Jobs are not ours.
        if job.controller_uid != uid:
            out.foreign[job.name] = job
            continue
        add_name(job.name)
        attempt_label = job.labels.get(c.RESTART_ATTEMPT)
        # The common case inline (ten thousand Jobs, a handful of label values), the rest and
        # the error through _label_int.
        restart_attempt = _atoi(attempt_label) if type(attempt_label) is str else None
        if restart_attempt is None:
            restart_attempt = _label_int(job, i, c.RESTART_ATTEMPT)
        if restart_attempt < restarts:
            out.previous.append(job)
            continue
        if restart_job_gate:
            rjob_name = job.labels.get(c.REPLICATED_JOB_NAME)
            if rjob_name is None:
                raise InvalidInput.at(f"jobs[{i}].labels[{c.REPLICATED_JOB_NAME}]",
                                      f"job {job.name}: missing label")
            if c.JOB_INDEX not in job.labels:
                raise InvalidInput.at(f"jobs[{i}].labels[{c.JOB_INDEX}]",
                                      f"job {job.name}: missing label")
            idx = _label_int(job, i, c.JOB_INDEX)
            # A Job from before the gate has no job-restart-attempt label: it stays current.
            if c.JOB_RESTART_ATTEMPT in job.labels:
                attempt = _label_int(job, i, c.JOB_RESTART_ATTEMPT)
                if rjob_name not in targets:
                    if counters is None:
                        counters = RestartCounters(js, status, "jobRestarts")
                    targets[rjob_name] = counters.of(rjob_name)
                target = targets[rjob_name]
                if not 0 <= idx < len(target):
                    raise InvalidInput.at(
                        f"jobs[{i}].labels[{c.JOB_INDEX}]",
                        f"job {job.name}: index {idx} is out of bounds for replicated job "
                        f"{rjob_name}")
                if attempt < target[idx]:
                    out.previous.append(job)
                    continue
        state = job.finished()
        if state == c.JOB_FAILED:
            out.failed.append(job)
        elif state == c.JOB_COMPLETE:
            out.successful.append(job)
        else:
            out.active.append(job)
    return out


def _is_ready(job: ObservedJob, independent: bool, suspend: bool | None) -> bool:
    """suspend: job.suspend, read once by the caller (a view over a message reads it anew
    each time)."""
    # A Job someone else suspended runs no pods; in Independent mode it is never Ready, even while
    # its status still shows the pods it had (seed 000: a suspended dependency is not Ready).
    if independent and suspend:
        return False
    parallelism = job.parallelism
    pods = parallelism if parallelism is not None else 1
    completions = job.completions
    if completions is not None and completions < pods:
        pods = completions
    return job.succeeded + job.ready >= pods


def replicated_jobs_status(js: JobSet, children: ChildJobs, status: dict[str, Any],
                           restart_job_gate: bool) -> list[dict[str, Any]]:
    """One entry per replicated Job, sorted by name descending as upstream persists them."""
    counts: dict[str, dict[str, Any]] = {
        rj.name: {"name": rj.name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0,
                  "suspended": 0} for rj in js.replicated_jobs}
    independent = js.independent
    for job in children.active:
        entry = counts.get(job.labels.get(c.REPLICATED_JOB_NAME, ""))
        if entry is None:
            continue
        suspend = job.suspend
        if _is_ready(job, independent, suspend):
            entry["ready"] += 1
        if job.active > 0:
            entry["active"] += 1
        if suspend:
            entry["suspended"] += 1
    for key, jobs in (("succeeded", children.successful), ("failed", children.failed)):
        for job in jobs:
            entry = counts.get(job.labels.get(c.REPLICATED_JOB_NAME, ""))
            if entry is not None:
                entry[key] += 1
    if restart_job_gate:
        old = {e.get("name"): e for e in status.get("replicatedJobsStatus") or ()}
        for name, entry in counts.items():
            for key in ("jobRestarts", "jobRestartsCountTowardsMax"):
                values = (old.get(name) or {}).get(key)
                if values:
                    entry[key] = list(values)
    return sorted(counts.values(), key=lambda e: e["name"], reverse=True)


def _normalized(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    # Spelled out rather than looped over the keys: every pass compares every entry.
    return sorted(
        (e.get("name") or 0, e.get("ready") or 0, e.get("succeeded") or 0,
         e.get("failed") or 0, e.get("active") or 0, e.get("suspended") or 0,
         tuple(e.get("jobRestarts") or ()), tuple(e.get("jobRestartsCountTowardsMax") or ()))
        for e in entries)


def statuses_equal(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> bool:
    """Order-insensitive comparison, as upstream's equality check."""
    # Equal lists normalize alike: the steady pass (nothing changed) needs no sorting.
    if old == new:
        return True
    return len(old) == len(new) and _normalized(old) == _normalized(new)


def by_name(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in entries}
