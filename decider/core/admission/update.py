"""validate_update: the API server's update pipeline for a JobSet.

Both objects get the CRD's structural defaults (the API server applies them to what it reads
from storage and to what it receives); the mutating webhook runs on create only. Then the
schema and CEL rules on the new object and the transition rules between the two; only if
those pass, upstream's validating webhook on update (spec §3.4) and this project's rules.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from decider.core import constants as c
from decider.core.admission import cel, crd, independent, scheduling, types
from decider.core.admission._util import (
    as_dict,
    as_int,
    as_list,
    gate_values,
    semantic_equal,
    typed_equal,
)
from decider.core.admission.create import (
    active_deadline_gate_errors,
    rjob_name_errors,
    unknown_field_errors,
)
from decider.core.admission.defaulting import apply_structural_defaults
from decider.core.admission.schema import schema_errors
from decider.core.errors import FieldError

FIELD_IMMUTABLE = "field is immutable"
# Pod-template fields Kueue must be able to change while a JobSet is (being) suspended, as
# the webhook lists them: metadata labels and annotations, and these pod spec fields.
_SUSPENDED_MUTABLE_POD_SPEC = ("nodeSelector", "tolerations", "schedulingGates")
# ... and with MutablePodResourcesForSuspendedJobSets (#1273), these containers' resources.
_RESOURCE_CONTAINERS = ("containers", "initContainers")
# The schema node of spec.replicatedJobs ([]ReplicatedJob), for the typed comparison.
_REPLICATED_JOBS = crd.SPEC.props["replicatedJobs"]


def _is_terminal(obj: Any) -> bool:
    for cond in as_list(as_dict(as_dict(obj).get("status")).get("conditions")):
        cond = as_dict(cond)
        if cond.get("type") in ("Completed", "Failed") and cond.get("status") == "True":
            return True
    return False


def _is_indexed(rjob: dict[str, Any]) -> bool:
    job_spec = as_dict(as_dict(rjob.get("template")).get("spec"))
    return job_spec.get("completionMode") == c.INDEXED


def _job_spec(rjob: Any) -> dict[str, Any]:
    """The rjob's template.spec for writing into; {} (detached) if it is not there."""
    return as_dict(as_dict(as_dict(rjob).get("template")).get("spec"))


