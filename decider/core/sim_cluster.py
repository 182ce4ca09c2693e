"""The simulator's model of a cluster: what a plan does to it, and a simple Job controller.

Applying a plan (as the shim would, with the API server's answers made up):
- creates appear at once (AlreadyExists: nothing happens), with a made-up UID;
- deletes (UID precondition) disappear at once: foreground deletion's wait for pods is not
  modelled; a Job observed with a deletionTimestamp is gone after the first pass that sees it;
- suspend, resume and patches are JSON merge patches that stick;
- a status write replaces the JobSet's status with the plan's and bumps its resourceVersion;
- events change nothing; DeleteJobSet deletes the JobSet (and with it the simulation).

The Job controller, simply: a Job that runs (created or resumed, not suspended) has all its pods
active and ready at once; a suspended Job has none. Failure, success and readiness come only from
the caller's events. Pods are not modelled: the in-place restart sees the pods as observed.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from decider.core import constants as c
from decider.core.model import (
    Action,
    JobCondition,
    Observed,
    ObservedJob,
    ObservedObject,
    Plan,
    PodTemplateSummary,
    Toleration,
)
from decider.core.state import copy_json, format_time, merge_patch

DEFAULT_FAILURE_REASON = "BackoffLimitExceeded"
_CREATES = {"CreateService", "CreatePVC", "CreateWorkload", "CreatePodGroup",
            "CreateCompositePodGroup"}
_DELETES = {"DeleteWorkload", "DeletePodGroup", "DeleteCompositePodGroup"}
_PATCHES = {"PatchWorkload", "PatchPodGroup", "PatchCompositePodGroup", "UpdateService"}


def pods_of(job: ObservedJob) -> int:
    """Pods a running Job has: min(parallelism, completions), batch/v1 defaults applied."""
    pods = 1 if job.parallelism is None else job.parallelism
    return pods if job.completions is None else min(pods, job.completions)


def _running(job: ObservedJob, now: str) -> ObservedJob:
    """The Job controller's view of a Job that runs: every pod active and ready."""
    if job.suspend:
        return dataclasses.replace(job, active=0, ready=0)
    pods = pods_of(job)
    return dataclasses.replace(job, active=pods, ready=pods, start_time=job.start_time or now)


def _tolerations(raw: Any) -> list[Toleration]:
    out = []
    for t in raw or ():
        t = t if isinstance(t, dict) else {}
        seconds = t.get("tolerationSeconds")
        out.append(Toleration(key=t.get("key") or "", operator=t.get("operator") or "",
                              value=t.get("value") or "", effect=t.get("effect") or "",
                              toleration_seconds=seconds if isinstance(seconds, int) else None))
    return out


def _gates(raw: Any) -> list[str]:
    return [g.get("name") or "" for g in raw or () if isinstance(g, dict)]


def _template(template: dict[str, Any]) -> PodTemplateSummary:
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    group = spec.get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, dict) else None
    return PodTemplateSummary(labels=dict(meta.get("labels") or {}),
                              annotations=dict(meta.get("annotations") or {}),
                              node_selector=dict(spec.get("nodeSelector") or {}),
                              tolerations=_tolerations(spec.get("tolerations")),
                              scheduling_gates=_gates(spec.get("schedulingGates")),
                              scheduling_group=isinstance(group, dict),
                              pod_group_name=name if isinstance(name, str) else None)


def _controller_uid(meta: Mapping[str, Any]) -> str:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return ""


