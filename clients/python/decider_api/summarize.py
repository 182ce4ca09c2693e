"""Kubernetes objects as the API server serves them -> the contract's typed observations.

One summarizer for every side of the contract: the Python client builds a DecideRequest's
`jobs`, `pods` and `objects` with it, and the server builds the same messages from the objects a
client in any language sends whole (`DecideRequest.observed_json`), so both forms of a request
get the same answer, byte for byte.

It imports the generated contract only, never the decider's core: the client may import it.
"""

from __future__ import annotations

import json
from typing import Any

from decider_api.observed_shape import ObservationError, check_observed
from decider_api.v1 import decider_pb2 as pb

__all__ = ["JOBSET_NAME_LABEL", "JOB", "OTHER", "POD", "ObservationError", "add_observed",
           "job_summary", "kind_of", "object_summary", "pod_of", "pod_summary",
           "unlisted_pods_sentence", "wants_containers"]


def _controller_uid(meta: dict[str, Any]) -> str:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") is True:
            return ref.get("uid") or ""
    return ""


def _conditions(value: list[dict[str, Any]] | None) -> list[pb.Condition]:
    return [pb.Condition(**{attr: cond.get(key) or "" for attr, key in (
        ("type", "type"), ("status", "status"), ("reason", "reason"), ("message", "message"),
        ("last_transition_time", "lastTransitionTime"))}) for cond in value or []]


def _str_map(value: dict[str, str] | None) -> dict[str, str]:
    return value or {}


def _pod_template(template: dict[str, Any]) -> pb.PodTemplateSummary:
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    tolerations = []
    for t in spec.get("tolerations") or []:
        tol = pb.Toleration(key=t.get("key") or "", operator=t.get("operator") or "",
                            value=t.get("value") or "", effect=t.get("effect") or "")
        if t.get("tolerationSeconds") is not None:
            tol.toleration_seconds = t["tolerationSeconds"]
        tolerations.append(tol)
    group = None
    if spec.get("schedulingGroup") is not None:
        group = pb.PodSchedulingGroup()
        if spec["schedulingGroup"].get("podGroupName") is not None:
            group.pod_group_name = spec["schedulingGroup"]["podGroupName"]
    return pb.PodTemplateSummary(
        scheduling_group=group,
        labels=_str_map(meta.get("labels")),
        annotations=_str_map(meta.get("annotations")),
        node_selector=_str_map(spec.get("nodeSelector")),
        tolerations=tolerations,
        scheduling_gates=[g.get("name") or "" for g in spec.get("schedulingGates") or []],
    )


# The gate under which a resume writes container resources (KEP-1150, upstream #1273).
MUTABLE_POD_RESOURCES = "MutablePodResourcesForSuspendedJobSets"


def wants_containers(jobset: Any, feature_gates: Any) -> bool:
    """Whether a decision may read suspended Jobs' containers: only a resume under
    MutablePodResourcesForSuspendedJobSets rewrites them, and only a JobSet that is not
    suspended resumes. A queued (suspended) JobSet of thousands of Jobs sends none of it."""
    if not (feature_gates or {}).get(MUTABLE_POD_RESOURCES):
        return False
    spec = jobset.get("spec") if isinstance(jobset, dict) else None
    return not (isinstance(spec, dict) and spec.get("suspend") is True)


def job_summary(job: dict[str, Any], field: str = "job",
                containers: bool = False) -> pb.ObservedJob:
    """The typed summary of a batch/v1 Job that a decision reads; `containers`: a suspended
    Job's containers too (wants_containers). Its types are checked first, by the one check of
    every observed object (observed_shape.py)."""
    check_observed(job, field, "Job")
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    out = pb.ObservedJob(
        name=meta.get("name") or "",
        uid=meta.get("uid") or "",
        controller_uid=_controller_uid(meta),
        labels=_str_map(meta.get("labels")),
        annotations=_str_map(meta.get("annotations")),
        active=status.get("active") or 0,
        ready=status.get("ready") or 0,
        succeeded=status.get("succeeded") or 0,
        failed=status.get("failed") or 0,
        conditions=_conditions(status.get("conditions")),
        creation_timestamp=meta.get("creationTimestamp") or "",
        deletion_timestamp=meta.get("deletionTimestamp") or "",
        start_time=status.get("startTime") or "",
        pod_template=_pod_template(spec.get("template") or {}),
        resource_version=meta.get("resourceVersion") or "",
    )
    if not out.name:
        raise ObservationError(f"{field}.metadata.name", "Required value")
    suspend = spec.get("suspend")
    if suspend is not None:
        out.suspend = suspend
    if suspend is True and containers:
        # Only a suspended Job is resumed, and only a resume rewrites its containers'
        # resources (MutablePodResourcesForSuspendedJobSets): running Jobs send none of it.
        pod_spec = (spec.get("template") or {}).get("spec") or {}
        for key, attr in (("containers", "containers_json"),
                          ("initContainers", "init_containers_json")):
            value = pod_spec.get(key)
            if value is not None:
                setattr(out.pod_template, attr, json.dumps(value, separators=(",", ":"),
                                                           sort_keys=True))
    for key in ("parallelism", "completions"):
        if spec.get(key) is not None:
            setattr(out, key, spec[key])
    return out


