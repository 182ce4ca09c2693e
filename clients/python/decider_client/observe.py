"""Kubernetes objects -> DecideRequest.

Any client (the shim, the CLI, a scheduler) turns what it observed into the same request with
this module: the JobSet travels whole as JSON, child Jobs as typed summaries, pods as the few
fields the in-place restart reads, everything else (Service, PVC, Workload, PodGroup) whole.
The summaries come from `decider_api.summarize`, which the server also uses for objects
sent whole
(`observed_json`), so a client in another language may skip summarizing altogether.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from decider_api.summarize import (
    JOB,
    POD,
    ObservationError,
    job_summary,
    kind_of,
    object_summary,
    pod_of,
    pod_summary,
    wants_containers,
)
from decider_api.v1 import decider_pb2 as pb

__all__ = ["ObservationError", "build_decide_request", "build_plan_gang_request",
           "build_pod_sets_request", "build_raw_decide_request", "job_summary", "object_summary",
           "options", "pod_summary", "timestamp"]


def timestamp(now: datetime) -> Any:
    ts = pb.google_dot_protobuf_dot_timestamp__pb2.Timestamp()  # type: ignore[attr-defined]
    ts.FromDatetime(now.astimezone(UTC))
    return ts


def options(controller_name: str = "",
            feature_gates: Mapping[str, bool] | None = None,
            gang_api_version: str = "", gang_target: str = "") -> pb.Options:
    return pb.Options(controller_name=controller_name, feature_gates=dict(feature_gates or {}),
                      gang_api_version=gang_api_version, gang_target=gang_target)


def build_decide_request(jobset: dict[str, Any], owned: Iterable[dict[str, Any]],
                         now: datetime, controller_name: str = "",
                         feature_gates: Mapping[str, bool] | None = None,
                         gang_api_version: str = "",
                         gang_target: str = "") -> pb.DecideRequest:
    """Turn a JobSet and the objects around it into a DecideRequest.

    `owned` may hold Jobs, Pods, Services, PVCs, Workloads, PodGroups, as the API server serves
    them; the decider itself keeps only the Jobs the JobSet controls, and only the pods labelled
    with its name are sent (summarize.pod_of; the CLI says which were left out).
    """
    if not isinstance(jobset, dict):
        raise ObservationError("jobset", "must be an object")
    req = pb.DecideRequest(
        jobset_json=json.dumps(jobset, separators=(",", ":")),
        now=timestamp(now),
        options=options(controller_name, feature_gates, gang_api_version, gang_target),
    )
    containers = wants_containers(jobset, feature_gates)
    for obj in owned:
        if not isinstance(obj, dict):
            raise ObservationError("objects", "every object must be a JSON object")
        kind = kind_of(obj)
        if kind == JOB:
            req.jobs.append(job_summary(obj, f"jobs[{len(req.jobs)}]", containers))
        elif kind == POD:
            summary = pod_summary(obj, f"pods[{len(req.pods)}]")
            # Upstream lists a JobSet's pods by its jobset-name label (summarize.pod_of).
            if pod_of(obj, jobset):
                req.pods.append(summary)
        else:
            req.objects.append(object_summary(obj, f"objects[{len(req.objects)}]"))
    return req


def build_raw_decide_request(jobset: dict[str, Any], owned: Iterable[dict[str, Any]],
                             now: datetime, controller_name: str = "",
                             feature_gates: Mapping[str, bool] | None = None,
                             gang_api_version: str = "",
                             gang_target: str = "") -> pb.DecideRequest:
    """The same request with every observed object sent whole (`observed_json`), as a client
    in another language sends it: the decider summarizes them itself."""
    if not isinstance(jobset, dict):
        raise ObservationError("jobset", "must be an object")
    return pb.DecideRequest(
        jobset_json=json.dumps(jobset, separators=(",", ":")),
        now=timestamp(now),
        options=options(controller_name, feature_gates, gang_api_version, gang_target),
        observed_json=[json.dumps(obj, separators=(",", ":")) for obj in owned],
    )


def build_plan_gang_request(obj: dict[str, Any], existing: Iterable[dict[str, Any]] = (),
                            api_version: str = "", target: str = "",
                            feature_gates: Mapping[str, bool] | None = None
                            ) -> pb.PlanGangRequest:
    """A Job or JobSet and the Workloads/PodGroups that exist -> PlanGangRequest.

    Jobs and Pods among `existing` are left out: the gang plan never reads them.
    """
    if not isinstance(obj, dict):
        raise ObservationError("object", "must be an object")
    req = pb.PlanGangRequest(object_json=json.dumps(obj, separators=(",", ":")),
                             options=options(feature_gates=feature_gates,
                                             gang_api_version=api_version, gang_target=target))
    for other in existing:
        if not isinstance(other, dict):
            raise ObservationError("objects", "every object must be a JSON object")
        if other.get("kind") in ("Job", "Pod"):
            continue
        req.objects.append(object_summary(other, f"objects[{len(req.objects)}]"))
    return req


def build_pod_sets_request(obj: dict[str, Any], api_version: str = "",
                           feature_gates: Mapping[str, bool] | None = None) -> pb.PodSetsRequest:
    if not isinstance(obj, dict):
        raise ObservationError("object", "must be an object")
    return pb.PodSetsRequest(object_json=json.dumps(obj, separators=(",", ":")),
                             options=options(feature_gates=feature_gates,
                                             gang_api_version=api_version))
