"""The contract <-> the core: proto messages in, core data out, and back.

The server and the in-process CLI both decide through `decide_response`, so a plan has one
wire form whichever way it was asked for.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from decider.core.decide import decide
from decider.core.errors import InvalidInput
from decider.core.model import (
    Action,
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
from decider.v1 import decider_pb2 as pb

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
}


def parse_json(text: str, field: str) -> Any:
    if not text:
        raise InvalidInput.at(field, "Required value")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidInput.at(field, f"is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput.at(field, "is nested too deeply") from None


def options_from_proto(opts: pb.Options) -> Options:
    return Options(controller_name=opts.controller_name, feature_gates=dict(opts.feature_gates))


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


def _object(msg: pb.ObservedObject, index: int) -> ObservedObject:
    obj = parse_json(msg.object_json, f"objects[{index}].object_json") if msg.object_json \
        else None
    return ObservedObject(api_version=msg.api_version, kind=msg.kind, name=msg.name,
                          uid=msg.uid, controller_uid=msg.controller_uid, obj=obj)


def observed_from_proto(req: pb.DecideRequest) -> Observed:
    if not req.HasField("now"):
        raise InvalidInput.at("now", "Required value")
    for i, job in enumerate(req.jobs):
        if not job.name:
            raise InvalidInput.at(f"jobs[{i}].name", "Required value")
    return Observed(
        jobset=parse_json(req.jobset_json, "jobset_json"),
        now=req.now.ToDatetime(tzinfo=UTC),
        jobs=[_job(j) for j in req.jobs],
        objects=[_object(o, i) for i, o in enumerate(req.objects)],
        pods=[ObservedPod(name=p.name, phase=p.phase, annotations=dict(p.annotations),
                          max_container_restarts=p.max_container_restarts) for p in req.pods],
        options=options_from_proto(req.options),
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


def plan_to_proto(plan: Plan) -> pb.DecideResponse:
    return pb.DecideResponse(
        actions=[_action(a) for a in plan.actions],
        status=status_to_proto(plan.status),
        requeue_after_seconds=plan.requeue_after_seconds,
        explanation=plan.explanation,
        resource_version=plan.resource_version,
    )


def decide_response(req: pb.DecideRequest) -> pb.DecideResponse:
    """Decide one request; raises InvalidInput (naming the field) for input it cannot decide."""
    return plan_to_proto(decide(observed_from_proto(req)))


def now_utc() -> datetime:
    return datetime.now(UTC)


def validate_response(req: pb.ValidateRequest) -> pb.ValidateResponse:
    """Admission: create (default, then validate) or update (validate against the old object)."""
    from decider.core import admission

    obj = parse_json(req.object_json, "object_json")
    if not isinstance(obj, dict):
        raise InvalidInput.at("object_json", "must be a JSON object")
    gates = dict(req.options.feature_gates)
    if req.old_object_json:
        old = parse_json(req.old_object_json, "old_object_json")
        if not isinstance(old, dict):
            raise InvalidInput.at("old_object_json", "must be a JSON object")
        result = obj
        errors = admission.validate_update(obj, old, gates)
    else:
        pvcs = {o.name: parse_json(o.object_json, f"objects[{i}].object_json")
                for i, o in enumerate(req.objects)
                if o.kind == "PersistentVolumeClaim" and o.object_json}
        result = admission.default_jobset(obj)
        errors = admission.validate_create(result, gates, pvcs)
    return pb.ValidateResponse(
        valid=not errors,
        errors=[pb.FieldError(field=e.field, message=e.message) for e in errors],
        object_json=_dumps(result),
    )