def pod_summary(pod: dict[str, Any], field: str = "pod") -> pb.ObservedPod:
    check_observed(pod, field, "Pod")
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    restarts = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            restarts = max(restarts, cs.get("restartCount") or 0)
    return pb.ObservedPod(
        name=meta.get("name") or "",
        phase=status.get("phase") or "",
        annotations=_str_map(meta.get("annotations")),
        max_container_restarts=restarts,
    )


def object_summary(obj: dict[str, Any], field: str = "object") -> pb.ObservedObject:
    check_observed(obj, field)
    meta = obj.get("metadata") or {}
    return pb.ObservedObject(
        api_version=obj.get("apiVersion") or "",
        kind=obj.get("kind") or "",
        name=meta.get("name") or "",
        uid=meta.get("uid") or "",
        controller_uid=_controller_uid(meta),
        object_json=json.dumps(obj, separators=(",", ":"), sort_keys=True),
    )


JOB, POD, OTHER = "Job", "Pod", "other"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def _name_and_namespace(obj: Any) -> tuple[Any, str]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return meta.get("name"), meta.get("namespace") or "default"


def pod_of(pod: dict[str, Any], jobset: Any) -> bool:
    """Whether upstream lists `pod` among the JobSet's pods (getAssociatedPods: the pods of its
    namespace whose `jobset.sigs.k8s.io/jobset-name` label is its name). A pod of no namespace
    (written by hand) is taken to be in the JobSet's. Its types are checked (observed_shape)."""
    name, namespace = _name_and_namespace(jobset)
    meta = pod.get("metadata") or {}
    return (meta.get("labels") or {}).get(JOBSET_NAME_LABEL) == name and \
        (meta.get("namespace") or namespace) == namespace


def unlisted_pods_sentence(names: list[str], jobset: Any) -> str:
    """What the plan says of the pods pod_of left out."""
    name, _ = _name_and_namespace(jobset)
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (f"{len(names)} pod(s) observed beside JobSet {name} ({shown}) do not carry "
            f"{JOBSET_NAME_LABEL}={name} in its namespace: not counted, as upstream lists a "
            "JobSet's pods by that label")


def kind_of(obj: dict[str, Any]) -> str:
    """Which typed list an observed object goes to: JOB (batch/v1 Jobs), POD, or OTHER (the
    headless Service, PVCs, Workloads, PodGroups: kept whole)."""
    kind = obj.get("kind")
    if kind == "Job" and str(obj.get("apiVersion", "")).startswith("batch/"):
        return JOB
    if kind == "Pod":
        return POD
    return OTHER


def add_observed(req: pb.DecideRequest, obj: Any, field: str,
                 containers: bool = False, jobset: Any = None) -> bool:
    """Summarize one observed object into the request's typed list for its kind. jobset: the
    JobSet the request is about; a pod that is not its own (pod_of) is left out, and False
    returned."""
    if not isinstance(obj, dict):
        raise ObservationError(field, "must be a JSON object")
    kind = kind_of(obj)
    if kind == JOB:
        req.jobs.append(job_summary(obj, field, containers))
    elif kind == POD:
        summary = pod_summary(obj, field)
        if jobset is not None and not pod_of(obj, jobset):
            return False
        req.pods.append(summary)
    else:
        req.objects.append(object_summary(obj, field))
    return True
