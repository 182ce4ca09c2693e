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

from decider_api.v1 import decider_pb2 as pb


class ObservationError(ValueError):
    """An object could not be turned into a request; `field` names where."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


def _map(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ObservationError(field, "must be an object")
    return value


def _str_map(value: Any, field: str) -> dict[str, str]:
    out = _map(value, field)
    for k, v in out.items():
        if not isinstance(v, str):
            raise ObservationError(f"{field}[{k}]", "must be a string")
    return out


def _int(value: Any, field: str, default: int | None = 0) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ObservationError(field, "must be an integer")
    if not -(2**31) <= value < 2**31:
        raise ObservationError(field, "is out of the int32 range")
    return value


def _str(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ObservationError(field, "must be a string")
    return value


def _controller_uid(meta: dict[str, Any], field: str) -> str:
    refs = meta.get("ownerReferences")
    if refs is None:
        return ""
    if not isinstance(refs, list):
        raise ObservationError(f"{field}.ownerReferences", "must be a list")
    for i, ref in enumerate(refs):
        ref = _map(ref, f"{field}.ownerReferences[{i}]")
        if ref.get("controller") is True:
            return _str(ref.get("uid"), f"{field}.ownerReferences[{i}].uid")
    return ""


def _conditions(value: Any, field: str) -> list[pb.Condition]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ObservationError(field, "must be a list")
    out = []
    for i, cond in enumerate(value):
        cond = _map(cond, f"{field}[{i}]")
        out.append(pb.Condition(**{
            attr: _str(cond.get(key), f"{field}[{i}].{key}") for attr, key in (
                ("type", "type"), ("status", "status"), ("reason", "reason"),
                ("message", "message"), ("last_transition_time", "lastTransitionTime"))}))
    return out


def _pod_template(template: dict[str, Any], field: str) -> pb.PodTemplateSummary:
    meta = _map(template.get("metadata"), f"{field}.metadata")
    spec = _map(template.get("spec"), f"{field}.spec")
    tolerations = []
    raw_tolerations = spec.get("tolerations") or []
    if not isinstance(raw_tolerations, list):
        raise ObservationError(f"{field}.spec.tolerations", "must be a list")
    for i, t in enumerate(raw_tolerations):
        t = _map(t, f"{field}.spec.tolerations[{i}]")
        tol = pb.Toleration(
            key=_str(t.get("key"), f"{field}.spec.tolerations[{i}].key"),
            operator=_str(t.get("operator"), f"{field}.spec.tolerations[{i}].operator"),
            value=_str(t.get("value"), f"{field}.spec.tolerations[{i}].value"),
            effect=_str(t.get("effect"), f"{field}.spec.tolerations[{i}].effect"))
        seconds = t.get("tolerationSeconds")
        if seconds is not None:
            # int64 in the Kubernetes API, so no int32 bound here.
            if isinstance(seconds, bool) or not isinstance(seconds, int):
                raise ObservationError(f"{field}.spec.tolerations[{i}].tolerationSeconds",
                                       "must be an integer")
            tol.toleration_seconds = seconds
        tolerations.append(tol)
    gates = spec.get("schedulingGates") or []
    if not isinstance(gates, list):
        raise ObservationError(f"{field}.spec.schedulingGates", "must be a list")
    group = None
    if spec.get("schedulingGroup") is not None:
        raw = _map(spec["schedulingGroup"], f"{field}.spec.schedulingGroup")
        group = pb.PodSchedulingGroup()
        if raw.get("podGroupName") is not None:
            group.pod_group_name = _str(raw["podGroupName"],
                                        f"{field}.spec.schedulingGroup.podGroupName")
    return pb.PodTemplateSummary(
        scheduling_group=group,
        labels=_str_map(meta.get("labels"), f"{field}.metadata.labels"),
        annotations=_str_map(meta.get("annotations"), f"{field}.metadata.annotations"),
        node_selector=_str_map(spec.get("nodeSelector"), f"{field}.spec.nodeSelector"),
        tolerations=tolerations,
        scheduling_gates=[_str(_map(g, f"{field}.spec.schedulingGates[{i}]").get("name"),
                               f"{field}.spec.schedulingGates[{i}].name")
                          for i, g in enumerate(gates)],
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
    Job's containers too (wants_containers)."""
    meta = _map(job.get("metadata"), f"{field}.metadata")
    spec = _map(job.get("spec"), f"{field}.spec")
    status = _map(job.get("status"), f"{field}.status")
    out = pb.ObservedJob(
        name=_str(meta.get("name"), f"{field}.metadata.name"),
        uid=_str(meta.get("uid"), f"{field}.metadata.uid"),
        controller_uid=_controller_uid(meta, f"{field}.metadata"),
        labels=_str_map(meta.get("labels"), f"{field}.metadata.labels"),
        annotations=_str_map(meta.get("annotations"), f"{field}.metadata.annotations"),
        active=_int(status.get("active"), f"{field}.status.active"),
        ready=_int(status.get("ready"), f"{field}.status.ready"),
        succeeded=_int(status.get("succeeded"), f"{field}.status.succeeded"),
        failed=_int(status.get("failed"), f"{field}.status.failed"),
        conditions=_conditions(status.get("conditions"), f"{field}.status.conditions"),
        creation_timestamp=_str(meta.get("creationTimestamp"), f"{field}.metadata"
                                ".creationTimestamp"),
        deletion_timestamp=_str(meta.get("deletionTimestamp"), f"{field}.metadata"
                                ".deletionTimestamp"),
        start_time=_str(status.get("startTime"), f"{field}.status.startTime"),
        pod_template=_pod_template(_map(spec.get("template"), f"{field}.spec.template"),
                                   f"{field}.spec.template"),
        resource_version=_str(meta.get("resourceVersion"), f"{field}.metadata.resourceVersion"),
    )
    if not out.name:
        raise ObservationError(f"{field}.metadata.name", "Required value")
    suspend = spec.get("suspend")
    if suspend is not None:
        if not isinstance(suspend, bool):
            raise ObservationError(f"{field}.spec.suspend", "must be a boolean")
        out.suspend = suspend
    if suspend is True and containers:
        # Only a suspended Job is resumed, and only a resume rewrites its containers'
        # resources (MutablePodResourcesForSuspendedJobSets): running Jobs send none of it.
        pod_spec = _map(_map(spec.get("template"), f"{field}.spec.template").get("spec"),
                        f"{field}.spec.template.spec")
        for key, attr in (("containers", "containers_json"),
                          ("initContainers", "init_containers_json")):
            value = pod_spec.get(key)
            if value is None:
                continue
            if not isinstance(value, list):
                raise ObservationError(f"{field}.spec.template.spec.{key}", "must be a list")
            for i, item in enumerate(value):
                _map(item, f"{field}.spec.template.spec.{key}[{i}]")
                if item is None:
                    raise ObservationError(f"{field}.spec.template.spec.{key}[{i}]",
                                           "must be an object")
            setattr(out.pod_template, attr, json.dumps(value, separators=(",", ":"),
                                                       sort_keys=True))
    for key in ("parallelism", "completions"):
        value = _int(spec.get(key), f"{field}.spec.{key}", None)
        if value is not None:
            setattr(out, key, value)
    return out


