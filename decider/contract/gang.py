"""The gang contract (PlanGang, PodSets) <-> the core's gang rules (decider/core/gang/).

Split from convert.py, which keeps the Decide path; the helpers that read observed gang objects
are shared with Validate (convert_validate.py).
"""

from __future__ import annotations

from typing import Any

from decider.contract import limits
from decider.contract.convert import _dumps, feature_gates, gang_choice, observed, parse_object
from decider.contract.limits import Limits
from decider.core.errors import FieldError, InvalidInput
from decider.core.model import Toleration
from decider_api.v1 import decider_pb2 as pb


def _gang_objects(objects: Any, lim: Limits) -> list[dict[str, Any]]:
    limits.check_count(len(objects), "objects", lim.max_observed, "observed objects")
    out = []
    for i, o in enumerate(objects):
        if not o.object_json:
            raise InvalidInput.at(f"objects[{i}].object_json", "Required value")
        field = f"objects[{i}].object_json"
        out.append(observed(parse_object(o.object_json, field, lim), field, o.kind))
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
    obj = observed(parse_object(text, "object_json", lim, in_field_paths=True), "")
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
    gates = feature_gates(req.options)
    try:
        plan = plan_gang(obj, existing, api_version, target, gates)
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
    for info in pod_sets(obj, api_version, feature_gates(req.options)):
        msg = out.pod_sets.add(name=info.name, count=info.count, warnings=info.warnings)
        if info.replicated_job is not None:
            msg.replicated_job = info.replicated_job
        if info.min_count is not None:
            msg.min_count = info.min_count
        if info.gang_podgroup is not None:
            msg.gang.pod_group = info.gang_podgroup
            msg.gang.template = info.gang_template or ""
            msg.gang.pod_sets.extend(info.gang_pod_sets)
            if info.gang_min_count is not None:
                msg.gang.min_count = info.gang_min_count
            msg.gang.pod_groups.extend(info.gang_pod_groups)
            for c in info.gang_composites:
                group = msg.gang.composite_groups.add(name=c["name"], template=c["template"],
                                                      children=c["children"])
                if c["minGroupCount"] is not None:
                    group.min_group_count = c["minGroupCount"]
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
        if key == "podsetSliceRequiredTopologyConstraints":
            msg.podset_slice_required_topology_constraints.extend(
                pb.PodsetSliceRequiredTopologyConstraint(topology=layer["topology"],
                                                         size=layer["size"])
                for layer in value)
        else:
            setattr(msg, _TOPOLOGY_FIELDS[key], value)
    return msg
