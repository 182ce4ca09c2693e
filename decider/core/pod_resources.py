"""Container resources mutable while suspended (KEP-1150; gate
MutablePodResourcesForSuspendedJobSets; upstream #1273 @7659f19a, open).

A queue such as Kueue (or DWS) may right-size a suspended JobSet's pods: the webhook lets
containers[].resources.{requests,limits} and initContainers' change while the JobSet is (or is
being) suspended (decider/core/admission/update.py), and a resume writes them into each child
Job, matched by container name (upstream mergeContainerResources). resources.claims never
changes. The API server takes the new resources only with its own
MutablePodResourcesForSuspendedJobs gate; when it refuses, upstream records the Warning event
FailedResourcePropagation on the JobSet: the plan's ResumeJob carries it as the event to record
on failure (Action.on_failure), for whoever applies the plan.
"""

from __future__ import annotations

from typing import Any

from decider.core import constants as c
from decider.core.model import Event, ObservedJob


def merged(job_containers: list[Any] | None, template_containers: Any) -> list[Any] | None:
    """The Job's containers with each one's requests and limits replaced by those of the
    template's container of the same name (none there: none here); None when nothing changes
    (or the Job's containers were not sent)."""
    if not job_containers:
        return None
    by_name: dict[str, dict[str, Any]] = {}
    for container in template_containers or ():
        if isinstance(container, dict) and isinstance(container.get("name"), str):
            by_name[container["name"]] = container.get("resources") or {}
    out: list[Any] = []
    changed = False
    for container in job_containers:
        if not isinstance(container, dict) or container.get("name") not in by_name:
            out.append(container)
            continue
        want = by_name[container["name"]]
        have = container.get("resources") or {}
        resources = {k: v for k, v in have.items() if k not in ("requests", "limits")}
        for key in ("requests", "limits"):
            if want.get(key):
                resources[key] = want[key]
            if (have.get(key) or {}) != (want.get(key) or {}):
                changed = True
        out.append({**container, "resources": resources})
    return out if changed else None


def resume_changes(job: ObservedJob, pod_template: dict[str, Any]) -> dict[str, Any]:
    """The pod spec fields a resume rewrites for the replicated Job's `pod_template`."""
    spec = pod_template.get("spec") or {}
    current = job.pod_template
    if current is None:
        return {}
    out: dict[str, Any] = {}
    for key, have in (("containers", current.containers),
                      ("initContainers", current.init_containers)):
        new = merged(have, spec.get(key))
        if new is not None:
            out[key] = new
    return out


def failure_event(job_name: str) -> Event:
    return Event(type=c.WARNING, reason=c.REASON_FAILED_RESOURCE_PROPAGATION,
                 message=c.MSG_FAILED_RESOURCE_PROPAGATION.format(job_name))
