"""DecideResponse -> the plan's JSON shape (design.md, "The decision").

Every client prints plans through this one function, so a plan decided in-process and one
fetched over gRPC print the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from decider_api.names import (  # noqa: F401 - the names clients read from here
    ACTION_NAMES,
    ACTION_TYPES,
    SIMULATION_EVENT_NAMES,
    SIMULATION_EVENT_TYPES,
)
from decider_api.v1 import decider_pb2 as pb


def condition_to_dict(cond: pb.Condition) -> dict[str, Any]:
    return {"type": cond.type, "status": cond.status,
            "lastTransitionTime": cond.last_transition_time, "reason": cond.reason,
            "message": cond.message}


def status_to_dict(status: pb.JobSetStatus) -> dict[str, Any]:
    out: dict[str, Any] = {
        "restarts": status.restarts,
        "restartsCountTowardsMax": status.restarts_count_towards_max,
        "terminalState": status.terminal_state,
        "conditions": [condition_to_dict(cond) for cond in status.conditions],
        "replicatedJobsStatus": [],
    }
    for rjs in status.replicated_jobs_status:
        entry: dict[str, Any] = {"name": rjs.name, "ready": rjs.ready,
                                 "succeeded": rjs.succeeded, "failed": rjs.failed,
                                 "active": rjs.active, "suspended": rjs.suspended}
        if rjs.job_restarts:
            entry["jobRestarts"] = list(rjs.job_restarts)
        if rjs.job_restarts_count_towards_max:
            entry["jobRestartsCountTowardsMax"] = list(rjs.job_restarts_count_towards_max)
        out["replicatedJobsStatus"].append(entry)
    if status.HasField("previous_in_place_restart_attempt"):
        out["previousInPlaceRestartAttempt"] = status.previous_in_place_restart_attempt
    if status.HasField("current_in_place_restart_attempt"):
        out["currentInPlaceRestartAttempt"] = status.current_in_place_restart_attempt
    # Only when set, as the API server serves them (both omitempty upstream).
    if status.HasField("execution_attempts"):
        out["executionAttempts"] = status.execution_attempts
    if status.start_time:
        out["startTime"] = status.start_time
    return out


def action_to_dict(action: pb.Action) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ACTION_NAMES.get(action.type, "Unspecified"),
                           "name": action.name}
    if action.namespace:
        out["namespace"] = action.namespace
    if action.kind:
        out["apiVersion"] = action.api_version
        out["kind"] = action.kind
    if action.uid:
        out["uid"] = action.uid
    if action.object_json:
        out["object"] = json.loads(action.object_json)
    if action.patch_json:
        out["patch"] = json.loads(action.patch_json)
    if action.clear_start_time:
        out["clearStartTime"] = True
    if action.propagation_policy:
        out["propagationPolicy"] = action.propagation_policy
    if action.HasField("event"):
        out["event"] = {"type": action.event.type, "reason": action.event.reason,
                        "message": action.event.message}
    if action.HasField("status"):
        out["status"] = status_to_dict(action.status)
    if action.HasField("on_failure"):
        out["onFailure"] = {"type": action.on_failure.type, "reason": action.on_failure.reason,
                            "message": action.on_failure.message}
    if action.reason:
        out["reason"] = action.reason
    return out


def failure_policy_to_dict(decision: pb.FailurePolicyDecision) -> dict[str, Any]:
    return {"job": decision.job, "reason": decision.reason, "message": decision.message,
            "rule": decision.rule, "action": decision.action}


def plan_to_dict(response: pb.DecideResponse) -> dict[str, Any]:
    out: dict[str, Any] = {
        "actions": [action_to_dict(a) for a in response.actions],
        "status": status_to_dict(response.status),
        "requeueAfterSeconds": response.requeue_after_seconds,
    }
    # Only when a requeue is asked, in protobuf's JSON form of a Duration ("4.012s"); plans
    # without one print as they always did.
    if response.HasField("requeue_after"):
        out["requeueAfter"] = response.requeue_after.ToJsonString()
    out["explanation"] = list(response.explanation)
    # Only when the failure policy applied: plans of every other pass print as they always did.
    if response.HasField("failure_policy"):
        out["failurePolicy"] = failure_policy_to_dict(response.failure_policy)
    return out


def validation_to_dict(response: pb.ValidateResponse) -> dict[str, Any]:
    if response.valid:
        return {"valid": True, "object": json.loads(response.object_json or "null")}
    return {"valid": False,
            "errors": [{"field": e.field, "message": e.message} for e in response.errors]}


def _ref_to_dict(ref: pb.ObjectRef) -> dict[str, Any]:
    return {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}


def gang_plan_to_dict(response: pb.PlanGangResponse) -> dict[str, Any]:
    """The gang plan's JSON shape: the keys and order of the core's GangPlan.to_dict()."""
    out: dict[str, Any] = {
        "objects": [json.loads(o) for o in response.objects_json],
        "podTemplatePatches": {p.job_name: json.loads(p.patch_json)
                               for p in response.pod_template_patches},
        "explanation": list(response.explanation),
    }
    if response.warnings:
        out["warnings"] = list(response.warnings)
    if response.job_annotations:
        # Sorted: a proto map has no order, and the bytes must not depend on the transport.
        out["jobAnnotations"] = {a.job_name: dict(sorted(a.annotations.items()))
                                 for a in response.job_annotations}
    if response.updates:
        out["updates"] = [{**_ref_to_dict(u.object), "patchType": u.patch_type,
                           "patch": json.loads(u.patch_json or "null")}
                          for u in response.updates]
    if response.deletes:
        out["deletes"] = [_ref_to_dict(d) for d in response.deletes]
    out["mode"] = response.mode
    return out


def pod_sets_to_dict(response: pb.PodSetsResponse) -> dict[str, Any]:
    """Pod sets as the core's PodSetInfo.to_dict() spells them, under "podSets"."""
    sets = []
    for ps in response.pod_sets:
        gang = None
        if ps.HasField("gang"):
            gang = {"podGroup": ps.gang.pod_group, "template": ps.gang.template,
                    "minCount": ps.gang.min_count if ps.gang.HasField("min_count") else None,
                    "podSets": list(ps.gang.pod_sets)}
            if ps.gang.composite_groups:  # JobSetGangOfGangs: the tree above the pod set
                gang["podGroups"] = list(ps.gang.pod_groups)
                gang["compositePodGroups"] = [
                    {"name": c.name, "template": c.template,
                     "minGroupCount": c.min_group_count if c.HasField("min_group_count")
                     else None, "children": c.children}
                    for c in ps.gang.composite_groups]
        sets.append({"name": ps.name, "count": ps.count,
                     **({"minCount": ps.min_count} if ps.HasField("min_count") else {}),
                     "replicatedJob": ps.replicated_job if ps.HasField("replicated_job")
                     else None,
                     "gang": gang, "warnings": list(ps.warnings),
                     # Sorted: a proto map has no order, and the bytes must not depend on the
                     # transport.
                     "podRequests": dict(sorted(ps.pod_requests.items())),
                     "totalRequests": dict(sorted(ps.total_requests.items())),
                     "nodeSelector": dict(sorted(ps.node_selector.items())),
                     "tolerations": [toleration_to_dict(t) for t in ps.tolerations],
                     "topologyRequest": topology_request_to_dict(ps.topology_request)
                     if ps.HasField("topology_request") else None})
    return {"podSets": sets}


