"""The JobSet controller's scheduling-objects step inside Decide: Workload, CompositePodGroups
and PodGroups around the child Jobs (jobset_controller.go@4f0cbded, after the headless Service
and the PVCs, before stale-Job recreation and Job creation).

Runs only for a JobSet that asks for it: upstream's ``spec.scheduling`` with the
JobSetWorkloadAwareSchedulingAPI gate on (with it off the field is ignored, as upstream's
controller ignores it), or this project's annotation ``jobset-decider.io/gang-policy``. Any
other JobSet's plan is exactly what it was before gang scheduling existed. The rules live in
``decider.core.gang.jobset_gang``; this module turns its plan into actions and links the Jobs
created in the same pass to their groups.

``spec.scheduling`` follows upstream's lifecycle:
- suspended: its objects are deleted (recreated on resume);
- otherwise they are reconciled, then the readiness gate: a pass that had to create, wait for or
  delete any of them ends there, status written, and the Jobs come on the pass its objects'
  events start (upstream reads them back through its cache, so a Job is never created beside a
  Workload that is not there yet);
- a failure (a same-named object someone else controls, a spec that does not compile) is a
  Warning event ``SchedulingObjectsReconcileFailed`` with upstream's error text, and the pass
  ends as a failed reconcile does: no status write, retried with backoff.

Lifecycle, as KEP-969 (WAS integration) describes it:
- created suspended: nothing; suspend or finish: delete the objects (PodGroups first, uid
  preconditions), once: one already terminating is not deleted again; resume: recreate them
  with the same names, once the old ones are gone (until then no object and no Job is created
  or resumed); restart: keep them;
- every Job created in the pass carries its pod-template reference (``schedulingGroup``, a
  ``workloadRef``, a label or an annotation, per target) and the Job annotations, also when it
  is created suspended: a pod template cannot gain the reference later;
- a same-named Workload or PodGroup the JobSet does not control is never adopted. Upstream fails
  the reconcile; an operator would see nothing but a controller log line, and the JobSet's
  other steps (status, failures, suspend) would stop too. We answer with a plan instead: a
  Warning event on the JobSet naming the object, no gang object, and no Job created or resumed
  (their pods would join someone else's gang, or run without one), and a requeue so the pass is
  retried once the object is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from decider.core import constants as c
from decider.core import name_conflicts
from decider.core.errors import FieldError, InvalidInput
from decider.core.gang import KUBERNETES, NEWEST, GangPlan, OwnershipConflict, jobset_gang
from decider.core.gang.jobset_facts import GANG_POLICY_ANNOTATION
from decider.core.model import Action, Event
from decider.core.plain_json import is_plain
from decider.core.state import PassState, merge_patch, parse_time

GANG_KINDS = ("Workload", "PodGroup", "CompositePodGroup")
CONFLICT_REASON = "GangObjectConflict"
FAILED_REASON = "SchedulingObjectsReconcileFailed"
# Upstream retries a failed reconcile with backoff; the shim only watches objects the JobSet
# owns, so the foreign object going away would not wake this JobSet up: ask again.
CONFLICT_REQUEUE_SECONDS = 30

_CREATE = {"Workload": "CreateWorkload", "PodGroup": "CreatePodGroup",
           "CompositePodGroup": "CreateCompositePodGroup"}
_DELETE = {"Workload": "DeleteWorkload", "PodGroup": "DeletePodGroup",
           "CompositePodGroup": "DeleteCompositePodGroup"}
_PATCH = {"Workload": "PatchWorkload", "PodGroup": "PatchPodGroup",
          "CompositePodGroup": "PatchCompositePodGroup"}


@dataclass(slots=True)
class GangStep:
    """What the gang step decided, for the Job steps that follow it in the same pass."""

    plan: GangPlan | None = None
    # Create and resume no Job: a same-named object is controlled by someone else, or one of
    # ours is still being deleted (pods would join, and keep alive, the group going away).
    blocked: bool = False
    # spec.scheduling: the objects are not all there, live and matching: the pass ends here.
    ready: bool = True
    # spec.scheduling: the step failed (its Warning event is planned): the pass ends as a failed
    # reconcile, without a status write.
    failed: bool = False


def asks_for_gang(jobset: dict[str, Any], was_gate: bool = True) -> bool:
    """Cheap test that keeps every other JobSet off the gang path entirely."""
    meta = jobset.get("metadata")
    spec = jobset.get("spec")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if isinstance(annotations, dict) and GANG_POLICY_ANNOTATION in annotations:
        return True
    return was_gate and isinstance(spec, dict) and spec.get("scheduling") is not None


def _ignored(jobset: dict[str, Any]) -> bool:
    spec = jobset.get("spec")
    return isinstance(spec, dict) and spec.get("scheduling") is not None


def _existing(st: PassState) -> tuple[list[dict[str, Any]], list[int]]:
    """Observed Workloads/PodGroups as whole objects, and each one's index in the request."""
    found: list[dict[str, Any]] = []
    index: list[int] = []
    for i, o in enumerate(st.observed.objects):
        if o.kind not in GANG_KINDS:
            continue
        if o.obj is None:
            # Drift is judged on the spec: a summary alone would look drifted and be recreated.
            raise InvalidInput.at(
                f"objects[{i}].object_json",
                f"Required value: {o.kind} {o.name} is compared by content when the JobSet is "
                "gang scheduled",
            )
        found.append(o.obj)
        index.append(i)
    return found, index