def pod_summary(pod: dict[str, Any], field: str = "pod") -> pb.ObservedPod:
    meta = _map(pod.get("metadata"), f"{field}.metadata")
    status = _map(pod.get("status"), f"{field}.status")
    restarts = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        statuses = status.get(key) or []
        if not isinstance(statuses, list):
            raise ObservationError(f"{field}.status.{key}", "must be a list")
        for i, cs in enumerate(statuses):
            cs = _map(cs, f"{field}.status.{key}[{i}]")
            restarts = max(restarts, _int(cs.get("restartCount"),
                                          f"{field}.status.{key}[{i}].restartCount") or 0)
    return pb.ObservedPod(
        name=_str(meta.get("name"), f"{field}.metadata.name"),
        phase=_str(status.get("phase"), f"{field}.status.phase"),
        annotations=_str_map(meta.get("annotations"), f"{field}.metadata.annotations"),
        max_container_restarts=restarts,
    )


def object_summary(obj: dict[str, Any], field: str = "object") -> pb.ObservedObject:
    meta = _map(obj.get("metadata"), f"{field}.metadata")
    return pb.ObservedObject(
        api_version=_str(obj.get("apiVersion"), f"{field}.apiVersion"),
        kind=_str(obj.get("kind"), f"{field}.kind"),
        name=_str(meta.get("name"), f"{field}.metadata.name"),
        uid=_str(meta.get("uid"), f"{field}.metadata.uid"),
        controller_uid=_controller_uid(meta, f"{field}.metadata"),
        object_json=json.dumps(obj, separators=(",", ":"), sort_keys=True),
    )


JOB, POD, OTHER = "Job", "Pod", "other"


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
                 containers: bool = False) -> None:
    """Summarize one observed object into the request's typed list for its kind."""
    if not isinstance(obj, dict):
        raise ObservationError(field, "must be a JSON object")
    kind = kind_of(obj)
    if kind == JOB:
        req.jobs.append(job_summary(obj, field, containers))
    elif kind == POD:
        req.pods.append(pod_summary(obj, field))
    else:
        req.objects.append(object_summary(obj, field))
