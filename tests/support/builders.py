"""Builders for JobSets and observed child Jobs, as the API server would serve them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from decider.core import constants as c
from decider.core.decide import decide
from decider.core.model import JobCondition, Observed, ObservedJob, ObservedObject, Options, Plan

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NOW_STR = "2026-01-01T12:00:00Z"
UID = "uid-js-1"


def rjob(name: str, replicas: int = 1, *, parallelism: int | None = 1,
         completions: int | None = 1, depends_on: list[tuple[str, str]] | None = None,
         group: str | None = None, pod: dict[str, Any] | None = None,
         job_meta: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"completionMode": "Indexed", "template": pod or {
        "spec": {"restartPolicy": "OnFailure",
                 "containers": [{"name": "main", "image": "busybox"}]}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    out: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": spec}}
    if job_meta:
        out["template"]["metadata"] = job_meta
    if group:
        out["groupName"] = group
    if depends_on:
        out["dependsOn"] = [{"name": n, "status": s} for n, s in depends_on]
    return out


def jobset(*rjobs: dict[str, Any], name: str = "js", namespace: str = "default",
           uid: str = UID, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"replicatedJobs": list(rjobs) or [rjob("workers", 3)]}
    body.update(spec)
    out = {"apiVersion": c.API_VERSION, "kind": c.KIND,
           "metadata": {"name": name, "namespace": namespace, "uid": uid,
                        "resourceVersion": "7"},
           "spec": body}
    if status is not None:
        out["status"] = status
    return out


def job(rjob_name: str, index: int, *, js_name: str = "js", attempt: int = 0,
        state: str = "active", reason: str = "BackoffLimitExceeded", message: str = "",
        failed_at: str = "2026-01-01T11:00:00Z", ready: int = 0, active: int = 0,
        succeeded: int = 0, suspend: bool | None = False, parallelism: int | None = 1,
        completions: int | None = 1, owner: str = UID, deleting: bool = False,
        labels: dict[str, str] | None = None, job_attempt: int | None = None,
        start_time: str = "") -> ObservedJob:
    """An observed child Job. state: active | succeeded | failed."""
    lbl = {c.REPLICATED_JOB_NAME: rjob_name, c.RESTART_ATTEMPT: str(attempt),
           c.JOB_INDEX: str(index), c.JOBSET_NAME: js_name}
    if job_attempt is not None:
        lbl[c.JOB_RESTART_ATTEMPT] = str(job_attempt)
    lbl.update(labels or {})
    conds = []
    if state == "failed":
        conds.append(JobCondition(type="Failed", status="True", reason=reason, message=message,
                                  last_transition_time=failed_at))
    elif state == "succeeded":
        conds.append(JobCondition(type="Complete", status="True",
                                  last_transition_time=failed_at))
        succeeded = succeeded or (completions or 1)
    return ObservedJob(
        name=f"{js_name}-{rjob_name}-{index}", uid=f"uid-{rjob_name}-{index}-{attempt}",
        controller_uid=owner, labels=lbl, suspend=suspend, parallelism=parallelism,
        completions=completions, active=active, ready=ready, succeeded=succeeded,
        conditions=conds, deletion_timestamp="2026-01-01T11:59:00Z" if deleting else "",
        start_time=start_time)


def service(name: str = "js") -> ObservedObject:
    return ObservedObject(api_version="v1", kind="Service", name=name)


def run(js: dict[str, Any], jobs: list[ObservedJob] = (), *, objects: list[Any] = (),
        gates: dict[str, bool] | None = None, now: datetime = NOW, pods: list[Any] = (),
        controller: str = "") -> Plan:
    return decide(Observed(jobset=copy.deepcopy(js), now=now, jobs=list(jobs),
                           objects=list(objects), pods=list(pods),
                           options=Options(controller_name=controller,
                                           feature_gates=gates or {})))


def types(plan: Plan) -> list[tuple[str, str]]:
    return [(a.type, a.name) for a in plan.actions]


def kinds(plan: Plan, kind: str) -> list[str]:
    return [a.name for a in plan.actions if a.type == kind]


def condition(plan: Plan, type_: str) -> dict[str, Any] | None:
    for cond in plan.status.get("conditions", []):
        if cond["type"] == type_:
            return cond
    return None


def events(plan: Plan) -> list[tuple[str, str]]:
    return [(a.event.type, a.event.reason) for a in plan.actions if a.event]


def rjs(plan: Plan, name: str) -> dict[str, Any]:
    return next(e for e in plan.status["replicatedJobsStatus"] if e["name"] == name)