def _remap(error: FieldError, index: list[int]) -> FieldError:
    """``existing[k].…`` (the core's list) -> ``objects[i].object_json.…`` (the request's)."""
    head, sep, rest = error.field.partition("].")
    if error.field.startswith("existing[") and sep:
        k = int(head[len("existing["):])
        if 0 <= k < len(index):
            return FieldError(f"objects[{index[k]}].object_json.{rest}", error.message)
    return error


def reconcile(st: PassState) -> GangStep:
    """The gang step of one pass: actions for the scheduling objects, and what Jobs need."""
    was = st.gate(c.GATE_WORKLOAD_AWARE_SCHEDULING)
    if not asks_for_gang(st.observed.jobset, was):
        if _ignored(st.observed.jobset):
            st.explain("spec.scheduling is not reconciled: the JobSetWorkloadAwareSchedulingAPI "
                       "gate is off (no Workload, no PodGroup, no Job annotation)")
        return GangStep()
    opts = st.options
    existing, index = _existing(st)
    gates = dict(opts.feature_gates)
    try:
        plan = jobset_gang(
            st.observed.jobset,
            opts.gang_api_version or NEWEST,
            existing,
            opts.gang_target or KUBERNETES,
            {**c.GATE_DEFAULTS, **gates},
        )
    except OwnershipConflict as exc:
        upstream = getattr(exc, "upstream_message", None)
        partial = getattr(exc, "partial", None)
        if partial is not None and partial.upstream and upstream:
            _act(st, partial)
            return _fail(st, upstream, _foreign_created(existing, exc))
        _refuse(st, [_remap(e, index) for e in exc.errors])
        return GangStep(blocked=True)
    except InvalidInput as exc:
        if not _upstream(st.observed.jobset) or _malformed(exc):
            raise
        return _fail(st, "building Workload: " + _listed(exc.errors), None)
    if plan is None:
        return GangStep()
    _act(st, plan)
    if plan.upstream:
        if not plan.ready:
            st.explain("scheduling objects are not all in place yet: no Job is created or "
                       "resumed in this pass (their events bring the next one)")
        return GangStep(plan=plan, ready=plan.ready)
    # Objects of ours still terminating: their successors are not created yet, and Jobs wait
    # too. No requeue: the shim watches the gang objects the JobSet owns, so the deletion that
    # frees the names wakes the JobSet, as a terminating child Job's does.
    return GangStep(plan=plan, blocked=bool(plan.waiting))


def _upstream(jobset: dict[str, Any]) -> bool:
    meta = jobset.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return not (isinstance(annotations, dict) and GANG_POLICY_ANNOTATION in annotations)


def _malformed(exc: InvalidInput) -> bool:
    """A JSON type error in the input (Decide refuses it) rather than a rule violation of a
    well-formed spec.scheduling (which upstream's controller reports as a failed reconcile)."""
    return any("must be " in e.message and ", got " in e.message for e in exc.errors)


def _foreign_created(existing: list[dict[str, Any]], exc: OwnershipConflict) -> str | None:
    """The creationTimestamp of the object we may not adopt, for the backoff."""
    for error in exc.errors:
        head = error.field.split("]", 1)[0]
        if head.startswith("existing["):
            k = int(head[len("existing["):])
            meta = existing[k].get("metadata") if 0 <= k < len(existing) else None
            stamp = meta.get("creationTimestamp") if isinstance(meta, dict) else None
            return stamp if isinstance(stamp, str) else None
    return None


