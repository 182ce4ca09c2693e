"""Gang scheduling: Workload/PodGroup objects for Jobs and JobSets, every API generation.

Pure: inputs are plain dicts as ``kubectl get -o json`` prints them; no I/O, no clock.
See ``docs/gang.md`` for the modes, the API generations and the upstream disagreements.
"""

from decider.core.gang.model import GangPlan, Group, OwnershipConflict, PodSetInfo
from decider.core.gang.plan import (
    API_VERSIONS,
    KUBERNETES,
    NEWEST,
    TARGETS,
    jobset_gang,
    plan_gang,
    validate_job_update,
    validate_jobset_scheduling,
)
from decider.core.gang.pod_sets import pod_sets
from decider.core.gang.targets import GangTarget, register

__all__ = [
    "API_VERSIONS",
    "KUBERNETES",
    "NEWEST",
    "TARGETS",
    "GangPlan",
    "GangTarget",
    "Group",
    "OwnershipConflict",
    "PodSetInfo",
    "jobset_gang",
    "plan_gang",
    "pod_sets",
    "register",
    "validate_job_update",
    "validate_jobset_scheduling",
]
