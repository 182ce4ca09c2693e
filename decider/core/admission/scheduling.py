"""``spec.scheduling`` in the API server's pipeline (KEP-969 WAS integration, jobset#1250):
strict decoding's word on a superseded spelling, the webhook's default, the CRD's rules, the
webhook's rules on create and on update.

The rules themselves are the gang package's (gang/was_rules), shared with PlanGang, which
refuses what admission refuses. What is here is where each runs and what it is told:

- defaulting (mutating webhook, create only, gate on): ``schedulingPolicy: {gang: {}}`` when
  ``spec.scheduling`` is set with no policy and no ``replicatedJobs`` entries; never a minCount;
- the CRD's rules run whatever the gates say (they are the CRD's);
- on create, validateScheduling (Forbidden with the gate off);
- on update (jobset_webhook.go@4f0cbded ValidateUpdate): ``spec.scheduling`` may change only
  while the JobSet stays suspended and its Suspended condition is True, not in the update that
  resumes it; removing it is Forbidden; a change is judged by every create-time rule (adding
  it to a suspended JobSet that had none is a change like any other). With ElasticJobSet, a
  Job's quorum is re-checked against the new parallelism on every update.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from decider.core.admission._util import as_dict
from decider.core.constants import GATE_ELASTIC_JOBSET, GATE_WORKLOAD_AWARE_SCHEDULING
from decider.core.errors import FieldError, InvalidInput


def apply_default(spec: dict[str, Any], gates: Mapping[str, bool] | None) -> None:
    """The webhook's default, gated: gang{} for a top level with no policy and no entries."""
    if not (gates or {}).get(GATE_WORKLOAD_AWARE_SCHEDULING):
        return
    scheduling = spec.get("scheduling")
    if not isinstance(scheduling, dict):
        return
    if scheduling.get("schedulingPolicy") is None and not scheduling.get("replicatedJobs"):
        scheduling["schedulingPolicy"] = {"gang": {}}


def unknown_field_message(path: str) -> str:
    """Strict decoding's words; a superseded spelling of spec.scheduling names its successor."""
    from decider.core.gang import was_draft

    return was_draft.unknown_field_message(path)


def cel_errors(spec: Any, gates: Mapping[str, bool] | None) -> list[FieldError]:
    from decider.core.gang import was_rules

    return was_rules.cel_errors(spec, gates)


def _facts(obj: dict[str, Any]) -> Any:
    from decider.core.gang import jobset_facts

    return jobset_facts.read_jobset(obj, need_identity=False)


def create_errors(obj: dict[str, Any], gates: Mapping[str, bool] | None) -> list[FieldError]:
    """validateScheduling on a (defaulted) JobSet being created."""
    from decider.core.gang import was_rules

    spec = as_dict(obj.get("spec"))
    if spec.get("scheduling") is None:
        return []
    try:
        f = _facts(obj)
        return was_rules.webhook_errors(f, spec.get("replicatedJobs"), gates)
    except InvalidInput as exc:
        return list(exc.errors)


def update_errors(new: dict[str, Any], old: dict[str, Any],
                  gates: Mapping[str, bool] | None) -> list[FieldError]:
    """The webhook's update rules on spec.scheduling (both objects pruned and defaulted)."""
    from decider.core.gang import was_rules, was_spec

    gates = gates or {}
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    errs: list[FieldError] = []
    try:
        if gates.get(GATE_ELASTIC_JOBSET) and new_spec.get("scheduling") is not None:
            f = _facts(new)
            errs.extend(was_rules.min_count_errors(f, was_spec.read_scheduling(f.scheduling)))
        new_s, old_s = new_spec.get("scheduling"), old_spec.get("scheduling")
        if new_s == old_s:
            return errs
        suspended = (old_spec.get("suspend") is True and new_spec.get("suspend") is True
                     and _suspended_condition(old))
        if not suspended:
            errs.append(was_rules.invalid("spec.scheduling", "", "field is immutable"))
        elif old_s is not None and new_s is None:
            errs.append(was_rules.forbidden("spec.scheduling", "cannot be removed once set"))
        else:
            errs.extend(was_rules.webhook_errors(_facts(new), new_spec.get("replicatedJobs"),
                                                 gates))
    except InvalidInput as exc:
        errs.extend(exc.errors)
    return errs


def _suspended_condition(obj: dict[str, Any]) -> bool:
    # The stored JobSet's status is typed at the contract's edge (observed_shape.py).
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Suspended" and cond.get("status") == "True":
            return True
    return False


__all__ = ["apply_default", "cel_errors", "create_errors", "unknown_field_message",
           "update_errors"]