def _matching_old(rjob: Any, old_by_name: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The old rjob of the same name: the webhook matches by name, not position."""
    name = as_dict(rjob).get("name")
    return old_by_name.get(name) if isinstance(name, str) else None


def _copy_field(dst: dict[str, Any], src: dict[str, Any], key: str) -> None:
    """dst[key] = src[key], where an absent source field makes the destination absent."""
    if key in src:
        dst[key] = copy.deepcopy(src[key])
    else:
        dst.pop(key, None)


def _elastic_errors(
    new_spec: dict[str, Any],
    munged: list[Any],
    old_by_name: Mapping[str, dict[str, Any]],
    terminal: bool,
) -> list[FieldError]:
    """Gate ElasticJobSet: parallelism/completions of Indexed rjobs may change, kept equal
    and >= 1, while the JobSet is not finished."""
    errs: list[FieldError] = []
    for i, rjob in enumerate(as_list(new_spec.get("replicatedJobs"))):
        old = _matching_old(rjob, old_by_name)
        if old is None or not _is_indexed(as_dict(rjob)):
            continue
        path = f"spec.replicatedJobs[{i}].template.spec"
        new_js, old_js = _job_spec(rjob), _job_spec(old)
        parallelism, completions = new_js.get("parallelism"), new_js.get("completions")
        p_changed = not semantic_equal(parallelism, old_js.get("parallelism"))
        c_changed = not semantic_equal(completions, old_js.get("completions"))
        if p_changed or c_changed:
            if terminal:
                errs.append(
                    FieldError(
                        path,
                        "Cannot mutate parallelism or completions when JobSet is in a terminal "
                        "state (Completed or Failed)",
                    )
                )
            else:
                p, n = as_int(parallelism), as_int(completions)
                if p_changed and p is not None and p < 1:
                    errs.append(FieldError(f"{path}.parallelism", "parallelism must be >= 1"))
                if c_changed and n is not None and n < 1:
                    errs.append(FieldError(f"{path}.completions", "completions must be >= 1"))
                if p is not None and n is not None and p != n:
                    errs.append(
                        FieldError(
                            f"{path}.completions",
                            "completions must be equal to parallelism for Elastic Indexed Jobs",
                        )
                    )
        # Mask both in the compared copy, so only the checks above judge them.
        target = _job_spec(munged[i])
        _copy_field(target, old_js, "parallelism")
        _copy_field(target, old_js, "completions")
    return errs


def _child(parent: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """parent[key] for writing into, created ({}) when absent or null; None when it holds
    something else (a shape the comparison then judges as sent)."""
    if parent is None:
        return None
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _mask_container_resources(pod_spec: dict[str, Any], old_pod_spec: dict[str, Any]) -> None:
    """mungeContainerResources (#1273): each container in the compared copy takes the requests
    and limits of the old container of the same name, so those may change; a container without
    a namesake, and every other field (resources.claims included), is compared as sent."""
    for key in _RESOURCE_CONTAINERS:
        containers = pod_spec.get(key)
        if not isinstance(containers, list) or not containers:
            continue
        old_resources: dict[str, dict[str, Any]] = {}
        for old in as_list(old_pod_spec.get(key)):
            old = as_dict(old)
            if isinstance(old.get("name"), str):
                # A Go map filled in list order: a later namesake wins.
                old_resources[old["name"]] = as_dict(old.get("resources"))
        for container in containers:
            if not isinstance(container, dict) or container.get("name") not in old_resources:
                continue
            old = old_resources[container["name"]]
            resources = _child(container, "resources")
            if resources is None:
                continue
            _copy_field(resources, old, "requests")
            _copy_field(resources, old, "limits")


def _mask_suspended_fields(
    new_spec: dict[str, Any], munged: list[Any], old_by_name: Mapping[str, dict[str, Any]],
    resources: bool = False,
) -> None:
    """While old or new is suspended, the Kueue-mutable pod-template fields take the old
    values in the copy that is compared, i.e. they may change.

    The webhook assigns them on Go structs (`munged...Template.Spec.Template.Labels =
    old...Labels`), where an absent template, pod metadata or pod spec is the zero struct and
    is assigned into all the same. So the path is created here when the request left it out:
    a request without the pod template's `metadata` drops its labels, which is allowed while
    suspended exactly as `metadata: {}` is. The created levels are non-pointer structs, which
    typed_equal takes as equal to absent, so creating them changes nothing else."""
    for i, rjob in enumerate(as_list(new_spec.get("replicatedJobs"))):
        old = _matching_old(rjob, old_by_name)
        if old is None or not isinstance(munged[i], dict):
            continue
        old_pod = as_dict(_job_spec(old).get("template"))
        pod = _child(_child(_child(munged[i], "template"), "spec"), "template")
        meta, old_meta = _child(pod, "metadata"), as_dict(old_pod.get("metadata"))
        if meta is not None:
            _copy_field(meta, old_meta, "labels")
            _copy_field(meta, old_meta, "annotations")
        spec, old_pod_spec = _child(pod, "spec"), as_dict(old_pod.get("spec"))
        if spec is not None:
            for key in _SUSPENDED_MUTABLE_POD_SPEC:
                _copy_field(spec, old_pod_spec, key)
            if resources:
                _mask_container_resources(spec, old_pod_spec)


def webhook_update_errors(
    new: dict[str, Any], old: dict[str, Any], gates: Mapping[str, bool]
) -> list[FieldError]:
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    errs: list[FieldError] = []
    munged = copy.deepcopy(as_list(new_spec.get("replicatedJobs")))
    old_by_name: dict[str, dict[str, Any]] = {}
    for rjob in as_list(old_spec.get("replicatedJobs")):
        name = as_dict(rjob).get("name")
        if isinstance(name, str) and isinstance(rjob, dict):
            # The webhook fills a Go map in list order: a later duplicate name wins.
            old_by_name[name] = rjob
    if gates.get(c.GATE_ELASTIC_JOBSET):
        errs.extend(_elastic_errors(new_spec, munged, old_by_name, _is_terminal(old)))
    if new_spec.get("suspend") is True or old_spec.get("suspend") is True:
        _mask_suspended_fields(new_spec, munged, old_by_name,
                               resources=bool(gates.get(c.GATE_MUTABLE_POD_RESOURCES)))
    errs.extend(active_deadline_gate_errors(new_spec, old_spec, gates))
    # ValidateImmutableField: Semantic.DeepEqual on the decoded []ReplicatedJob, so the
    # comparison is typed (quantities by value, nil pointers apart from empty structs).
    if not typed_equal(munged, old_spec.get("replicatedJobs"), _REPLICATED_JOBS):
        errs.append(FieldError("spec.replicatedJobs", FIELD_IMMUTABLE))
    if not semantic_equal(new_spec.get("managedBy"), old_spec.get("managedBy")):
        errs.append(FieldError("spec.managedBy", FIELD_IMMUTABLE))
    return errs


def validate_update(
    new: dict, old: dict, feature_gates: Mapping[str, bool] | None = None
) -> list[FieldError]:
    """Update-time errors (CEL immutability rules, spec §3.2, and the webhook's update rules
    §3.4, plus this project's reconciliation-mode rules). Never raises."""
    try:
        errs = unknown_field_errors(new)
        if errs:
            return errs
        new_d = apply_structural_defaults(new)
        old_d = apply_structural_defaults(old)
        new_spec = as_dict(new_d).get("spec")
        # No mutating webhook on update: quantities stay as sent, checked by the CRD's pattern.
        errs = crd.quantity_pattern_errors(new_spec)
        errs.extend(schema_errors(new_d))
        errs.extend(rjob_name_errors(new_spec))
        if types.blocks_cel(errs):
            errs.append(types.CEL_SKIPPED)
        else:
            errs.extend(cel.spec_rule_errors(new_spec))
            errs.extend(scheduling.cel_errors(new_spec, gate_values(feature_gates,
                                                                    c.GATE_DEFAULTS)))
            errs.extend(cel.transition_rule_errors(new_spec, as_dict(old_d).get("spec")))
        if errs:
            return errs
        gates = gate_values(feature_gates, c.GATE_DEFAULTS)
        errs = webhook_update_errors(as_dict(new_d), as_dict(old_d), gates)
        errs.extend(scheduling.update_errors(as_dict(new_d), as_dict(old_d), gates))
        errs.extend(independent.update_errors(new_d, old_d))
        return errs
    except RecursionError:
        return [FieldError("", "the object is nested too deeply to validate")]
