"""Stale-Job recreation (jobset_controller.go@4f0cbded, scheduling.go@51c2c13c
schedulingJobsNeedRecreation).

``spec.scheduling`` may change while a JobSet is suspended, but a Job's pod template may not:
its pods would keep joining the PodGroup of the old configuration, which was deleted with the
suspend. So when the JobSet runs again (not suspended), if any active Job's
``scheduling.k8s.io/group-template-name`` annotation, or its pod template's
``schedulingGroup.podGroupName``, differs from what the current configuration computes for that
Job, every active Job is deleted (Foreground, as every JobSet delete) and the pass ends; the
next one recreates them from the new configuration. A Job whose template has no
``schedulingGroup`` at all (an API server with the GenericWorkload gate off strips it) is judged
by its annotation alone: recreating it would be stripped again, forever. A Job without its
replicated Job's name or a numeric index label cannot be placed, and counts as stale.
"""

from __future__ import annotations

from decider.core import constants as c
from decider.core.deletion import delete_jobs
from decider.core.gang.job_facts import GROUP_TEMPLATE_ANNOTATION
from decider.core.gang.model import GangPlan
from decider.core.model import ObservedJob
from decider.core.state import PassState


def _stale(job: ObservedJob, jobset: str, plan: GangPlan) -> str | None:
    """Why this Job no longer matches the configuration, or None."""
    rjob = job.labels.get(c.REPLICATED_JOB_NAME)
    index = job.labels.get(c.JOB_INDEX, "")
    if rjob is None:
        return f"it has no {c.REPLICATED_JOB_NAME} label"
    if not index.isdigit():
        return f"its {c.JOB_INDEX} label is not an index"
    name = f"{jobset}-{rjob}-{int(index)}"
    template = (plan.job_annotations.get(name) or {}).get(GROUP_TEMPLATE_ANNOTATION)
    if template is None or job.annotations.get(GROUP_TEMPLATE_ANNOTATION) != template:
        return (f"its {GROUP_TEMPLATE_ANNOTATION} is "
                f"{job.annotations.get(GROUP_TEMPLATE_ANNOTATION)!r}, the configuration says "
                f"{template!r}")
    pt = job.pod_template
    if pt is None or not pt.scheduling_group:
        return None
    patch = plan.pod_template_patches.get(name) or {}
    wanted = ((patch.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    if pt.pod_group_name is None or pt.pod_group_name != wanted:
        return f"its pods join PodGroup {pt.pod_group_name!r}, the configuration says {wanted!r}"
    return None


def recreate(st: PassState, active: list[ObservedJob], plan: GangPlan | None) -> bool:
    """Delete every active Job when one is stale; True when the pass must end here."""
    if plan is None or not plan.upstream or st.js.suspend:
        return False
    why = next(((job.name, reason) for job in active
                if (reason := _stale(job, st.js.name, plan)) is not None), None)
    if why is None:
        return False
    st.explain(f"job {why[0]} was made for an earlier spec.scheduling ({why[1]}): its Jobs "
               "are recreated on the next pass with the current Workload and PodGroups")
    delete_jobs(st, active, "it was made for an earlier spec.scheduling")
    return True


__all__ = ["recreate"]
