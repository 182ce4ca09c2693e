"""Which updates of a Job can change what the decider decides.

A pass sends the decider each Job's typed summary (decider_api.summarize.job_summary), never the
Job itself. The Job controller rewrites a running Job many times that the summary does not see:
its pods' finalizers counted (status.uncountedTerminatedPods), status.terminating, managedFields,
finalizers, each bumping the resourceVersion. On a real control plane 1,000 JobSets finishing
gave the shim 7,500 passes, six in seven deciding "nothing to do" while they competed for the
same cores with the Job controller they waited for. An update whose summary is the one before
(resourceVersion aside) would be decided as the last pass decided it: it wakes no pass. What the
summary does carry (counts, conditions, labels, annotations, deletion, suspend, the template,
the controller) wakes one as before; so do creates and deletes.
"""

from __future__ import annotations

from typing import Any

from decider_api.summarize import ObservationError, job_summary

Obj = dict[str, Any]


def same_for_decider(old: Obj | None, new: Obj) -> bool:
    """True when the decider reads the same of this Job before and after the update."""
    if old is None:
        return False
    try:
        # containers=True: a suspended Job's containers count too (a resume rewrites them).
        before = job_summary(old, containers=True)
        after = job_summary(new, containers=True)
    except ObservationError:
        return False  # a pass reports what is wrong with it
    before.ClearField("resource_version")
    after.ClearField("resource_version")
    return before == after
