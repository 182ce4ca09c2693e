"""Deleting child Jobs, as upstream's deleteJobs: in the foreground, each named with its UID,
skipping those already being deleted."""

from __future__ import annotations

from decider.core import constants as c
from decider.core.model import Action, ObservedJob
from decider.core.state import PassState


def delete_jobs(st: PassState, jobs: list[ObservedJob], why: str) -> None:
    deleted = [job for job in jobs if not job.deletion_timestamp]
    namespace = st.js.namespace
    for job in deleted:
        st.actions.append(Action(type="DeleteJob", name=job.name, namespace=namespace,
                                 api_version="batch/v1", kind="Job", uid=job.uid,
                                 propagation_policy=c.FOREGROUND, reason=why))
    if deleted:
        st.explain(f"delete {len(deleted)} job(s): {why}")
