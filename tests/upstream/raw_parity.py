"""Every upstream table, decided both ways: typed summaries and whole Kubernetes objects.

The tables call `run()` with the core's own types. Here those are turned back into the objects
the API server would serve (a Job, a Service, a Pod), and one request is built from them with
the Python client's typed summaries, another with the objects sent whole (`observed_json`); the
two answers must be the same bytes, or the same error. The table's own assertions then check
the plan as before, so each row holds the core to upstream and the two request forms to each
other.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any

from decider.contract import convert
from decider.core.errors import FieldError, InvalidInput, TooLarge
from decider.core.model import ObservedJob, ObservedObject, ObservedPod, Plan
from decider_client import observe
from support.builders import NOW


def job_object(job: ObservedJob) -> dict[str, Any]:
    """The batch/v1 Job whose summary is `job`."""
    meta: dict[str, Any] = {"name": job.name, "labels": dict(job.labels),
                            "annotations": dict(job.annotations)}
    for key, value in (("uid", job.uid), ("creationTimestamp", job.creation_timestamp),
                       ("deletionTimestamp", job.deletion_timestamp),
                       ("resourceVersion", job.resource_version)):
        if value:
            meta[key] = value
    if job.controller_uid:
        meta["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                    "name": "owner", "uid": job.controller_uid,
                                    "controller": True}]
    spec: dict[str, Any] = {}
    for key in ("suspend", "parallelism", "completions"):
        if getattr(job, key) is not None:
            spec[key] = getattr(job, key)
    pt = job.pod_template
    if pt is not None:
        spec["template"] = {
            "metadata": {"labels": dict(pt.labels), "annotations": dict(pt.annotations)},
            "spec": {"nodeSelector": dict(pt.node_selector),
                     "tolerations": [t.to_dict() for t in pt.tolerations],
                     "schedulingGates": [{"name": g} for g in pt.scheduling_gates]}}
    status: dict[str, Any] = {
        "active": job.active, "ready": job.ready, "succeeded": job.succeeded,
        "failed": job.failed,
        "conditions": [{"type": cd.type, "status": cd.status, "reason": cd.reason,
                        "message": cd.message, "lastTransitionTime": cd.last_transition_time}
                       for cd in job.conditions]}
    if job.start_time:
        status["startTime"] = job.start_time
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec,
            "status": status}


def other_object(obj: ObservedObject) -> dict[str, Any]:
    if obj.obj is not None:
        return copy.deepcopy(obj.obj)
    meta: dict[str, Any] = {"name": obj.name}
    if obj.uid:
        meta["uid"] = obj.uid
    if obj.controller_uid:
        meta["ownerReferences"] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                    "name": "owner", "uid": obj.controller_uid,
                                    "controller": True}]
    return {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": meta}


def pod_object(pod: ObservedPod, jobset: dict[str, Any]) -> dict[str, Any]:
    """The pod, labelled with the JobSet's name as the Job controller's pods of its Jobs are
    (a request sends only those, summarize.pod_of)."""
    labels = {"jobset.sigs.k8s.io/jobset-name": jobset["metadata"]["name"]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod.name, "annotations": dict(pod.annotations),
                         "labels": labels},
            "status": {"phase": pod.phase,
                       "containerStatuses": [{"name": "c",
                                              "restartCount": pod.max_container_restarts}]}}


# An error about an observed entry names it as the client sent it: a typed field
# (`jobs[0].start_time`), or the field of the object sent whole
# (`observed_json[1].status.startTime`, tests/test_observed_json_paths.py).
_ENTRY_FIELDS = ("jobs[", "pods[", "objects[", "observed_json[")


def _answer(req: Any) -> bytes | str:
    try:
        return convert.decide_response(req).SerializeToString(deterministic=True)
    except InvalidInput as exc:
        # The same check fails both ways, in the same words; only such a field differs.
        return "InvalidInput: " + "; ".join(
            str(FieldError("observed entry" if e.field.startswith(_ENTRY_FIELDS) else e.field,
                           e.message)) for e in exc.errors)
    except TooLarge as exc:
        return f"TooLarge: {exc}"


def check_both_ways(js: dict[str, Any], jobs: Any = (), *, objects: Any = (),
                    gates: dict[str, bool] | None = None, now: datetime = NOW,
                    pods: Any = (), controller: str = "") -> None:
    owned = [*(job_object(j) for j in jobs), *(other_object(o) for o in objects),
             *(pod_object(p, js) for p in pods)]
    args = (copy.deepcopy(js), owned, now)
    kwargs = {"controller_name": controller, "feature_gates": gates or {}}
    typed = _answer(observe.build_decide_request(*args, **kwargs))
    raw = _answer(observe.build_raw_decide_request(*args, **kwargs))
    assert raw == typed, "raw objects and typed summaries decided differently"


def checked(run: Callable[..., Plan]) -> Callable[..., Plan]:
    """`run`, with the same input also decided both ways through the contract."""

    def both(js: dict[str, Any], jobs: Any = (), **kwargs: Any) -> Plan:
        check_both_ways(js, list(jobs), **kwargs)
        return run(js, jobs, **kwargs)

    return both