def toleration_to_dict(t: pb.Toleration) -> dict[str, Any]:
    """A toleration as the pod spec spells it, empty fields left out."""
    out: dict[str, Any] = {k: v for k, v in (("key", t.key), ("operator", t.operator),
                                             ("value", t.value), ("effect", t.effect)) if v}
    if t.HasField("toleration_seconds"):
        out["tolerationSeconds"] = t.toleration_seconds
    return out


_TOPOLOGY_KEYS = (("required", "required"), ("preferred", "preferred"),
                  ("unconstrained", "unconstrained"), ("podIndexLabel", "pod_index_label"),
                  ("subGroupIndexLabel", "sub_group_index_label"),
                  ("subGroupCount", "sub_group_count"), ("podSetGroupName", "pod_set_group_name"),
                  ("podSetSliceRequiredTopology", "pod_set_slice_required_topology"),
                  ("podSetSliceSize", "pod_set_slice_size"))


def topology_request_to_dict(req: pb.PodSetTopologyRequest) -> dict[str, Any]:
    """Kueue's PodSetTopologyRequest, its fields in Kueue's order, unset ones left out."""
    out = {key: getattr(req, attr) for key, attr in _TOPOLOGY_KEYS if req.HasField(attr)}
    if req.podset_slice_required_topology_constraints:
        out["podsetSliceRequiredTopologyConstraints"] = [
            {"topology": c.topology, "size": c.size}
            for c in req.podset_slice_required_topology_constraints]
    return out


def simulation_event_to_dict(event: pb.SimulationEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"at": event.at_seconds,
                           "type": SIMULATION_EVENT_NAMES.get(event.type, "Unspecified")}
    if event.job:
        out["job"] = event.job
    if event.type == pb.SIMULATION_EVENT_TYPE_JOB_FAILED:
        out["reason"] = event.reason or "BackoffLimitExceeded"
        out["message"] = event.message
    return out


def outcome_to_dict(outcome: pb.SimulationOutcome) -> dict[str, Any]:
    """The outcome, its counters spelled as the JobSet status spells them."""
    recreated = []
    for job in outcome.recreated_jobs:
        entry: dict[str, Any] = {"name": job.name, "restartAttempt": job.restart_attempt}
        if job.HasField("job_restart_attempt"):
            entry["jobRestartAttempt"] = job.job_restart_attempt
        recreated.append(entry)
    return {
        "terminalState": outcome.terminal_state,
        "reason": outcome.reason,
        "restarts": outcome.restarts,
        "restartsCountTowardsMax": outcome.restarts_count_towards_max,
        "restartsLeft": outcome.restarts_left,
        "recreatedJobs": recreated,
        "deletedJobs": list(outcome.deleted_jobs),
        "failurePolicy": [failure_policy_to_dict(d) for d in outcome.failure_policy],
        "summary": outcome.summary,
        "passes": outcome.passes,
        "settled": outcome.settled,
        "endTime": outcome.end_time,
        "jobSetDeleted": outcome.jobset_deleted,
        "eventsNotApplied": list(outcome.events_not_applied),
        # Only when the active deadline failed the JobSet: other outcomes print as before.
        **({"deadlineExceededTime": outcome.deadline_exceeded_time}
           if outcome.deadline_exceeded_time else {}),
    }


def simulation_to_dict(response: pb.SimulateResponse) -> dict[str, Any]:
    return {
        "steps": [{"pass": s.pass_number, "time": s.time, "at": s.at_seconds,
                   "events": [simulation_event_to_dict(e) for e in s.events],
                   "plan": plan_to_dict(s.plan)} for s in response.steps],
        "outcome": outcome_to_dict(response.outcome),
    }


def dumps(data: Any, fmt: str = "json") -> str:
    """The CLI's one serialization: indented JSON, or YAML with keys in the same order."""
    if fmt == "yaml":
        # Imported here: JSON output, the default, need not load PyYAML.
        from decider_client import yaml_guard

        return yaml_guard.dump(data)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
