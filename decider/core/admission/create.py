"""validate_create: the API server's create pipeline for a JobSet, without the API server.

Order, as in the API server: strict decoding (unknown fields end the request there),
defaulting with the mutating webhook's Go round trip (its decoding errors), then structural
schema and CEL rules; only an object that passes those reaches the validating webhook
(upstream's webhook is never called for an object the schema rejects), then this project's
own rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from decider.core import constants as c
from decider.core import k8s_names
from decider.core.admission import _constants as limits
from decider.core.admission import (
    cel,
    crd,
    independent,
    policies,
    scheduling,
    types,
)
from decider.core.admission._util import (
    as_dict,
    as_int,
    as_list,
    as_str,
    byte_len,
    gate_values,
    present,
)
from decider.core.admission.defaulting import default_jobset
from decider.core.admission.schema import schema_errors
from decider.core.errors import FieldError

DNS1035_TOO_LONG = k8s_names.max_len_error(k8s_names.DNS1035_LABEL_MAX_LENGTH)
SUBDOMAIN_TOO_LONG = ".spec.network.subdomain is too long, must be less than 63 characters"
GROUP_NAME_TOO_LONG = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
JOB_NAME_TOO_LONG = (
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
)
POD_NAME_TOO_LONG = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)


def name_for_validation(obj: Any) -> str:
    """The name length checks use: metadata.name, or what the API server will generate from
    generateName (cut to 58 characters, plus 5 random lowercase alphanumerics; any such
    suffix gives the same verdict, so a fixed one keeps results deterministic)."""
    meta = as_dict(as_dict(obj).get("metadata"))
    name = as_str(meta.get("name")) or ""
    if name:
        return name
    generate_name = as_str(meta.get("generateName")) or ""
    if generate_name:
        cut = generate_name[: limits.GENERATE_NAME_MAX_PREFIX]
        return cut + "x" * limits.GENERATE_NAME_SUFFIX_LENGTH
    return ""


def dns1035_with(value: str, too_long: str) -> list[str]:
    """DNS-1035 label errors with upstream's replacement text for the length error."""
    return [too_long if DNS1035_TOO_LONG in m else m for m in k8s_names.is_dns1035_label(value)]


def _network_errors(spec: dict[str, Any]) -> list[FieldError]:
    subdomain = as_str(as_dict(spec.get("network")).get("subdomain")) or ""
    if not subdomain:
        return []
    path = "spec.network.subdomain"
    # The subdomain names the headless Service too, so it must also be a DNS-1035 label.
    msgs = k8s_names.is_dns1123_subdomain(subdomain) + dns1035_with(subdomain, SUBDOMAIN_TOO_LONG)
    return [FieldError(path, m) for m in msgs]


def _managed_by_errors(spec: dict[str, Any]) -> list[FieldError]:
    manager = as_str(spec.get("managedBy"))
    if manager is None:
        return []
    path = "spec.managedBy"
    errs = [FieldError(path, m) for m in k8s_names.is_domain_prefixed_path(manager)]
    if byte_len(manager) > limits.MAX_MANAGED_BY_LENGTH:
        errs.append(FieldError(path, f"may not be more than {limits.MAX_MANAGED_BY_LENGTH} bytes"))
    return errs