def _fail(st: PassState, message: str, since: str | None) -> GangStep:
    """Upstream records the error as a Warning event at once and returns it: the pass stops,
    its status changes are not written, and controller-runtime retries with backoff (here
    without memory: as long as the failure has lasted, 1 s to 1000 s, as name_conflicts)."""
    js = st.js
    st.act(Action(type="Event", name=js.name, namespace=js.namespace, api_version=c.API_VERSION,
                  kind=c.KIND, uid=js.uid,
                  event=Event(type=c.WARNING, reason=FAILED_REASON, message=message),
                  reason=FAILED_REASON))
    st.explain(f"scheduling objects could not be reconciled: {message}; the pass stops there "
               "(no Job is created or resumed, no status write) and is retried")
    began = [parse_time(str((js.raw.get("metadata") or {}).get("creationTimestamp") or ""))]
    if since:
        began.append(parse_time(since))
    known = [t for t in began if t is not None]
    lasted = st.now - max(known) if known else timedelta(0)
    st.requeue_after = min(name_conflicts.MAX_BACKOFF, max(name_conflicts.MIN_BACKOFF, lasted))
    return GangStep(failed=True, ready=False)


# Errors named in one event and one explanation. A spec.scheduling of 500 entries each
# targeting the same 500 replicated Jobs has 249,500 ("is targeted by more than one
# replicatedJobs entry"): listed whole they made a 28 MB event and a 28 MB sentence, a 2 MB JobSet
# a 56 MB plan, and a little more a plan over the message limit, never decided. Recorders cut an
# event's message at 1 kB anyway; `decider validate` lists them all.
MAX_LISTED_ERRORS = 10


def _listed(errors: list[FieldError]) -> str:
    text = "; ".join(str(e) for e in errors[:MAX_LISTED_ERRORS])
    more = len(errors) - MAX_LISTED_ERRORS
    return text + (f"; and {more:,} more" if more > 0 else "")


def _refuse(st: PassState, errors: list[FieldError]) -> None:
    message = _listed(errors)
    js = st.js
    st.act(Action(type="Event", name=js.name, namespace=js.namespace, api_version=c.API_VERSION,
                  kind=c.KIND, uid=js.uid,
                  event=Event(type="Warning", reason=CONFLICT_REASON, message=message),
                  reason=CONFLICT_REASON))
    st.explain(f"gang scheduling refused: {message}; no job is created or resumed until the "
               "object is removed or renamed")
    conflict = timedelta(seconds=CONFLICT_REQUEUE_SECONDS)
    if not st.requeue_after or st.requeue_after > conflict:
        st.requeue_after = conflict


def _act(st: PassState, plan: GangPlan) -> None:
    # Deletes first (PodGroups before the Workload, as the core orders them): on drift the
    # objects go now and come back on the next pass; creates and in-place updates follow.
    for ref in plan.deletes:
        kind = str(ref.get("kind"))
        st.act(Action(type=_DELETE.get(kind, "DeletePodGroup"), name=str(ref.get("name")),
                      namespace=st.js.namespace, api_version=str(ref.get("apiVersion")),
                      kind=kind, uid=str(ref.get("uid") or ""),
                      reason=f"the JobSet's {kind} is removed (suspend, finish or drift)"))
    for obj in plan.objects:
        kind = obj["kind"]
        name = obj["metadata"]["name"]
        st.act(Action(type=_CREATE.get(kind, "CreatePodGroup"), name=name,
                      api_version=obj["apiVersion"], kind=kind, object=obj,
                      reason=f"the JobSet is gang scheduled and {kind} {name} is missing"))
    for upd in plan.updates:
        kind = str(upd.get("kind"))
        st.act(Action(type=_PATCH.get(kind, "PatchPodGroup"), name=str(upd.get("name")),
                      api_version=str(upd.get("apiVersion")), kind=kind,
                      uid=str(upd.get("uid") or ""), patch=upd.get("patch"),
                      reason="the gang minCount changed"))
    for sentence in plan.explanation:
        st.explain(sentence)
    for warning in plan.warnings:
        st.explain(f"warning: {warning}")


def link_jobs(st: PassState, step: GangStep) -> None:
    """Give every Job created in this pass its pod-template reference and Job annotations."""
    plan = step.plan
    if plan is None or not (plan.pod_template_patches or plan.job_annotations):
        return
    for action in st.actions:
        if action.type != "CreateJob" or action.object is None:
            continue
        patch = plan.pod_template_patches.get(action.name)
        if patch is not None:
            spec = action.object.setdefault("spec", {})
            spec["template"] = merge_patch(spec.get("template"), patch)
            action.plain_json = action.plain_json and is_plain(patch)
        annotations = plan.job_annotations.get(action.name)
        if annotations:
            meta = action.object.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            action.plain_json = action.plain_json and is_plain(annotations)

