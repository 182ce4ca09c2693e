"""Reading Kueue's objects and writing the check's state: pure functions over their JSON.

Kueue adds a `Pending` entry per AdmissionCheck of the ClusterQueue to a Workload's
`status.admissionChecks` once it reserves quota; a check controller answers the entries of the
checks whose `spec.controllerName` is its own, and only while the Workload holds its quota, is
neither finished nor evicted (as Kueue's own check controllers do). Its writes are server-side
applies of its entry alone (the list is a map keyed by name), guarded by the Workload's
resourceVersion, so a Workload Kueue changed meanwhile is read again, not overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shim.kueue_check.verdict import PENDING, Verdict

Obj = dict[str, Any]

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
ACTIVE = "Active"


def _condition(obj: Obj, kind: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def _true(obj: Obj, kind: str) -> bool:
    cond = _condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def ours(admission_checks: Iterable[Obj], controller_name: str) -> set[str]:
    """The AdmissionChecks this controller answers."""
    return {str(ac["metadata"]["name"]) for ac in admission_checks
            if (ac.get("spec") or {}).get("controllerName") == controller_name}


def pending(workload: Obj, checks: set[str]) -> list[str]:
    """Our checks that wait for an answer on this Workload, in its order."""
    if not _true(workload, "QuotaReserved") or _true(workload, "Finished") \
            or _true(workload, "Evicted"):
        return []
    return [str(s["name"]) for s in (workload.get("status") or {}).get("admissionChecks") or []
            if s.get("name") in checks and s.get("state") == PENDING]


def jobset_owner(workload: Obj) -> str | None:
    """The name of the JobSet that controls this Workload (Kueue's JobSet integration)."""
    for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "JobSet" \
                and str(ref.get("apiVersion", "")).startswith("jobset.x-k8s.io/"):
            return str(ref["name"])
    return None


def check_state(workload: Obj, check: str) -> Obj | None:
    for state in (workload.get("status") or {}).get("admissionChecks") or []:
        if state.get("name") == check:
            return dict(state)
    return None


def state_patch(workload: Obj, check: str, verdict: Verdict, now: str) -> Obj:
    """The apply configuration of our entry of status.admissionChecks."""
    meta = workload["metadata"]
    old = check_state(workload, check) or {}
    entry: Obj = {"name": check, "state": verdict.state, "message": verdict.message,
                  "lastTransitionTime": (old.get("lastTransitionTime")
                                         if old.get("state") == verdict.state
                                         and old.get("lastTransitionTime") else now)}
    if verdict.requeue_after_seconds is not None:
        entry["requeueAfterSeconds"] = verdict.requeue_after_seconds
    return {"apiVersion": KUEUE_API_VERSION, "kind": "Workload",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                         "resourceVersion": meta["resourceVersion"]},
            "status": {"admissionChecks": [entry]}}


def active_patch(admission_check: Obj, now: str) -> Obj | None:
    """The apply configuration marking an AdmissionCheck Active, or None if it already is for
    its generation (Kueue keeps a ClusterQueue that uses an inactive check inactive)."""
    generation = int((admission_check.get("metadata") or {}).get("generation") or 0)
    cond = _condition(admission_check, ACTIVE)
    if cond is not None and cond.get("status") == "True" \
            and int(cond.get("observedGeneration") or 0) == generation:
        return None
    return {"apiVersion": KUEUE_API_VERSION, "kind": "AdmissionCheck",
            "metadata": {"name": admission_check["metadata"]["name"]},
            "status": {"conditions": [{
                "type": ACTIVE, "status": "True", "reason": ACTIVE,
                "message": "the decider answers this check's Workloads",
                "observedGeneration": generation, "lastTransitionTime": now}]}}
