"""The contract <-> the core: proto messages in, core data out, and back.

The server and the in-process CLI both decide through `decide_response`, so a plan has one
wire form whichever way it was asked for.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any

from decider import json_input, limits, summarize
from decider.core.decide import decide
from decider.core.errors import FieldError, InvalidInput
from decider.core.model import (
    Action,
    FailureOutcome,
    JobCondition,
    Observed,
    ObservedJob,
    ObservedObject,
    ObservedPod,
    Options,
    Plan,
    PodTemplateSummary,
    Toleration,
)
from decider.limits import Limits
from decider.v1 import decider_pb2 as pb
from decider.version import VERSION

_ACTION_TYPES = {
    "CreateJob": pb.ACTION_TYPE_CREATE_JOB,
    "DeleteJob": pb.ACTION_TYPE_DELETE_JOB,
    "SuspendJob": pb.ACTION_TYPE_SUSPEND_JOB,
    "ResumeJob": pb.ACTION_TYPE_RESUME_JOB,
    "PatchJob": pb.ACTION_TYPE_PATCH_JOB,
    "CreateService": pb.ACTION_TYPE_CREATE_SERVICE,
    "CreatePVC": pb.ACTION_TYPE_CREATE_PVC,
    "CreateWorkload": pb.ACTION_TYPE_CREATE_WORKLOAD,
    "CreatePodGroup": pb.ACTION_TYPE_CREATE_POD_GROUP,
    "DeleteWorkload": pb.ACTION_TYPE_DELETE_WORKLOAD,
    "DeletePodGroup": pb.ACTION_TYPE_DELETE_POD_GROUP,
    "UpdateStatus": pb.ACTION_TYPE_UPDATE_STATUS,
    "DeleteJobSet": pb.ACTION_TYPE_DELETE_JOB_SET,
    "Event": pb.ACTION_TYPE_EVENT,
    "PatchWorkload": pb.ACTION_TYPE_PATCH_WORKLOAD,
    "PatchPodGroup": pb.ACTION_TYPE_PATCH_POD_GROUP,
}


def parse_json(text: str, field: str, lim: Limits = limits.DEFAULT, *,
               in_field_paths: bool = False) -> Any:
    return json_input.load(text, field, lim.max_json_depth, in_field_paths=in_field_paths)


def gang_choice(opts: pb.Options) -> tuple[str, str]:
    """The gang API generation and target the request asks for, defaults filled in."""
    from decider.core.gang import API_VERSIONS, KUBERNETES, NEWEST, TARGETS

    api_version = opts.gang_api_version or NEWEST
    target = opts.gang_target or KUBERNETES
    if api_version not in API_VERSIONS:
        raise InvalidInput.at("options.gang_api_version",
                              f"Unsupported value: {api_version!r}: supported values: "
                              + ", ".join(API_VERSIONS))
    if target not in TARGETS:
        raise InvalidInput.at("options.gang_target",
                              f"Unsupported value: {target!r}: supported values: "
                              + ", ".join(TARGETS))
    return api_version, target


def parse_object(text: str, field: str, lim: Limits = limits.DEFAULT, *,
                 in_field_paths: bool = False) -> dict[str, Any]:
    limits.check_object_bytes(text, field, lim)
    obj = parse_json(text, field, lim, in_field_paths=in_field_paths)
    if not isinstance(obj, dict):
        raise InvalidInput.at(field, "must be a JSON object")
    return obj


def feature_gates(opts: pb.Options) -> dict[str, bool]:
    """The request's gates; a name the decider does not know is refused, not ignored (a typo
    would otherwise silently leave a gate at its default)."""
    from decider.core.constants import GATE_DEFAULTS

    gates = dict(opts.feature_gates)
    for name in sorted(gates):
        if name not in GATE_DEFAULTS:
            raise InvalidInput.at(f"options.feature_gates[{name}]",
                                  f"unknown feature gate {name!r}; known gates: "
                                  + ", ".join(sorted(GATE_DEFAULTS)))
    return gates


def options_from_proto(opts: pb.Options, lim: Limits = limits.DEFAULT) -> Options:
    # Checked here, for every JobSet, so a typo fails at once and not on the first gang JobSet.
    if opts.gang_api_version or opts.gang_target:
        gang_choice(opts)
    return Options(controller_name=opts.controller_name, feature_gates=feature_gates(opts),
                   gang_api_version=opts.gang_api_version, gang_target=opts.gang_target,
                   max_plan_bytes=lim.max_message_bytes)


def _job(msg: pb.ObservedJob) -> ObservedJob:
    # The proto maps are handed over as they are: the core only reads them, and copying ten
    # thousand Jobs' labels into dicts cost more than the whole decision (bench/decide_bench.py).
    pt = msg.pod_template
    return ObservedJob(
        name=msg.name, uid=msg.uid, controller_uid=msg.controller_uid,
        labels=msg.labels, annotations=msg.annotations,
        suspend=msg.suspend if msg.HasField("suspend") else None,
        parallelism=msg.parallelism if msg.HasField("parallelism") else None,
        completions=msg.completions if msg.HasField("completions") else None,
        active=msg.active, ready=msg.ready, succeeded=msg.succeeded, failed=msg.failed,
        conditions=[JobCondition(type=cd.type, status=cd.status, reason=cd.reason,
                                 message=cd.message,
                                 last_transition_time=cd.last_transition_time)
                    for cd in msg.conditions],
        creation_timestamp=msg.creation_timestamp,
        deletion_timestamp=msg.deletion_timestamp,
        start_time=msg.start_time,
        pod_template=PodTemplateSummary(
            labels=pt.labels, annotations=pt.annotations, node_selector=pt.node_selector,
            tolerations=[Toleration(key=t.key, operator=t.operator, value=t.value,
                                    effect=t.effect,
                                    toleration_seconds=t.toleration_seconds
                                    if t.HasField("toleration_seconds") else None)
                         for t in pt.tolerations],
            scheduling_gates=list(pt.scheduling_gates),
        ) if msg.HasField("pod_template") else None,
        resource_version=msg.resource_version,
    )


def _object(msg: pb.ObservedObject, index: int, lim: Limits) -> ObservedObject:
    obj = parse_json(msg.object_json, f"objects[{index}].object_json", lim) \
        if msg.object_json else None
    return ObservedObject(api_version=msg.api_version, kind=msg.kind, name=msg.name,
                          uid=msg.uid, controller_uid=msg.controller_uid, obj=obj)


def _check_job_names(jobs: Any, fields: list[str]) -> None:
    for job, field in zip(jobs, fields, strict=True):
        if not job.name:
            raise InvalidInput.at(field, "Required value")
        if len(job.name) > limits.MAX_NAME_BYTES:
            raise InvalidInput.at(field, f"must be no more than {limits.MAX_NAME_BYTES} "
                                         "characters")


def _summarized(req: pb.DecideRequest, lim: Limits) -> pb.DecideRequest:
    """The objects of `observed_json`, summarized into a request's typed lists by the same code
    the Python client uses, so that sending them whole or summarized decides alike."""
    out = pb.DecideRequest()
    limits.check_count(len(req.observed_json), "observed_json", lim.max_observed,
                       "observed objects")
    job_fields: list[str] = []
    for i, text in enumerate(req.observed_json):
        field = f"observed_json[{i}]"
        limits.check_object_bytes(text, field, lim)
        obj = parse_object(text, field, lim)
        before = (len(out.jobs), len(out.pods), len(out.objects))
        try:
            summarize.add_observed(out, obj, field)
        except summarize.ObservationError as exc:
            raise InvalidInput.at(exc.field, exc.message) from None
        if len(out.jobs) > before[0]:
            job_fields.append(f"{field}.metadata.name")
        # A typed field holds no string over max_string_bytes; a summary made here is held to
        # the same, naming the object it came from.
        added = out.jobs[-1] if len(out.jobs) > before[0] else \
            out.pods[-1] if len(out.pods) > before[1] else None
        if added is not None and added.ByteSize() > lim.max_string_bytes:
            try:
                limits.check_strings([added], field, lim)
            except InvalidInput as exc:
                raise InvalidInput([FieldError(e.field.replace(f"{field}[0]", field, 1),
                                               e.message) for e in exc.errors]) from None
    _check_job_names(out.jobs, job_fields)
    return out


def expanded(req: pb.DecideRequest, lim: Limits = limits.DEFAULT) -> pb.DecideRequest:
    """`req` as the Python client would have sent it: the objects of observed_json summarized
    into the typed lists, after the typed entries, in order. `req` itself when it has none.
    Everything after this (limits, decision, decision_id) sees one form of a request."""
    if not req.observed_json:
        return req
    raw = _summarized(req, lim)
    out = pb.DecideRequest()
    out.CopyFrom(req)
    out.ClearField("observed_json")
    out.jobs.extend(raw.jobs)
    out.objects.extend(raw.objects)
    out.pods.extend(raw.pods)
    return out


def observed_from_proto(req: pb.DecideRequest, lim: Limits = limits.DEFAULT) -> Observed:
    req = expanded(req, lim)
    limits.check_decide_request(req, lim)
    if not req.HasField("now"):
        raise InvalidInput.at("now", "Required value")
    _check_job_names(req.jobs, [f"jobs[{i}].name" for i in range(len(req.jobs))])
    jobset = parse_object(req.jobset_json, "jobset_json", lim, in_field_paths=True)
    limits.check_jobset_replicas(jobset, lim)
    return Observed(
        jobset=jobset,
        now=req.now.ToDatetime(tzinfo=UTC),
        jobs=[_job(j) for j in req.jobs],
        objects=[_object(o, i, lim) for i, o in enumerate(req.objects)],
        pods=[ObservedPod(name=p.name, phase=p.phase, annotations=dict(p.annotations),
                          max_container_restarts=p.max_container_restarts) for p in req.pods],
        options=options_from_proto(req.options, lim),
    )


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _action(a: Action) -> pb.Action:
    msg = pb.Action(type=_ACTION_TYPES[a.type], name=a.name, namespace=a.namespace,
                    api_version=a.api_version, kind=a.kind, uid=a.uid,
                    clear_start_time=a.clear_start_time,
                    propagation_policy=a.propagation_policy, reason=a.reason)
    if a.object is not None:
        msg.object_json = _dumps(a.object)
    if a.patch is not None:
        msg.patch_json = _dumps(a.patch)
    if a.event is not None:
        msg.event.CopyFrom(pb.Event(type=a.event.type, reason=a.event.reason,
                                    message=a.event.message))
    return msg


def status_to_proto(status: dict[str, Any]) -> pb.JobSetStatus:
    msg = pb.JobSetStatus(
        restarts=int(status.get("restarts") or 0),
        restarts_count_towards_max=int(status.get("restartsCountTowardsMax") or 0),
        terminal_state=status.get("terminalState") or "",
        conditions=[pb.Condition(type=cd.get("type") or "", status=cd.get("status") or "",
                                 reason=cd.get("reason") or "", message=cd.get("message") or "",
                                 last_transition_time=cd.get("lastTransitionTime") or "")
                    for cd in status.get("conditions") or ()],
        replicated_jobs_status=[pb.ReplicatedJobStatus(
            name=r.get("name") or "", ready=r.get("ready") or 0,
            succeeded=r.get("succeeded") or 0, failed=r.get("failed") or 0,
            active=r.get("active") or 0, suspended=r.get("suspended") or 0,
            job_restarts=r.get("jobRestarts") or [],
            job_restarts_count_towards_max=r.get("jobRestartsCountTowardsMax") or [])
            for r in status.get("replicatedJobsStatus") or ()],
    )
    for key, attr in (("previousInPlaceRestartAttempt", "previous_in_place_restart_attempt"),
                      ("currentInPlaceRestartAttempt", "current_in_place_restart_attempt")):
        if status.get(key) is not None:
            setattr(msg, attr, status[key])
    return msg


def failure_policy_to_proto(d: FailureOutcome) -> pb.FailurePolicyDecision:
    return pb.FailurePolicyDecision(job=d.job, reason=d.reason, message=d.message, rule=d.rule,
                                    action=d.action)


_MAX_DURATION = timedelta(seconds=315_576_000_000)


def plan_to_proto(plan: Plan) -> pb.DecideResponse:
    msg = pb.DecideResponse(
        actions=[_action(a) for a in plan.actions],
        status=status_to_proto(plan.status),
        requeue_after_seconds=plan.requeue_after_seconds,
        explanation=plan.explanation,
        resource_version=plan.resource_version,
    )
    if plan.failure is not None:
        msg.failure_policy.CopyFrom(failure_policy_to_proto(plan.failure))
    if plan.requeue_after > timedelta(0):
        # google.protobuf.Duration ends at 10,000 years; only absurd dates reach past it.
        msg.requeue_after.FromTimedelta(min(plan.requeue_after, _MAX_DURATION))
    return msg


@dataclass(frozen=True, slots=True)
class Decision:
    """A decided request: the answer, and what it was decided from (for telemetry)."""

    response: pb.DecideResponse
    observed: Observed
    plan: Plan


def decision_id(method: str, request: Any) -> str:
    """The same request to the same decider version gets the same id. Hashed in deterministic
    form: two clients may order the same map differently."""
    digest = hashlib.sha256(f"{VERSION}\0{method}\0".encode())
    digest.update(request.SerializeToString(deterministic=True))
    return digest.hexdigest()[:32]


def decide_request(req: pb.DecideRequest, lim: Limits = limits.DEFAULT) -> Decision:
    """Decide one request; raises InvalidInput (naming the field) for input it cannot decide,
    TooLarge for a request or plan over the limits."""
    # Raw objects or their summaries: one request, one answer, one id.
    req = expanded(req, lim)
    observed = observed_from_proto(req, lim)
    plan = decide(observed)
    response = plan_to_proto(plan)
    response.decision_id = decision_id("Decide", req)
    return Decision(response, observed, plan)


def decide_response(req: pb.DecideRequest, lim: Limits = limits.DEFAULT) -> pb.DecideResponse:
    return decide_request(req, lim).response


def validate_response(req: pb.ValidateRequest,
                      lim: Limits = limits.DEFAULT) -> pb.ValidateResponse:
    """Admission: create (default, then validate) or update (validate against the old object).

    A batch/v1 Job is checked against the gang rules of options.gang_api_version (the 1.36
    parallelism freeze, 1.37 spec.scheduling); a JobSet by JobSet admission.
    """
    from decider.core import admission

    gates = feature_gates(req.options)
    obj = parse_object(req.object_json, "object_json", lim, in_field_paths=True)
    limits.check_objects(req.objects, lim)
    if _is_job(obj):
        return _validate_job(req, obj, lim)
    if req.old_object_json:
        old = parse_object(req.old_object_json, "old_object_json", lim)
        result = obj
        errors = admission.validate_update(obj, old, gates)
    else:
        pvcs = {o.name: parse_json(o.object_json, f"objects[{i}].object_json", lim)
                for i, o in enumerate(req.objects)
                if o.kind == "PersistentVolumeClaim" and o.object_json}
        result = admission.default_jobset(obj)
        errors = admission.validate_create(result, gates, pvcs)
    # A JobSet the decider would refuse to decide is refused at admission, where its author
    # sees why, rather than left to fail every reconcile.
    errors += [FieldError(f, m) for f, m in limits.jobset_replica_errors(result, lim)]
    return _validation(errors, result)


def _validation(errors: list[FieldError], obj: dict[str, Any]) -> pb.ValidateResponse:
    return pb.ValidateResponse(
        valid=not errors,
        errors=[pb.FieldError(field=e.field, message=e.message) for e in errors],
        object_json=_dumps(obj),
    )


def _is_job(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "Job" and str(obj.get("apiVersion", "")).startswith("batch/")


def _validate_job(req: pb.ValidateRequest, obj: dict[str, Any],
                  lim: Limits) -> pb.ValidateResponse:
    from decider.core.gang import validate_job_update

    api_version, _ = gang_choice(req.options)
    old = obj
    if req.old_object_json:
        old = parse_json(req.old_object_json, "old_object_json", lim)
        if not isinstance(old, dict) or not _is_job(old):
            raise InvalidInput.at("old_object_json", "must be a batch/v1 Job, as object_json is")
    # The admission plugin looks the PodGroup up; a caller that sends none lets the rules of
    # the generation say whether the old Job is gang scheduled.
    existing = _gang_objects(req.objects, lim)
    # A create is checked as an update from itself: only the rules on the new object apply.
    try:
        errors = validate_job_update(obj, old, api_version, existing or None)
    except InvalidInput as exc:
        raise _remap_existing(exc) from None
    return _validation(errors, obj)


def _gang_objects(objects: Any, lim: Limits) -> list[dict[str, Any]]:
    limits.check_count(len(objects), "objects", lim.max_observed, "observed objects")
    out = []
    for i, o in enumerate(objects):
        if not o.object_json:
            raise InvalidInput.at(f"objects[{i}].object_json", "Required value")
        out.append(parse_object(o.object_json, f"objects[{i}].object_json", lim))
    return out


def _remap_existing(exc: InvalidInput) -> InvalidInput:
    """The core names observed objects `existing[k]`; the request calls them `objects[k]`."""
    errors = []
    for e in exc.errors:
        field = e.field
        if field.startswith("existing["):
            head, _, rest = field.partition("]")
            field = f"objects[{head[len('existing['):]}].object_json{rest}"
        errors.append(FieldError(field, e.message))
    return type(exc)(errors)


def _subject(text: str, lim: Limits) -> dict[str, Any]:
    """The Job or JobSet a gang question is about, within the limits a Decide would apply."""
    obj = parse_object(text, "object_json", lim, in_field_paths=True)
    if obj.get("kind") == "JobSet":
        limits.check_jobset_replicas(obj, lim)
    return obj


def plan_gang_response(req: pb.PlanGangRequest,
                       lim: Limits = limits.DEFAULT) -> pb.PlanGangResponse:
    """Gang objects for a Job or JobSet; raises InvalidInput (naming the field) for bad input."""
    from decider.core.gang import plan_gang

    obj = _subject(req.object_json, lim)
    api_version, target = gang_choice(req.options)
    existing = _gang_objects(req.objects, lim)
    try:
        plan = plan_gang(obj, existing, api_version, target)
    except InvalidInput as exc:
        raise _remap_existing(exc) from None
    return pb.PlanGangResponse(
        objects_json=[_dumps(o) for o in plan.objects],
        pod_template_patches=[pb.PodTemplatePatch(job_name=name, patch_json=_dumps(patch))
                              for name, patch in plan.pod_template_patches.items()],
        explanation=plan.explanation,
        warnings=plan.warnings,
        job_annotations=[pb.JobAnnotations(job_name=name, annotations=annotations)
                         for name, annotations in plan.job_annotations.items()],
        updates=[pb.ObjectPatch(object=_ref(u), patch_type=str(u.get("patchType") or ""),
                                patch_json=_dumps(u.get("patch"))) for u in plan.updates],
        deletes=[_ref(d) for d in plan.deletes],
        mode=plan.mode,
    )


def _ref(ref: dict[str, Any]) -> pb.ObjectRef:
    return pb.ObjectRef(api_version=str(ref.get("apiVersion") or ""),
                        kind=str(ref.get("kind") or ""), name=str(ref.get("name") or ""),
                        uid=str(ref.get("uid") or ""))


def pod_sets_response(req: pb.PodSetsRequest, lim: Limits = limits.DEFAULT) -> pb.PodSetsResponse:
    """Kueue's pod sets of a Job or JobSet beside the gang minCount that covers each."""
    from decider.core.gang import pod_sets

    obj = _subject(req.object_json, lim)
    api_version, _ = gang_choice(req.options)
    out = pb.PodSetsResponse()
    for info in pod_sets(obj, api_version):
        msg = out.pod_sets.add(name=info.name, count=info.count, warnings=info.warnings)
        if info.replicated_job is not None:
            msg.replicated_job = info.replicated_job
        if info.gang_podgroup is not None:
            msg.gang.pod_group = info.gang_podgroup
            msg.gang.template = info.gang_template or ""
            msg.gang.pod_sets.extend(info.gang_pod_sets)
            if info.gang_min_count is not None:
                msg.gang.min_count = info.gang_min_count
        msg.pod_requests.update(info.pod_requests)
        msg.total_requests.update(info.total_requests)
        msg.node_selector.update(info.node_selector)
        msg.tolerations.extend(_toleration(t) for t in info.tolerations)
        if info.topology_request is not None:
            msg.topology_request.CopyFrom(_topology_request(info.topology_request))
    return out