def _replicated_job_errors(
    spec: dict[str, Any], js_name: str, gates: Mapping[str, bool]
) -> list[FieldError]:
    errs: list[FieldError] = []
    rjobs = as_list(spec.get("replicatedJobs"))
    in_place = as_dict(spec.get("failurePolicy")).get("restartStrategy") == c.IN_PLACE_RESTART
    seen: set[str] = set()
    for i, raw in enumerate(rjobs):
        rjob = as_dict(raw)
        path = f"spec.replicatedJobs[{i}]"
        name = as_str(rjob.get("name")) or ""
        seen.add(name)
        job_spec = as_dict(as_dict(rjob.get("template")).get("spec"))
        replicas = as_int(rjob.get("replicas"))
        replicas = 1 if replicas is None else replicas
        parallelism = as_int(job_spec.get("parallelism"))
        parallelism = 1 if parallelism is None else parallelism
        if parallelism * replicas > c.MAX_INT32:
            errs.append(
                FieldError(
                    f"{path}.replicas",
                    f"the product of replicas and parallelism must not exceed {c.MAX_INT32} "
                    f"for replicatedJob '{name}'",
                )
            )
        group = as_str(rjob.get("groupName")) or ""
        errs.extend(
            FieldError(f"{path}.groupName", m) for m in dns1035_with(group, GROUP_NAME_TOO_LONG)
        )
        # The last Job index gives the longest child Job name.
        longest_job = f"{js_name}-{name}-{replicas - 1}"
        errs.extend(
            FieldError(f"{path}.name", m) for m in dns1035_with(longest_job, JOB_NAME_TOO_LONG)
        )
        completions = as_int(job_spec.get("completions"))
        if job_spec.get("completionMode") == c.INDEXED and completions is not None:
            # Pods of an Indexed Job are named <job>-<index>-<5 random characters>.
            longest_pod = f"{longest_job}-{completions - 1}-abcde"
            errs.extend(
                FieldError(f"{path}.name", m) for m in dns1035_with(longest_pod, POD_NAME_TOO_LONG)
            )
        for j, dep in enumerate(as_list(rjob.get("dependsOn"))):
            dep_name = as_str(as_dict(dep).get("name")) or ""
            dep_path = f"{path}.dependsOn[{j}].name"
            if dep_name == name:
                # Deliberate difference: upstream registers the name before this check and so
                # admits a self-dependency, which can never be satisfied (unless replicas is 0).
                errs.append(FieldError(dep_path, f"replicatedJob: {name} cannot depend on itself"))
            elif dep_name not in seen:
                errs.append(
                    FieldError(
                        dep_path,
                        f"replicatedJob: {name} cannot depend on replicatedJob: {dep_name}",
                    )
                )
        if in_place and gates.get(c.GATE_IN_PLACE_RESTART):
            errs.extend(_in_place_errors(path, name, job_spec))
    return errs


def _in_place_errors(path: str, name: str, job_spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    spec_path = f"{path}.template.spec"
    if as_int(job_spec.get("backoffLimit")) != c.MAX_INT32:
        errs.append(
            FieldError(
                f"{spec_path}.backoffLimit",
                f"replicatedJob {name}: must be set to {c.MAX_INT32} (MaxInt32) when in-place "
                "restart is enabled",
            )
        )
    if job_spec.get("podReplacementPolicy") != "Failed":
        errs.append(
            FieldError(
                f"{spec_path}.podReplacementPolicy",
                f"replicatedJob {name}: must be set to Failed when in-place restart is enabled",
            )
        )
    completions, parallelism = (
        as_int(job_spec.get("completions")),
        as_int(job_spec.get("parallelism")),
    )
    if completions is None or parallelism is None or completions != parallelism:
        errs.append(
            FieldError(
                f"{spec_path}.completions",
                f"replicatedJob {name}: completions and parallelism must be set and equal to "
                "each other when in-place restart is enabled",
            )
        )
    return errs


ACTIVE_DEADLINE_GATE_OFF = (
    f"cannot be set when {c.GATE_ACTIVE_DEADLINE} feature gate is disabled")


def active_deadline_gate_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None,
                                gates: Mapping[str, bool]) -> list[FieldError]:
    """KEP-1186's gate guard (webhook @4f0cbded): with JobSetActiveDeadlineSeconds off, a
    JobSet may not set activeDeadlineSeconds on create, nor set or change it on update; an
    unchanged value and clearing it are always allowed (a JobSet created while the gate was on
    stays updatable)."""
    if gates.get(c.GATE_ACTIVE_DEADLINE):
        return []
    value = spec.get("activeDeadlineSeconds")
    if value is None:
        return []
    if old_spec is not None and old_spec.get("activeDeadlineSeconds") == value:
        return []
    return [FieldError("spec.activeDeadlineSeconds", ACTIVE_DEADLINE_GATE_OFF)]


