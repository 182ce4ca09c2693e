"""The CRD's x-kubernetes-validations (CEL) rules.

Transition rules (`self == oldSelf`) follow Kubernetes' rule that they are evaluated only when
the field exists in both the old and the new object: setting a policy that was unset, or
unsetting one, is not caught by them (upstream behaves the same). CEL compares lists of
x-kubernetes-list-type map or set ignoring order, and other lists in order.
"""

from __future__ import annotations

from typing import Any

from decider.core.admission._util import as_dict, as_list, present, strict_equal
from decider.core.errors import FieldError

IMMUTABLE = "Value is immutable"
MUTUALLY_EXCLUSIVE = "StartupPolicy and DependsOn APIs are mutually exclusive"
VCP_NAMESPACE = "namespace cannot be set for VolumeClaimPolicies templates"

# Spec fields carrying `self == oldSelf` at the spec level.
_IMMUTABLE_SPEC_FIELDS = (
    "network",
    "successPolicy",
    "failurePolicy",
    "startupPolicy",
    "volumeClaimPolicies",
)


class _NoSuchKey(Exception):
    """A CEL evaluation error: a field selected that the object does not have."""


def _select(obj: Any, key: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise _NoSuchKey(f"no such key: {key}")
    return obj[key]


def _evaluation_error(path: str, exc: _NoSuchKey, message: str) -> FieldError:
    # apiextensions' CEL validator: "<eval error> evaluating rule: <rule message>".
    return FieldError(path, f"{exc} evaluating rule: {message}")


def spec_rule_errors(spec: Any) -> list[FieldError]:
    """Rules that hold for every write, create or update. A rule that fails to evaluate (it
    selects a field the object lacks) is an error of the object the rule sits on."""
    errs: list[FieldError] = []
    if not isinstance(spec, dict):
        return errs
    # !(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' &&
    #   self.replicatedJobs.exists(x, has(x.dependsOn)))
    order = as_dict(spec.get("startupPolicy")).get("startupPolicyOrder")
    if order == "InOrder":
        try:
            rjobs = as_list(_select(spec, "replicatedJobs"))
            if any(present(rjob, "dependsOn") for rjob in rjobs):
                errs.append(FieldError("spec", MUTUALLY_EXCLUSIVE))
        except _NoSuchKey as exc:
            errs.append(_evaluation_error("spec", exc, MUTUALLY_EXCLUSIVE))
    for i, policy in enumerate(as_list(spec.get("volumeClaimPolicies"))):
        if not isinstance(policy, dict):
            continue  # the schema's type error; no rule runs on it
        # The rule sits on each volumeClaimPolicies item: its errors name the item.
        path = f"spec.volumeClaimPolicies[{i}]"
        result = _template_namespace_rule(policy)
        if isinstance(result, _NoSuchKey):
            errs.append(_evaluation_error(path, result, VCP_NAMESPACE))
        elif result is False:
            errs.append(FieldError(path, VCP_NAMESPACE))
    return errs


def _template_namespace_rule(policy: Any) -> _NoSuchKey | bool | None:
    """self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0) on
    one volume claim policy: None when it holds, False when it is false, the evaluation error
    otherwise. `all` is false if any template is false, even when another one errs."""
    try:
        templates = as_list(_select(policy, "templates"))
    except _NoSuchKey as exc:
        return exc
    error: _NoSuchKey | None = None
    for template in templates:
        if not isinstance(template, dict):
            continue
        try:
            namespace = as_dict(_select(template, "metadata")).get("namespace")
        except _NoSuchKey as exc:
            error = error or exc
            continue
        if namespace is not None and namespace != "":
            return False
    return error


def _map_list_equal(new: Any, old: Any) -> bool:
    """CEL equality of a list-type map: same items, order ignored."""
    if not (isinstance(new, list) and isinstance(old, list)) or len(new) != len(old):
        return strict_equal(new, old)
    remaining = list(old)
    for item in new:
        for index, candidate in enumerate(remaining):
            if strict_equal(item, candidate):
                del remaining[index]
                break
        else:
            return False
    return True


def transition_rule_errors(new_spec: Any, old_spec: Any) -> list[FieldError]:
    """`self == oldSelf` rules on update."""
    errs: list[FieldError] = []
    if not (isinstance(new_spec, dict) and isinstance(old_spec, dict)):
        return errs
    for name in _IMMUTABLE_SPEC_FIELDS:
        both = present(new_spec, name) and present(old_spec, name)
        if both and not strict_equal(new_spec[name], old_spec[name]):
            errs.append(FieldError(f"spec.{name}", IMMUTABLE))
    # replicatedJobs is a list-type map: items correlate with the old list by their name.
    old_by_name: dict[str, Any] = {}
    for rjob in as_list(old_spec.get("replicatedJobs")):
        name = as_dict(rjob).get("name")
        if isinstance(name, str) and name not in old_by_name:
            old_by_name[name] = rjob
    for i, rjob in enumerate(as_list(new_spec.get("replicatedJobs"))):
        name = as_dict(rjob).get("name")
        old = old_by_name.get(name) if isinstance(name, str) else None
        both = present(rjob, "dependsOn") and present(old, "dependsOn")
        if both and not _map_list_equal(rjob["dependsOn"], old["dependsOn"]):
            errs.append(FieldError(f"spec.replicatedJobs[{i}].dependsOn", IMMUTABLE))
    return errs
