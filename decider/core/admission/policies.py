"""Webhook create rules for the policies: success, failure, coordinator, volume claims.

Upstream reports several of these as plain errors without a field; here each one names the
field it is about, with upstream's message text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from decider.core import constants as c
from decider.core import k8s_names
from decider.core.admission import _constants as limits
from decider.core.admission._util import (
    as_dict,
    as_int,
    as_list,
    as_str,
    byte_len,
    present,
    semantic_equal,
)
from decider.core.child_jobs import mounts_volume, pvc_name
from decider.core.errors import FieldError
from decider.core.pattern_budget import PatternBudget

_RULE_NAME_RE = re.compile(limits.RULE_NAME_PATTERN, re.ASCII)


def _rjob_names(spec: dict[str, Any]) -> set[str]:
    return {
        name
        for rjob in as_list(spec.get("replicatedJobs"))
        if (name := as_str(as_dict(rjob).get("name"))) is not None
    }


def success_policy_errors(spec: dict[str, Any]) -> list[FieldError]:
    names = _rjob_names(spec)
    errs: list[FieldError] = []
    targets = as_list(as_dict(spec.get("successPolicy")).get("targetReplicatedJobs"))
    for k, target in enumerate(targets):
        if isinstance(target, str) and target not in names:
            errs.append(
                FieldError(
                    f"spec.successPolicy.targetReplicatedJobs[{k}]",
                    f"invalid replicatedJob name '{target}' does not appear in "
                    ".spec.ReplicatedJobs",
                )
            )
    return errs


def _pattern_errors(rules: list[Any]) -> list[FieldError]:
    """Deliberate differences: upstream compiles these only when a Job fails, logs a bad one
    and treats it as never matching, which silently disables the rule; and the patterns of a
    JobSet share a compile budget (pattern_budget), which Go's regexp does not have."""
    errs: list[FieldError] = []
    budget = PatternBudget()
    for i, rule in enumerate(rules):
        for j, pattern in enumerate(as_list(as_dict(rule).get("onJobFailureMessagePatterns"))):
            if isinstance(pattern, str) and (message := budget.refusal(pattern)) is not None:
                path = f"spec.failurePolicy.rules[{i}].onJobFailureMessagePatterns[{j}]"
                errs.append(FieldError(path, message))
    return errs


