"""The Validate contract <-> JobSet admission and the gang rules for Jobs.

Split from convert.py, which keeps the Decide path.
"""

from __future__ import annotations

from typing import Any

from decider.contract import limits
from decider.contract.convert import (
    _dumps,
    feature_gates,
    gang_choice,
    observed,
    parse_json,
    parse_object,
)
from decider.contract.gang import _gang_objects, _remap_existing
from decider.contract.limits import Limits
from decider.core.constants import API_VERSION
from decider.core.errors import FieldError, InvalidInput
from decider_api.v1 import decider_pb2 as pb


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
        _check_old_jobset(old)
        result = obj
        errors = admission.validate_update(obj, old, gates)
    else:
        pvcs = {o.name: observed(parse_json(o.object_json, f"objects[{i}].object_json",
                                                  lim), f"objects[{i}].object_json", o.kind)
                for i, o in enumerate(req.objects)
                if o.kind == "PersistentVolumeClaim" and o.object_json}
        result = admission.default_jobset(obj, gates)
        errors = admission.validate_create(result, gates, pvcs)
    # A JobSet the decider would refuse to decide is refused at admission, where its author
    # sees why, rather than left to fail every reconcile.
    errors += [FieldError(f, m) for f, m in limits.jobset_replica_errors(result, lim)]
    return _validation(errors, result)


def _check_old_jobset(old: dict[str, Any]) -> None:
    """The API server's oldObject is a JobSet it stored; anything else is the caller's mistake,
    and compared field by field it came out as a false "field is immutable"."""
    if old.get("kind") != "JobSet" or old.get("apiVersion") != API_VERSION:
        raise InvalidInput.at("old_object_json", f"must be a {API_VERSION} JobSet, as "
                                                 "object_json is")
    # The types of what the admission rules read, on the one check of every observed object.
    observed(old, "old_object_json")
    for part in ("metadata", "spec"):
        if old.get(part) is None:
            raise InvalidInput.at(f"old_object_json.{part}", "Required value: a stored JobSet "
                                                             "has one")


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
    # The Job asked about is observed as much as the one the API server stored.
    observed(obj, "")
    old = obj
    if req.old_object_json:
        old = parse_json(req.old_object_json, "old_object_json", lim)
        if not isinstance(old, dict) or not _is_job(old):
            raise InvalidInput.at("old_object_json", "must be a batch/v1 Job, as object_json is")
        observed(old, "old_object_json")
    # The admission plugin looks the PodGroup up; a caller that sends none lets the rules of
    # the generation say whether the old Job is gang scheduled.
    existing = _gang_objects(req.objects, lim)
    # A create is checked as an update from itself: only the rules on the new object apply.
    try:
        errors = validate_job_update(obj, old, api_version, existing or None)
    except InvalidInput as exc:
        raise _remap_existing(exc) from None
    return _validation(errors, obj)
