"""Small builders for Job and JobSet dicts shaped like ``kubectl get -o json`` output."""

from __future__ import annotations

import copy
from typing import Any

UID = "5f0a9c1e-7b2d-4c3e-9a8f-0123456789ab"


def job(
    name: str = "train",
    *,
    parallelism: int | None = 4,
    completions: int | None = 4,
    indexed: bool = True,
    uid: str = UID,
    namespace: str = "default",
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    spec["completionMode"] = "Indexed" if indexed else "NonIndexed"
    obj: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": spec,
    }
    for key, value in extra.items():
        if key == "owner":
            obj["metadata"]["ownerReferences"] = [value]
        elif key == "annotations":
            obj["metadata"]["annotations"] = value
        elif key == "status":
            obj["status"] = value
        elif key == "scheduling":
            spec["scheduling"] = value
        elif key == "scheduling_group":
            spec["template"]["spec"]["schedulingGroup"] = value
        else:
            spec[key] = value
    return obj


def rjob(
    name: str,
    replicas: int = 1,
    parallelism: int | None = 2,
    completions: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    out: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": spec}}
    if "depends_on" in extra:
        out["dependsOn"] = [{"name": extra["depends_on"], "status": "Ready"}]
    if "priority" in extra:
        spec["template"]["spec"]["priorityClassName"] = extra["priority"]
    if "scheduling_group" in extra:
        spec["template"]["spec"]["schedulingGroup"] = extra["scheduling_group"]
    return out


def jobset(
    *rjobs: dict[str, Any],
    name: str = "js",
    uid: str = "7d1e2f30-0000-4000-8000-00000000abcd",
    namespace: str = "default",
    mode: str | None = None,
    template: str | None = None,
    scheduling: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if mode is not None:
        annotations["jobset-decider.io/gang-policy"] = mode
    if template is not None:
        annotations["jobset-decider.io/workload-template"] = template
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"replicatedJobs": [copy.deepcopy(r) for r in rjobs]}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if extra.get("in_order"):
        spec["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    if extra.get("suspend"):
        spec["suspend"] = True
    obj: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": spec,
    }
    if "conditions" in extra:
        obj["status"] = {"conditions": extra["conditions"]}
    return obj


def owner(kind: str, name: str, uid: str = "owner-uid", api: str = "v1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": True}


def names_of(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"]["name"]) for o in objects]