def _toleration(t: Toleration) -> pb.Toleration:
    msg = pb.Toleration(key=t.key, operator=t.operator, value=t.value, effect=t.effect)
    if t.toleration_seconds is not None:
        msg.toleration_seconds = t.toleration_seconds
    return msg


_TOPOLOGY_FIELDS = {"required": "required", "preferred": "preferred",
                    "unconstrained": "unconstrained", "podIndexLabel": "pod_index_label",
                    "subGroupIndexLabel": "sub_group_index_label",
                    "subGroupCount": "sub_group_count", "podSetGroupName": "pod_set_group_name",
                    "podSetSliceRequiredTopology": "pod_set_slice_required_topology",
                    "podSetSliceSize": "pod_set_slice_size"}


def _topology_request(request: dict[str, Any]) -> pb.PodSetTopologyRequest:
    msg = pb.PodSetTopologyRequest()
    for key, value in request.items():
        setattr(msg, _TOPOLOGY_FIELDS[key], value)
    return msg


def simulate_response(req: pb.SimulateRequest,
                      lim: Limits = limits.DEFAULT) -> pb.SimulateResponse:
    """Simulate one request (decider/convert_simulate.py); InvalidInput naming the field."""
    from decider import convert_simulate

    return convert_simulate.simulate_response(req, lim)
