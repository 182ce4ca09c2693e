"""DependsOn (KEP-672): a replicated Job starts only when each dependency reached its status.

Ready: every replica of the dependency is ready, succeeded or failed. Complete: every replica
succeeded. Several items are ANDed. `replicas` only knows replicated Jobs visited so far, so a
dependency on a later (or unknown) replicated Job is never met, as upstream.
"""

from __future__ import annotations

from typing import Any

from decider.core.jobset import ReplicatedJob


def dependencies_met(rjob: ReplicatedJob, replicas: dict[str, int],
                     statuses: dict[str, dict[str, Any]]) -> bool:
    for dep in rjob.depends_on:
        status = statuses.get(dep.name)
        if status is None:
            return False
        want = replicas.get(dep.name)
        if dep.status == "Complete" and want != status["succeeded"]:
            return False
        if dep.status == "Ready" and want != (
                status["failed"] + status["ready"] + status["succeeded"]):
            return False
    return True
