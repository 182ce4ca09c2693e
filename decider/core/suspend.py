"""Suspend and resume of child Jobs (upstream suspendJobs / resumeJobsIfNecessary).

Suspending sets spec.suspend on every active Job not yet suspended. Resuming walks replicated
Jobs in order, skips those whose dependencies are unmet (and, under InOrder, those already
started), and resumes their suspended Jobs; under InOrder it resumes one replicated Job per pass.
A resume first clears status.startTime (the Job controller refuses template edits on a Job that
has started) and merges the replicated Job's pod-template labels, annotations, nodeSelector,
tolerations and scheduling gates into the Job: that is how Kueue's admission reaches the pods.
Under ExecutionAttemptsTracking the Job and its pods get the attempt they now run in
(execution_attempts.py); under MutablePodResourcesForSuspendedJobSets, the template's container
resources (pod_resources.py).
"""

from __future__ import annotations

from typing import Any

from decider.core import conditions, execution_attempts, pod_resources, startup_policy
from decider.core import constants as c
from decider.core.depends_on import dependencies_met
from decider.core.model import Action, ObservedJob, PodTemplateSummary, Toleration
from decider.core.state import PassState


def suspend_jobs(st: PassState, active: list[ObservedJob]) -> None:
    count = 0
    for job in active:
        if not job.suspend:
            st.act(Action(type="SuspendJob", name=job.name, api_version="batch/v1", kind="Job",
                          uid=job.uid, patch={"spec": {"suspend": True}},
                          reason="the JobSet is suspended"))
            count += 1
    if count:
        st.explain(f"the JobSet is suspended: suspend {count} active job(s)")
    conditions.set_condition(st, c.SUSPENDED, "True", c.REASON_SUSPENDED_JOBS, c.MSG_SUSPENDED,
                             c.NORMAL)
    conditions.set_restarting_false(st, c.REASON_JOBSET_SUSPENDED, c.MSG_SUSPENDED)


def _toleration(raw: Any) -> Toleration:
    raw = raw if isinstance(raw, dict) else {}
    seconds = raw.get("tolerationSeconds")
    return Toleration(key=raw.get("key") or "", operator=raw.get("operator") or "",
                      value=raw.get("value") or "", effect=raw.get("effect") or "",
                      toleration_seconds=seconds if isinstance(seconds, int) else None)


def _key(item: Any) -> Any:
    """A hashable stand-in equal for equal items (a Toleration is not hashable)."""
    if isinstance(item, Toleration):
        return (Toleration, item.key, item.operator, item.value, item.effect,
                item.toleration_seconds)
    hash(item)  # TypeError for what has no such stand-in
    return item


def _union(first: list[Any], second: list[Any]) -> list[Any]:
    # Upstream's MergeSlices loses order (it goes through a Go map); we keep the Job's entries
    # first, then the template's new ones, so that plans stay deterministic.
    out = list(first)
    try:
        # Each Job is merged with its template: a set keeps that linear in their lengths.
        seen = {_key(item) for item in out}
        for item in second:
            key = _key(item)
            if key not in seen:
                seen.add(key)
                out.append(item)
    except TypeError:  # an unhashable scheduling gate name: compare item by item
        out = list(first)
        for item in second:
            if item not in out:
                out.append(item)
    return out


def resume_patch(job: ObservedJob, template: dict[str, Any],
                 annotations: dict[str, str] | None = None,
                 resources: bool = False) -> dict[str, Any]:
    """JSON merge patch that unsuspends `job` with `template`'s scheduling directives merged in.
    annotations: set on the Job and its pod template besides (the execution attempt);
    resources: write the template's container resources too (pod_resources.py)."""
    current = job.pod_template or PodTemplateSummary()
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    pod_meta: dict[str, Any] = {}
    pod_spec: dict[str, Any] = {}
    extra = annotations or {}
    for out, key, have, want in (
            (pod_meta, "labels", current.labels, meta.get("labels")),
            (pod_meta, "annotations", current.annotations,
             {**(meta.get("annotations") or {}), **extra}),
            (pod_spec, "nodeSelector", current.node_selector, spec.get("nodeSelector"))):
        # The Job's entries in key order: they may come from a protobuf map, whose iteration
        # order differs between equal messages, and the plan's bytes must not.
        have = dict(sorted(have.items()))
        merged = {**have, **(want or {})}
        # The execution attempt is written on every resume, as upstream's Update does, even
        # where the Job has it already: what the resume asks is then plain in its patch.
        if merged != have or (key == "annotations" and extra):
            out[key] = merged
    tolerations = _union(current.tolerations, [_toleration(t) for t in spec.get("tolerations")
                                               or ()])
    if tolerations != current.tolerations:
        pod_spec["tolerations"] = [t.to_dict() for t in tolerations]
    gates = _union(current.scheduling_gates,
                   [(g or {}).get("name", "") for g in spec.get("schedulingGates") or ()
                    if isinstance(g, dict)])
    if gates != current.scheduling_gates:
        pod_spec["schedulingGates"] = [{"name": g} for g in gates]
    if resources:
        pod_spec.update(pod_resources.resume_changes(job, template))
    patch: dict[str, Any] = {"spec": {"suspend": False}}
    if extra:
        patch["metadata"] = {"annotations": dict(extra)}
    pod: dict[str, Any] = {}
    if pod_meta:
        pod["metadata"] = pod_meta
    if pod_spec:
        pod["spec"] = pod_spec
    if pod:
        patch["spec"]["template"] = pod
    return patch


def resume_jobs(st: PassState, active: list[ObservedJob],
                statuses: dict[str, dict[str, Any]]) -> None:
    js = st.js
    # Only suspended Jobs are resumed; grouping just those keeps a steady pass cheap.
    by_rjob: dict[str, list[ObservedJob]] = {}
    for job in active:
        if job.suspend:
            by_rjob.setdefault(job.labels.get(c.REPLICATED_JOB_NAME, ""), []).append(job)
    replicas: dict[str, int] = {}
    annotations = execution_attempts.resume_annotation(st)
    resources = st.gate(c.GATE_MUTABLE_POD_RESOURCES)
    for rjob in js.replicated_jobs:
        replicas[rjob.name] = rjob.replicas
        if not dependencies_met(rjob, replicas, statuses):
            continue
        if js.in_order and startup_policy.all_replicas_started(rjob.replicas,
                                                               statuses[rjob.name]):
            continue
        template = (rjob.template.get("spec") or {}).get("template") or {}
        resumed = resized = 0
        for job in by_rjob.get(rjob.name, ()):
            patch = resume_patch(job, template, annotations, resources)
            st.act(Action(type="ResumeJob", name=job.name, api_version="batch/v1", kind="Job",
                          uid=job.uid, patch=patch, clear_start_time=bool(job.start_time),
                          reason="the JobSet is resumed",
                          on_failure=pod_resources.failure_event(job.name) if resources
                          else None))
            resumed += 1
            pod_spec = (patch["spec"].get("template") or {}).get("spec") or {}
            resized += "containers" in pod_spec or "initContainers" in pod_spec
        if resumed:
            st.explain(f"the JobSet is not suspended: resume {resumed} job(s) of replicated job "
                       f"{rjob.name}")
        if resized:
            st.explain(f"{resized} of them take the container resources replicated job "
                       f"{rjob.name} now asks (changed while suspended)")
        if js.in_order:
            startup_policy.set_in_progress(st)
            return
    conditions.set_condition(st, c.SUSPENDED, "False", c.REASON_RESUME_JOBS, c.MSG_RESUMED,
                             c.NORMAL)