def webhook_create_errors(
    obj: dict[str, Any],
    gates: Mapping[str, bool],
    existing_pvcs: Mapping[str, Any],
) -> list[FieldError]:
    """Upstream's validating webhook on create (spec §3.3), plus the deliberate differences."""
    spec = as_dict(obj.get("spec"))
    js_name = name_for_validation(obj)
    errs: list[FieldError] = []
    strategy = as_dict(spec.get("failurePolicy")).get("restartStrategy")
    if strategy == c.IN_PLACE_RESTART and not gates.get(c.GATE_IN_PLACE_RESTART):
        errs.append(
            FieldError(
                "spec.failurePolicy.restartStrategy",
                "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate "
                "is disabled",
            )
        )
    errs.extend(active_deadline_gate_errors(spec, None, gates))
    rjobs = as_list(spec.get("replicatedJobs"))
    # Present at all, even as an empty list: the webhook tests the Go slice against nil.
    if rjobs and present(rjobs[0], "dependsOn"):
        errs.append(
            FieldError(
                "spec.replicatedJobs[0].dependsOn",
                "DependsOn can't be set for the first ReplicatedJob",
            )
        )
    errs.extend(_network_errors(spec))
    errs.extend(_managed_by_errors(spec))
    errs.extend(_replicated_job_errors(spec, js_name, gates))
    errs.extend(policies.success_policy_errors(spec))
    errs.extend(policies.failure_policy_errors(spec, gates))
    errs.extend(policies.coordinator_errors(spec, js_name))
    namespace = as_str(as_dict(obj.get("metadata")).get("namespace")) or ""
    errs.extend(policies.volume_claim_policy_errors(spec, js_name, namespace, existing_pvcs))
    return errs


def unknown_field_errors(obj: Any) -> list[FieldError]:
    """Strict decoding, before anything else looks at the object: apimachinery's message for
    each unknown field (the API server joins them into one `strict decoding error: ...`)."""
    return [FieldError(path, scheduling.unknown_field_message(path))
            for path in crd.unknown_fields(obj)]


def rjob_name_errors(spec: Any) -> list[FieldError]:
    """Deliberate difference: a replicated Job needs a name. Upstream's webhook writes Go's
    `name: ""` before the CRD's required check, so it admits one without; its Jobs,
    `<jobset>--<index>`, then carry an empty replicatedjob-name label and are never counted in
    replicatedJobsStatus (dependsOn, InOrder startup and JobsReady never see them)."""
    errs = []
    for i, rjob in enumerate(as_list(as_dict(spec).get("replicatedJobs"))):
        if as_dict(rjob).get("name") == "":
            errs.append(FieldError(f"spec.replicatedJobs[{i}].name", "Required value"))
    return errs


def validate_create(
    obj: dict,
    feature_gates: Mapping[str, bool] | None = None,
    existing_pvcs: Mapping[str, dict] | None = None,
) -> list[FieldError]:
    """All create-time errors (strict decoding, the webhook's Go decoding, structural schema +
    CEL + validating webhook, spec §3.2-§3.3), on the DEFAULTED object: the input is passed
    through default_jobset first, which changes nothing for an object that is already
    defaulted. existing_pvcs maps PVC name -> PVC object in the JobSet's namespace. Never
    raises; an empty list means the JobSet is admitted."""
    try:
        errs = unknown_field_errors(obj)
        if errs:
            return errs
        gates = gate_values(feature_gates, c.GATE_DEFAULTS)
        defaulted = default_jobset(obj, gates)
        spec = as_dict(defaulted).get("spec")
        errs = crd.quantity_errors(spec)
        # A quantity the webhook cannot decode is refused there, before the schema sees it.
        errs.extend(schema_errors(defaulted, skip={e.field for e in errs}))
        errs.extend(rjob_name_errors(spec))
        if types.blocks_cel(errs):
            errs.append(types.CEL_SKIPPED)
        else:
            errs.extend(cel.spec_rule_errors(spec))
            errs.extend(scheduling.cel_errors(spec, gates))
        if errs:
            return errs
        pvcs = existing_pvcs if isinstance(existing_pvcs, Mapping) else {}
        errs = webhook_create_errors(defaulted, gates, pvcs)
        errs.extend(scheduling.create_errors(defaulted, gates))
        errs.extend(independent.create_errors(defaulted))
        # This project's gang annotations, judged as PlanGang and Decide judge them.
        from decider.core.gang import validate_jobset_scheduling
        from decider.core.gang.jobset_facts import GANG_POLICY_ANNOTATION

        annotations = as_dict(as_dict(as_dict(defaulted).get("metadata")).get("annotations"))
        if GANG_POLICY_ANNOTATION in annotations:
            errs.extend(validate_jobset_scheduling(defaulted))
        return errs
    except RecursionError:
        return [FieldError("", "the object is nested too deeply to validate")]
