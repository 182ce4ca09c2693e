"""Timestamps in the input: RFC 3339, as metav1.Time reads and writes them.

A time the API server could never have written (`yesterday`, `2026-13-01T00:00:00Z`, no time
zone) is refused naming its field. Read leniently it would be a silent guess: a Failed condition
without a readable time sorts first when the pass picks the first failure, and a finished
JobSet's TTL would have no start.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from decider.core.errors import InvalidInput
from decider.core.model import ObservedJob

# Go's time.RFC3339 layout as time.Parse accepts it (metav1.Time's JSON): ASCII digits, an
# upper-case T and Z, a fraction of a second optional, the zone Z or an offset. A lower-case z
# or a non-ASCII digit is refused by the API server, and was read here as "no time" by one
# reader while another admitted it: a failure policy blamed the wrong Job.
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII)


def parse_rfc3339(value: str) -> datetime | None:
    """The instant an RFC 3339 time names, as Go's time.Parse(time.RFC3339) reads it (a fraction
    past microseconds is cut); None for anything it refuses, out-of-range fields included."""
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    head, dot, rest = text.partition(".")
    if dot:
        # fromisoformat takes at most 6 digits of fraction.
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = head + "." + rest[:min(digits, 6)].ljust(6, "0") + rest[digits:]
    try:
        return datetime.fromisoformat(text)
    except ValueError:  # month 13, hour 24, Feb 30
        return None


def is_rfc3339(value: str) -> bool:
    return parse_rfc3339(value) is not None


def check(value: object, field: str, seen: set[str] | None = None) -> None:
    """InvalidInput naming `field` unless `value` is empty or an RFC 3339 time."""
    if not value or not isinstance(value, str):
        return  # absent; a value of another type is the caller's type check
    if seen is not None and value in seen:
        return
    if not is_rfc3339(value):
        raise InvalidInput.at(field, f"{value!r} is not an RFC 3339 time "
                                     "(e.g. 2026-01-01T00:00:00Z)")
    if seen is not None:
        seen.add(value)


def check_jobs(jobs: Iterable[ObservedJob]) -> None:
    """Every time of the observed Jobs, named as the request names them."""
    jobs = jobs if isinstance(jobs, list) else list(jobs)
    # Jobs created together share their times: each distinct value is parsed once. Only when
    # one is wrong are the Jobs walked in order, to name the first wrong field.
    try:
        values = {job.creation_timestamp for job in jobs}
        values.update([job.deletion_timestamp for job in jobs])
        values.update([job.start_time for job in jobs])
        values.update([cond.last_transition_time for job in jobs for cond in job.conditions])
    except TypeError:  # an unhashable value: the walk below reports or skips it
        values = None
    if values is not None and all(
            not value or not isinstance(value, str) or is_rfc3339(value) for value in values):
        return
    seen: set[str] = set()
    for i, job in enumerate(jobs):
        check(job.creation_timestamp, f"jobs[{i}].creation_timestamp", seen)
        check(job.deletion_timestamp, f"jobs[{i}].deletion_timestamp", seen)
        check(job.start_time, f"jobs[{i}].start_time", seen)
        for k, cond in enumerate(job.conditions):
            check(cond.last_transition_time, f"jobs[{i}].conditions[{k}].last_transition_time",
                  seen)