def failure_policy_errors(spec: dict[str, Any], gates: Mapping[str, bool]) -> list[FieldError]:
    policy = spec.get("failurePolicy")
    if not isinstance(policy, dict):
        return []
    rules = as_list(policy.get("rules"))
    errs = _pattern_errors(rules)
    restart_job_rules = [
        i for i, rule in enumerate(rules) if as_dict(rule).get("action") in c.RESTART_JOB_ACTIONS
    ]
    if restart_job_rules:
        if not gates.get(c.GATE_RESTART_JOB):
            # Upstream stops checking the failure policy here.
            errs.append(
                FieldError(
                    f"spec.failurePolicy.rules[{restart_job_rules[0]}].action",
                    "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are "
                    "not allowed when RestartJob feature gate is disabled",
                )
            )
            return errs
        for i, rjob in enumerate(as_list(spec.get("replicatedJobs"))):
            replicas = as_int(as_dict(rjob).get("replicas"))
            if replicas is not None and replicas > limits.MAX_REPLICAS_WITH_RESTART_JOB:
                errs.append(
                    FieldError(
                        f"spec.replicatedJobs[{i}].replicas",
                        "JobSet cannot have a failure policy rule with RestartJob or "
                        "RestartJobAndIgnoreMaxRestarts action and a replicated job with "
                        f"replicas > {limits.MAX_REPLICAS_WITH_RESTART_JOB}",
                    )
                )
                break
    names = _rjob_names(spec)
    indices_by_name: dict[str, list[int]] = {}
    for i, raw in enumerate(rules):
        rule = as_dict(raw)
        path = f"spec.failurePolicy.rules[{i}]"
        name = as_str(rule.get("name")) or ""
        length = byte_len(name)
        if not limits.MIN_RULE_NAME_LENGTH <= length <= limits.MAX_RULE_NAME_LENGTH:
            errs.append(
                FieldError(
                    f"{path}.name",
                    f"invalid failure policy rule name of length {length}, the rule name must be "
                    f"at least {limits.MIN_RULE_NAME_LENGTH} characters long and at most "
                    f"{limits.MAX_RULE_NAME_LENGTH} characters long",
                )
            )
        indices_by_name.setdefault(name, []).append(i)
        if not _RULE_NAME_RE.fullmatch(name):
            errs.append(
                FieldError(
                    f"{path}.name",
                    f"invalid failure policy rule name '{name}', a failure policy rule name must "
                    "start with an alphabetic character, optionally followed by a string of "
                    "alphanumeric characters or '_,:', and must end with an alphanumeric "
                    "character or '_'",
                )
            )
        for k, target in enumerate(as_list(rule.get("targetReplicatedJobs"))):
            if isinstance(target, str) and target not in names:
                errs.append(
                    FieldError(
                        f"{path}.targetReplicatedJobs[{k}]",
                        f"invalid replicatedJob name '{target}' in failure policy does not "
                        "appear in .spec.ReplicatedJobs",
                    )
                )
        for k, reason in enumerate(as_list(rule.get("onJobFailureReasons"))):
            if isinstance(reason, str) and reason not in c.JOB_FAILURE_REASONS:
                errs.append(
                    FieldError(
                        f"{path}.onJobFailureReasons[{k}]",
                        f"invalid job failure reason '{reason}' in failure policy is not a "
                        "recognized job failure reason",
                    )
                )
    # Upstream walks a Go map here (random order); first appearance keeps ours deterministic.
    for name, indices in indices_by_name.items():
        if len(indices) > 1:
            shown = "[" + " ".join(str(i) for i in indices) + "]"
            errs.append(
                FieldError(
                    f"spec.failurePolicy.rules[{indices[1]}].name",
                    f"rule names are not unique, rules with indices {shown} all have the same "
                    f"name '{name}'",
                )
            )
    return errs


def _find_rjob(spec: dict[str, Any], name: str) -> dict[str, Any] | None:
    for rjob in as_list(spec.get("replicatedJobs")):
        if isinstance(rjob, dict) and rjob.get("name") == name:
            return rjob
    return None


def _coordinator_placement_error(spec: dict[str, Any], coord: dict[str, Any]) -> FieldError | None:
    """The first failing check only, as upstream returns a single error."""
    target = as_str(coord.get("replicatedJob")) or ""
    job_index = as_int(coord.get("jobIndex")) or 0
    pod_index = as_int(coord.get("podIndex")) or 0
    rjob = _find_rjob(spec, target)
    if rjob is None:
        return FieldError(
            "spec.coordinator.replicatedJob", f"coordinator replicatedJob {target} does not exist"
        )
    replicas = as_int(rjob.get("replicas"))
    replicas = 1 if replicas is None else replicas
    if not 0 <= job_index < replicas:
        return FieldError(
            "spec.coordinator.jobIndex",
            f"coordinator job index {job_index} is invalid for replicatedJob {target}",
        )
    job_spec = as_dict(as_dict(rjob.get("template")).get("spec"))
    completions = as_int(job_spec.get("completions"))
    if job_spec.get("completionMode") != c.INDEXED or completions is None:
        return FieldError(
            "spec.coordinator.replicatedJob",
            "job for coordinator pod must be indexed completion mode, and completions number "
            "must be set",
        )
    if not 0 <= pod_index < completions:
        return FieldError(
            "spec.coordinator.podIndex",
            f"coordinator pod index {pod_index} is invalid for replicatedJob {target} job index "
            f"{job_index}",
        )
    return None