def job_from_manifest(obj: dict[str, Any], uid: str, now: str) -> ObservedJob:
    """A Job the plan created, as the API server stores it (parallelism defaults to 1)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    parallelism = spec.get("parallelism")
    return ObservedJob(
        name=meta.get("name") or "", uid=uid, controller_uid=_controller_uid(meta),
        labels=dict(meta.get("labels") or {}), annotations=dict(meta.get("annotations") or {}),
        suspend=spec.get("suspend"), parallelism=1 if parallelism is None else parallelism,
        completions=spec.get("completions"), creation_timestamp=now,
        pod_template=_template(spec.get("template") or {}), resource_version="1")


def _patched_template(current: PodTemplateSummary | None,
                      patch: dict[str, Any]) -> PodTemplateSummary:
    pt = current or PodTemplateSummary()
    meta = patch.get("metadata") or {}
    spec = patch.get("spec") or {}
    return PodTemplateSummary(
        labels=merge_patch(dict(pt.labels), meta["labels"]) if "labels" in meta else pt.labels,
        annotations=merge_patch(dict(pt.annotations), meta["annotations"])
        if "annotations" in meta else pt.annotations,
        node_selector=merge_patch(dict(pt.node_selector), spec["nodeSelector"])
        if "nodeSelector" in spec else pt.node_selector,
        tolerations=_tolerations(spec["tolerations"]) if "tolerations" in spec
        else pt.tolerations,
        scheduling_gates=_gates(spec["schedulingGates"]) if "schedulingGates" in spec
        else pt.scheduling_gates,
        scheduling_group=pt.scheduling_group, pod_group_name=pt.pod_group_name)


def patched_job(job: ObservedJob, patch: dict[str, Any]) -> ObservedJob:
    """`job` after a JSON merge patch of its spec (suspend, parallelism, completions, the pod
    template's scheduling directives: all that a plan ever patches)."""
    spec = patch.get("spec") or {}
    changes: dict[str, Any] = {k: spec[k] for k in ("suspend", "parallelism", "completions")
                               if k in spec}
    if isinstance(spec.get("template"), dict):
        changes["pod_template"] = _patched_template(job.pod_template, spec["template"])
    return dataclasses.replace(job, **changes)


def _bumped(resource_version: str, writes: int) -> str:
    """The JobSet's resourceVersion after a status write: the observed one plus one when it is
    a number (opaque to clients, but the API server's are), else a marked counter."""
    try:
        return str(int(resource_version) + 1)
    except ValueError:
        return f"{resource_version}+{writes}"


class Cluster:
    """One JobSet and what it owns, changed by plans and by hypothetical events."""

    def __init__(self, observed: Observed) -> None:
        self.jobset: dict[str, Any] = copy_json(observed.jobset)
        # Insertion-ordered, as the caller listed them; a created Job goes last.
        self.jobs: dict[str, ObservedJob] = {j.name: j for j in observed.jobs}
        self.objects: list[ObservedObject] = list(observed.objects)
        self.pods = list(observed.pods)
        self.options = observed.options
        self.now: datetime = observed.now
        self.jobset_deleted = False
        # Names of Jobs deleted at some point, in the order of their first deletion.
        self.deleted: dict[str, None] = {}
        # Jobs created again after a deletion of the same name: the latest of each.
        self.recreated: dict[str, ObservedJob] = {}
        self._uids = itertools.count(1)
        self._status_writes = 0

    @property
    def now_str(self) -> str:
        return format_time(self.now)

    def observed(self) -> Observed:
        # decide() reads its input only; the copy keeps the model's JobSet its own anyway.
        return Observed(jobset=copy_json(self.jobset), now=self.now, jobs=list(self.jobs.values()),
                        objects=list(self.objects), pods=list(self.pods), options=self.options)

    def _uid(self) -> str:
        return f"simulated-uid-{next(self._uids)}"

    # ---- a plan, applied ------------------------------------------------------------------
    def apply(self, plan: Plan) -> bool:
        """Apply `plan`; True when anything changed (a pass that changes nothing is quiet)."""
        changed = False
        for job in [j for j in self.jobs.values() if j.deletion_timestamp]:
            self._delete_job(job.name)
            changed = True
        for action in plan.actions:
            changed = self._apply(action, plan) or changed
        return changed

    def _apply(self, action: Action, plan: Plan) -> bool:
        kind = action.type
        if kind == "CreateJob":
            if action.name in self.jobs or action.object is None:
                return False  # AlreadyExists: done
            job = job_from_manifest(action.object, self._uid(), self.now_str)
            self.jobs[job.name] = _running(job, self.now_str)
            if job.name in self.deleted:
                self.recreated[job.name] = job
            return True
        if kind == "DeleteJob":
            job = self.jobs.get(action.name)
            if job is None or job.uid != action.uid:
                return False  # NotFound, or the precondition failed
            self._delete_job(job.name)
            return True
        if kind in ("SuspendJob", "ResumeJob", "PatchJob"):
            return self._patch_job(action)
        if kind in _CREATES:
            return self._create_object(action)
        if kind in _DELETES:
            before = len(self.objects)
            self.objects = [o for o in self.objects
                            if not (o.kind == action.kind and o.name == action.name
                                    and o.uid == action.uid)]
            return len(self.objects) != before
        if kind in _PATCHES:
            return self._patch_object(action)
        if kind == "UpdateStatus":
            self._status_writes += 1
            # A write mid-plan carries its own status; the last is the plan's.
            self.jobset["status"] = copy_json(plan.status if action.status is None
                                              else action.status)
            meta = self.jobset.setdefault("metadata", {})
            meta["resourceVersion"] = _bumped(str(meta.get("resourceVersion") or "0"),
                                              self._status_writes)
            return True
        if kind == "DeleteJobSet":
            self.jobset_deleted = True
            return True
        return False  # Event: recorded on the JobSet, changes nothing a decision reads

    def _delete_job(self, name: str) -> None:
        del self.jobs[name]
        self.deleted.setdefault(name, None)

    def _patch_job(self, action: Action) -> bool:
        job = self.jobs.get(action.name)
        if job is None or job.uid != action.uid:
            return False
        if action.clear_start_time:
            job = dataclasses.replace(job, start_time="")
        before = (bool(job.suspend), pods_of(job))
        job = patched_job(job, action.patch or {})
        # Resumed, suspended or scaled: the Job controller runs the pods it now should.
        if not job.finished() and before != (bool(job.suspend), pods_of(job)):
            job = _running(job, self.now_str)
        self.jobs[job.name] = job
        return True

    def _create_object(self, action: Action) -> bool:
        if action.object is None or any(o.kind == action.kind and o.name == action.name
                                        for o in self.objects):
            return False
        obj = copy_json(action.object)
        meta = obj.setdefault("metadata", {})
        meta["uid"] = self._uid()
        meta.setdefault("creationTimestamp", self.now_str)
        self.objects.append(ObservedObject(
            api_version=action.api_version or str(obj.get("apiVersion") or ""),
            kind=action.kind or str(obj.get("kind") or ""), name=action.name, uid=meta["uid"],
            controller_uid=_controller_uid(meta), obj=obj))
        return True

    def _patch_object(self, action: Action) -> bool:
        for i, o in enumerate(self.objects):
            if o.kind == action.kind and o.name == action.name and o.uid == action.uid:
                self.objects[i] = dataclasses.replace(
                    o, obj=merge_patch(o.obj or {}, action.patch or {}))
                return True
        return False

    # ---- hypothetical events --------------------------------------------------------------
    def job_for_event(self, name: str) -> ObservedJob | None:
        """The Job an event may happen to: it exists, runs to no end yet, is not being deleted."""
        job = self.jobs.get(name)
        if job is None or job.deletion_timestamp or job.finished():
            return None
        return job

    def fail_job(self, job: ObservedJob, reason: str, message: str) -> None:
        when = self.now_str
        reason = reason or DEFAULT_FAILURE_REASON
        # As the Job controller writes a failure: FailureTarget first, then Failed.
        conditions = [*job.conditions,
                      JobCondition(type="FailureTarget", status="True", reason=reason,
                                   message=message, last_transition_time=when),
                      JobCondition(type=c.JOB_FAILED, status="True", reason=reason,
                                   message=message, last_transition_time=when)]
        self.jobs[job.name] = dataclasses.replace(job, active=0, ready=0, failed=job.failed + 1,
                                                  conditions=conditions)

    def succeed_job(self, job: ObservedJob) -> None:
        when = self.now_str
        conditions = [*job.conditions,
                      JobCondition(type="SuccessCriteriaMet", status="True",
                                   last_transition_time=when),
                      JobCondition(type=c.JOB_COMPLETE, status="True",
                                   last_transition_time=when)]
        done = job.completions if job.completions is not None else pods_of(job)
        self.jobs[job.name] = dataclasses.replace(job, active=0, ready=0, succeeded=done,
                                                  conditions=conditions)

    def ready_job(self, job: ObservedJob) -> None:
        self.jobs[job.name] = _running(job, self.now_str)

    def suspend_job(self, job: ObservedJob, suspend: bool) -> None:
        self.jobs[job.name] = _running(dataclasses.replace(job, suspend=suspend), self.now_str)

    def suspend_jobset(self, suspend: bool) -> None:
        spec = self.jobset.setdefault("spec", {})
        spec["suspend"] = suspend
        meta = self.jobset.setdefault("metadata", {})
        # A spec change, as the API server counts it.
        generation = meta.get("generation")
        meta["generation"] = (generation if isinstance(generation, int) else 1) + 1
