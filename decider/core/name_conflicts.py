"""A child Job's name held by a Job this JobSet does not control.

Typically a leftover of an earlier JobSet of the same name, still being deleted. Upstream's
createJobs tries the create anyway and gets AlreadyExists (its TODO(#18): "Deal with the case where
the job exists but is not owned by the jobset"); reconcileReplicatedJobs then records a
`JobCreationFailed` Warning event at once and returns the error, so the rest of the pass (later
replicated Jobs, suspend/resume, in-place restart) and the status write do not happen, and
controller-runtime retries with exponential backoff. The other creates of the same replicated Job
run in parallel with the failing one, so they are made.

The caller shows such a Job by observing it: a Job of the child's name whose controller owner
UID is not the JobSet's (or that has no controller at all).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from decider.core import constants as c
from decider.core.model import Event, ObservedJob
from decider.core.state import PassState, parse_time

JOB_CREATION_FAILED = "JobCreationFailed"
# controller-runtime's default per-item backoff ends at 1000 s; the first retry waits 1 s, so a
# conflict that lasts costs a pass and an event a second at most, never a hot loop.
MAX_BACKOFF = timedelta(seconds=1000)
MIN_BACKOFF = timedelta(seconds=1)


def foreign_jobs(jobs: Iterable[ObservedJob], uid: str) -> dict[str, ObservedJob]:
    """Observed Jobs not controlled by the JobSet, by name."""
    return {job.name: job for job in jobs if job.controller_uid != uid}


def creation_failed_event(names: list[str]) -> Event:
    """Upstream joins one error per failed create (errors.Join: newline-separated); the API
    server's AlreadyExists message names the resource as `jobs.batch`."""
    message = "\n".join(
        f'job "{name}" creation failed with error: jobs.batch "{name}" already exists'
        for name in names)
    return Event(type=c.WARNING, reason=JOB_CREATION_FAILED, message=message)


def backoff(st: PassState, held: list[ObservedJob]) -> timedelta:
    """The delay before the next pass, as an exponential backoff without memory.

    Upstream's retries double their delay after each failure. Having no memory of earlier
    passes, we wait as long as the conflict has already lasted, which doubles the interval in
    the same way: it began when the later of the JobSet and the foreign Job was created (at
    least 1 s, at most upstream's 1000 s). The foreign Job going away wakes nobody up: its
    owner is not this JobSet, so only this requeue brings the pass back."""
    began = [parse_time(str((st.js.raw.get("metadata") or {}).get("creationTimestamp") or ""))]
    began += [parse_time(job.creation_timestamp) for job in held]
    known = [t for t in began if t is not None]
    lasted = st.now - max(known) if known else timedelta(0)
    return min(MAX_BACKOFF, max(MIN_BACKOFF, lasted))
