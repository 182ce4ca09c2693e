"""The contract <-> the core: proto messages in, core data out, and back.

The server and the in-process CLI both decide through `decide_response`, so a plan has one
wire form whichever way it was asked for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any

import orjson

from decider.contract import jobset_texts, json_input, limits
from decider.contract.limits import Limits
from decider.contract.observed_origins import Origins, Sent
from decider.contract.proto_view import job_views, pod_template
from decider.core.decide import decide
from decider.core.errors import FieldError, InvalidInput, TooLarge
from decider.core.job_manifests import LazyJobAction
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
)
from decider.version import VERSION
from decider_api import observed_shape, summarize
from decider_api.names import ACTION_TYPES
from decider_api.v1 import decider_pb2 as pb


def parse_json(text: str, field: str, lim: Limits = limits.DEFAULT, *,
               in_field_paths: bool = False) -> Any:
    return json_input.load(text, field, lim.max_json_depth, in_field_paths=in_field_paths)


def observed(obj: Any, field: str, kind: str = "") -> dict[str, Any]:
    """`obj`, the request's field `field`, through the one check of every observed object
    (decider_api/observed_shape.py: the types of its metadata and of what the decider reads
    of its spec and status); InvalidInput naming the first field of a wrong type. kind: the
    kind a typed entry declares. An empty `field` names the fields by their paths alone."""
    try:
        return observed_shape.check_observed(obj, field, kind)
    except observed_shape.ObservationError as exc:
        raise InvalidInput.at(exc.field, exc.message) from None


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
        pod_template=pod_template(msg),
        resource_version=msg.resource_version,
    )


def _object(msg: pb.ObservedObject, index: int, lim: Limits) -> ObservedObject:
    field = f"objects[{index}].object_json"
    obj = observed(parse_json(msg.object_json, field, lim), field, msg.kind) \
        if msg.object_json else None
    return ObservedObject(api_version=msg.api_version, kind=msg.kind, name=msg.name,
                          uid=msg.uid, controller_uid=msg.controller_uid, obj=obj)


def _check_job_names(jobs: Any, field_of: Callable[[int], str]) -> None:
    # The field is named only for a name found wrong: ten thousand f-strings a request cost
    # more than the check.
    seen: set[str] = set()
    for i, job in enumerate(jobs):
        name = job.name
        if not name:
            raise InvalidInput.at(field_of(i), "Required value")
        if len(name) > limits.MAX_NAME_BYTES:
            raise InvalidInput.at(field_of(i), f"must be no more than {limits.MAX_NAME_BYTES} "
                                               "characters")
        # A namespace holds one object of a name: a Job given twice (two listings pasted
        # together) would be counted twice in the status that is written.
        if name in seen:
            raise InvalidInput.at(field_of(i), f"Duplicate value: {name!r}: a Job is observed "
                                               "once")
        seen.add(name)


def _summarized(req: pb.DecideRequest, lim: Limits) -> tuple[pb.DecideRequest, Sent]:
    """The objects of `observed_json`, summarized into a request's typed lists by the same code
    the Python client uses, so that sending them whole or summarized decides alike; and which
    object each summary came from."""
    out = pb.DecideRequest()
    limits.check_count(len(req.observed_json), "observed_json", lim.max_observed,
                       "observed objects")
    # An index per summary, not a field name: a name is made only for an error.
    sent = Sent(jobs=[], objects=[], pods=[])
    # The same rule as a client's summaries (summarize.wants_containers); the JobSet is read
    # for it only under the gate.
    containers = False
    jobset: Any = None
    if req.options.feature_gates.get(summarize.MUTABLE_POD_RESOURCES) or any(
            '"Pod"' in text for text in req.observed_json):
        try:
            jobset = json.loads(req.jobset_json)
        except ValueError:
            jobset = None  # refused by the JobSet's own check, later, naming its field
        containers = summarize.wants_containers(jobset, req.options.feature_gates)
    for i, text in enumerate(req.observed_json):
        field = f"observed_json[{i}]"
        limits.check_object_bytes(text, field, lim)
        # add_observed summarizes through the one check of every observed object.
        obj = parse_object(text, field, lim)
        before = (len(out.jobs), len(out.pods))
        try:
            # Upstream lists a JobSet's pods by its jobset-name label: others are left out.
            if not summarize.add_observed(out, obj, field, containers,
                                          jobset if isinstance(jobset, dict) else None):
                sent.unlisted_pods.append(str((obj.get("metadata") or {}).get("name") or ""))
                continue
        except summarize.ObservationError as exc:
            raise InvalidInput.at(exc.field, exc.message) from None
        added: Any = None
        if len(out.jobs) > before[0]:
            sent.jobs.append(i)
            added = out.jobs[-1]
        elif len(out.pods) > before[1]:
            sent.pods.append(i)
            added = out.pods[-1]
        else:
            sent.objects.append(i)
        # A typed field holds no string over max_string_bytes; a summary made here is held to
        # the same, naming the object it came from.
        if added is not None and added.ByteSize() > lim.max_string_bytes:
            try:
                limits.check_strings([added], field, lim)
            except InvalidInput as exc:
                raise InvalidInput([FieldError(e.field.replace(f"{field}[0]", field, 1),
                                               e.message) for e in exc.errors]) from None
    _check_job_names(out.jobs, lambda k: f"observed_json[{sent.jobs[k]}].metadata.name")
    return out, sent


def _expand(req: pb.DecideRequest,
            lim: Limits) -> tuple[pb.DecideRequest, Origins | None]:
    """expanded(), and where its entries came from (None: `req` itself, nothing sent whole)."""
    if not req.observed_json:
        return req, None
    raw, sent = _summarized(req, lim)
    out = pb.DecideRequest()
    out.CopyFrom(req)
    out.ClearField("observed_json")
    out.jobs.extend(raw.jobs)
    out.objects.extend(raw.objects)
    out.pods.extend(raw.pods)
    typed = {"jobs": len(req.jobs), "objects": len(req.objects), "pods": len(req.pods)}
    return out, Origins(typed, sent, out.jobs)


def expanded(req: pb.DecideRequest, lim: Limits = limits.DEFAULT) -> pb.DecideRequest:
    """`req` as the Python client would have sent it: the objects of observed_json summarized
    into the typed lists, after the typed entries, in order. `req` itself when it has none.
    Everything after this (limits, decision, decision_id) sees one form of a request."""
    return _expand(req, lim)[0]


def _job_field(i: int) -> str:
    return f"jobs[{i}].name"


def observed_from_proto(req: pb.DecideRequest, lim: Limits = limits.DEFAULT, *,
                        views: bool = False, received: bytes | None = None) -> Observed:
    """The core's input. views: the Jobs as views over their messages (proto_view.py), for a
    caller that decides once and lets go; else copied into ObservedJobs it may keep.
    received: the bytes `req` was parsed from, when it was (limits.py). An error about an
    object of observed_json names it there, `observed_json[i].<its JSON path>`."""
    expanded_req, origins = _expand(req, lim)
    if origins is None:
        return _observed(req, lim, views, received)
    # Summaries made here hold strings the received bytes did not.
    try:
        return _observed(expanded_req, lim, views, None)
    except (InvalidInput, TooLarge) as exc:
        renamed = origins.renamed(exc)
        if renamed is exc:
            raise
        raise renamed from None


def _observed(req: pb.DecideRequest, lim: Limits, views: bool,
              received: bytes | None) -> Observed:
    """observed_from_proto of a request with nothing sent whole; errors name typed fields."""
    limits.check_decide_request(req, lim, received)
    if not req.HasField("now"):
        raise InvalidInput.at("now", "Required value")
    # A view has read its Job's name already: checked there, not read again.
    jobs = job_views(req.jobs) if views else None
    _check_job_names(jobs if jobs is not None else req.jobs, _job_field)
    # A JobSet text decided before is not read or checked again (jobset_texts.py); only the
    # one-decision path may share the core's copy.
    jobset = jobset_texts.TEXTS.get(req.jobset_json, lim) if views else None
    if jobset is None:
        jobset = parse_object(req.jobset_json, "jobset_json", lim, in_field_paths=True)
        limits.check_jobset_replicas(jobset, lim)
    return Observed(
        jobset=jobset,
        now=req.now.ToDatetime(tzinfo=UTC),
        jobs=jobs if jobs is not None else [_job(j) for j in req.jobs],
        objects=[_object(o, i, lim) for i, o in enumerate(req.objects)],
        pods=[ObservedPod(name=p.name, phase=p.phase, annotations=dict(p.annotations),
                          max_container_restarts=p.max_container_restarts) for p in req.pods],
        options=options_from_proto(req.options, lim),
    )


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _dumps_plain(obj: Any) -> str:
    """_dumps for an object the core vouches is plain JSON (Action.plain_json): orjson writes
    such data byte for byte as json does, ten times faster (decider/core/plain_json.py)."""
    try:
        return orjson.dumps(obj).decode()
    except orjson.JSONEncodeError:  # a key or value orjson will not write; json decides
        return _dumps(obj)


def _action(a: Action) -> pb.Action:
    msg = pb.Action()
    _fill_action(msg, a)
    return msg


def _fill_action(msg: pb.Action, a: Action) -> None:
    # Field by field, and only what is set: a plan of ten thousand actions is built in place
    # (an unset proto3 field and one set to its default are the same bytes).
    msg.type = ACTION_TYPES[a.type]
    if a.name:
        msg.name = a.name
    if a.namespace:
        msg.namespace = a.namespace
    if a.api_version:
        msg.api_version = a.api_version
    if a.kind:
        msg.kind = a.kind
    if a.uid:
        msg.uid = a.uid
    if a.clear_start_time:
        msg.clear_start_time = a.clear_start_time
    if a.propagation_policy:
        msg.propagation_policy = a.propagation_policy
    if a.reason:
        msg.reason = a.reason
    wire = a.wire_json() if type(a) is LazyJobAction else None
    if wire is not None:
        msg.object_json = wire
    elif a.object is not None:
        msg.object_json = _dumps_plain(a.object) if a.plain_json else _dumps(a.object)
    if a.patch is not None:
        msg.patch_json = _dumps(a.patch)
    if a.event is not None:
        msg.event.CopyFrom(pb.Event(type=a.event.type, reason=a.event.reason,
                                    message=a.event.message))
    if a.on_failure is not None:
        msg.on_failure.CopyFrom(pb.Event(type=a.on_failure.type, reason=a.on_failure.reason,
                                         message=a.on_failure.message))
    if a.status is not None:
        msg.status.SetInParent()
        _fill_status(msg.status, a.status)


def status_to_proto(status: dict[str, Any]) -> pb.JobSetStatus:
    msg = pb.JobSetStatus()
    _fill_status(msg, status)
    return msg


def _fill_status(msg: pb.JobSetStatus, status: dict[str, Any]) -> None:
    # In place, only what is set (the same bytes as a message built from keyword arguments,
    # without building and copying one message per entry).
    value = int(status.get("restarts") or 0)
    if value:
        msg.restarts = value
    value = int(status.get("restartsCountTowardsMax") or 0)
    if value:
        msg.restarts_count_towards_max = value
    terminal = status.get("terminalState") or ""
    if terminal:
        msg.terminal_state = terminal
    add = msg.conditions.add
    for cd in status.get("conditions") or ():
        add(type=cd.get("type") or "", status=cd.get("status") or "",
            reason=cd.get("reason") or "", message=cd.get("message") or "",
            last_transition_time=cd.get("lastTransitionTime") or "")
    add = msg.replicated_jobs_status.add
    for r in status.get("replicatedJobsStatus") or ():
        entry = add(name=r.get("name") or "", ready=r.get("ready") or 0,
                    succeeded=r.get("succeeded") or 0, failed=r.get("failed") or 0,
                    active=r.get("active") or 0, suspended=r.get("suspended") or 0)
        restarts = r.get("jobRestarts")
        if restarts:
            entry.job_restarts.extend(restarts)
        restarts = r.get("jobRestartsCountTowardsMax")
        if restarts:
            entry.job_restarts_count_towards_max.extend(restarts)
    for key, attr in (("previousInPlaceRestartAttempt", "previous_in_place_restart_attempt"),
                      ("currentInPlaceRestartAttempt", "current_in_place_restart_attempt"),
                      ("executionAttempts", "execution_attempts")):
        if status.get(key) is not None:
            setattr(msg, attr, status[key])
    start = status.get("startTime")
    if start:
        msg.start_time = start


def failure_policy_to_proto(d: FailureOutcome) -> pb.FailurePolicyDecision:
    return pb.FailurePolicyDecision(job=d.job, reason=d.reason, message=d.message, rule=d.rule,
                                    action=d.action)


_MAX_DURATION = timedelta(seconds=315_576_000_000)


def plan_to_proto(plan: Plan) -> pb.DecideResponse:
    msg = pb.DecideResponse(
        requeue_after_seconds=plan.requeue_after_seconds,
        explanation=plan.explanation,
        resource_version=plan.resource_version,
    )
    if plan.failure is not None:
        msg.failure_policy.CopyFrom(failure_policy_to_proto(plan.failure))
    if plan.requeue_after > timedelta(0):
        # google.protobuf.Duration ends at 10,000 years; only absurd dates reach past it.
        msg.requeue_after.FromTimedelta(min(plan.requeue_after, _MAX_DURATION))
    # Filled in place: a message given to the constructor is copied.
    msg.status.SetInParent()
    _fill_status(msg.status, plan.status)
    add = msg.actions.add
    for a in plan.actions:
        _fill_action(add(), a)
    return msg


@dataclass(frozen=True, slots=True)
class Decision:
    """A decided request: the answer, and what it was decided from (for telemetry)."""

    response: pb.DecideResponse
    observed: Observed
    plan: Plan


def decision_id(method: str, request: Any) -> str:
    """The same request to the same decider version gets the same id. Hashed in deterministic
    form, not as the bytes received: two clients may order the same map differently (or write
    fields in another order), a request of whole objects must get the id of its summarized form
    (one request, one answer), and the in-process CLI has no received bytes at all. The
    serialization costs about a microsecond per Job (~5-9 ms of a 10,000-Job request, measured
    with bench/decide_bench.py's cases), which is the price of those three properties."""
    digest = hashlib.sha256(f"{VERSION}\0{method}\0".encode())
    digest.update(request.SerializeToString(deterministic=True))
    return digest.hexdigest()[:32]


def decide_request(req: pb.DecideRequest, lim: Limits = limits.DEFAULT, *,
                   received: bytes | None = None) -> Decision:
    """Decide one request; raises InvalidInput (naming the field) for input it cannot decide,
    TooLarge for a request or plan over the limits. received: the bytes `req` was parsed
    from, when it was (the server's path)."""
    # Raw objects or their summaries: one request, one answer, one id.
    expanded_req, origins = _expand(req, lim)
    if origins is not None:
        req, received = expanded_req, None
    try:
        observed = _observed(req, lim, True, received)
        plan = decide(observed)
    except (InvalidInput, TooLarge) as exc:
        # The checks name typed fields; an object sent whole is named as it was sent.
        renamed = origins.renamed(exc) if origins is not None else exc
        if renamed is exc:
            raise
        raise renamed from None
    jobset_texts.TEXTS.decided(req.jobset_json, lim, observed.jobset)
    if origins is not None and origins.sent.unlisted_pods:
        plan.explanation.append(summarize.unlisted_pods_sentence(origins.sent.unlisted_pods,
                                                                 observed.jobset))
    response = plan_to_proto(plan)
    response.decision_id = decision_id("Decide", req)
    return Decision(response, observed, plan)


def decide_response(req: pb.DecideRequest, lim: Limits = limits.DEFAULT) -> pb.DecideResponse:
    return decide_request(req, lim).response