def coordinator_errors(spec: dict[str, Any], js_name: str) -> list[FieldError]:
    coord = spec.get("coordinator")
    if not isinstance(coord, dict):
        return []
    errs: list[FieldError] = []
    placement = _coordinator_placement_error(spec, coord)
    if placement is not None:
        errs.append(placement)
    # The endpoint becomes a label value on every Job and pod, so it must be a valid one.
    subdomain = as_str(as_dict(spec.get("network")).get("subdomain")) or js_name
    endpoint = (
        f"{js_name}-{as_str(coord.get('replicatedJob')) or ''}-{as_int(coord.get('jobIndex')) or 0}"
        f"-{as_int(coord.get('podIndex')) or 0}.{subdomain}"
    )
    problems = k8s_names.is_label_value(endpoint)
    if problems:
        errs.append(
            FieldError(
                "spec.coordinator",
                f'spec will lead to invalid label value "{endpoint}" for coordinator label '
                f'"{c.COORDINATOR}" (long JobSet / ReplicatedJob / SubDomain name?): '
                + ", ".join(problems),
            )
        )
    return errs


def _claim_usage_errors(spec: dict[str, Any], claim: str) -> list[FieldError]:
    errs: list[FieldError] = []
    pod_specs = [
        as_dict(
            as_dict(
                as_dict(as_dict(as_dict(rjob).get("template")).get("spec")).get("template")
            ).get("spec")
        )
        for rjob in as_list(spec.get("replicatedJobs"))
    ]
    for i, pod_spec in enumerate(pod_specs):
        for v, volume in enumerate(as_list(pod_spec.get("volumes"))):
            if as_dict(volume).get("name") == claim:
                errs.append(
                    FieldError(
                        f"spec.replicatedJobs[{i}].template.spec.template.spec.volumes[{v}].name",
                        f"volume name conflicts with VolumeClaimPolicy template name: {claim}",
                    )
                )
    if not any(mounts_volume(pod_spec, claim) for pod_spec in pod_specs):
        errs.append(
            FieldError(
                "spec.replicatedJobs",
                f"replicatedJob containers don't have a matching volumeMount: {claim} from "
                "VolumeClaimPolicies",
            )
        )
    return errs


def volume_claim_policy_errors(
    spec: dict[str, Any],
    js_name: str,
    namespace: str,
    existing_pvcs: Mapping[str, Any],
) -> list[FieldError]:
    errs: list[FieldError] = []
    claims: set[str] = set()
    for i, raw_policy in enumerate(as_list(spec.get("volumeClaimPolicies"))):
        policy = as_dict(raw_policy)
        for j, raw_template in enumerate(as_list(policy.get("templates"))):
            template = as_dict(raw_template)
            # Upstream's path says "template"; the field is "templates".
            path = f"spec.volumeClaimPolicies[{i}].templates[{j}]"
            claim = as_str(as_dict(template.get("metadata")).get("name")) or ""
            if claim in claims:
                errs.append(
                    FieldError(
                        f"{path}.name", "names must be unique for VolumeClaimPolicies template"
                    )
                )
            errs.extend(
                FieldError(f"{path}.name", m) for m in k8s_names.is_dns1123_subdomain(claim)
            )
            pvc = pvc_name(js_name, claim)
            if byte_len(pvc) > limits.MAX_PVC_NAME_LENGTH:
                errs.append(
                    FieldError(f"{path}.name", "VolumeClaimPolicies template name is too long")
                )
            errs.extend(_claim_usage_errors(spec, claim))
            existing = existing_pvcs.get(pvc)
            if isinstance(existing, dict):
                if not semantic_equal(existing.get("spec"), template.get("spec")):
                    errs.append(
                        FieldError(
                            f"{path}.spec",
                            f"spec does not match existing PVC {pvc} in namespace {namespace}",
                        )
                    )
                when_deleted = as_dict(policy.get("retentionPolicy")).get("whenDeleted")
                if present(policy, "retentionPolicy") and when_deleted != "Retain":
                    errs.append(
                        FieldError(
                            f"spec.volumeClaimPolicies[{i}].retentionPolicy.whenDeleted",
                            "retentionPolicy must be retain when PVC exists",
                        )
                    )
            claims.add(claim)
    return errs
