"""`admission.k8s.io/v1` AdmissionReview in and out: the webhook's wire format, no I/O.

The API server posts a review holding the JobSet (and, on update, the stored one); the answer is the
same review with a `response`: allowed or not, a `status` when not, and for the mutating webhook a
base64 JSONPatch. The decision itself is the Validate RPC's
(decider.contract.validate.validate_response): this module only turns a review into a
ValidateRequest and a ValidateResponse into a review's response, so `decider validate`, the Validate
RPC and the webhook can never disagree.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from decider.contract.limits import Limits
from decider.contract.methods import answer_message
from decider.contract.reply import INVALID_ARGUMENT, OK, Reply, failure
from decider.core.errors import FieldError, InvalidInput, TooLarge
from decider_api.v1 import decider_pb2 as pb

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_KIND = "JobSet"
# Upstream's paths (controller-runtime's /mutate-<group with dashes>-<version>-<kind>), so a
# webhook configuration written for upstream's service works against ours unchanged.
MUTATE_PATH = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
VALIDATE_PATH = "/validate-jobset-x-k8s-io-v1alpha2-jobset"


def payload(feature_gates: dict[str, bool], body: bytes) -> bytes:
    """What the server sends a worker: the webhook's settings on one line, then the body."""
    return _dumps({"featureGates": feature_gates}).encode() + b"\n" + body


class BadReview(Exception):
    """The request body is not an AdmissionReview this webhook can answer: HTTP 400."""


@dataclass(frozen=True)
class Review:
    uid: str
    operation: str
    name: str
    namespace: str
    # Re-serialized JSON of request.object / request.oldObject ("" when absent): what the
    # ValidateRequest carries to a decision worker, which parses and checks it.
    object_json: str
    old_object_json: str
    # request.object as parsed: the mutating webhook's patch is computed against it.
    obj: Any = field(default=None, compare=False, repr=False)


def _field(obj: dict[str, Any], key: str, where: str, kind: type, required: bool = True) -> Any:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, kind):
        what = {dict: "an object", str: "a string"}.get(kind, kind.__name__)
        if value is None:
            raise BadReview(f"{where}.{key}: required ({what})")
        raise BadReview(f"{where}.{key}: must be {what}")
    return value


def parse(body: bytes) -> Review:
    """The review a body holds; BadReview naming what is wrong with it."""
    try:
        doc = json.loads(body)
    except UnicodeDecodeError:
        raise BadReview("the body is not UTF-8 JSON") from None
    except ValueError as exc:
        raise BadReview(f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadReview("the body is not valid JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise BadReview("the body must be a JSON object (an AdmissionReview)")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        raise BadReview(f"expected apiVersion {API_VERSION} kind {KIND}, got apiVersion "
                        f"{doc.get('apiVersion')!r} kind {doc.get('kind')!r} (the webhook "
                        "configuration must list admissionReviewVersions: [v1])")
    request = _field(doc, "request", "AdmissionReview", dict)
    uid = _field(request, "uid", "request", str)
    if not uid:
        raise BadReview("request.uid: required")
    operation = _field(request, "operation", "request", str)
    kind = _field(request, "kind", "request", dict)
    if (kind.get("group"), kind.get("kind")) != (JOBSET_GROUP, JOBSET_KIND):
        raise BadReview(f"request.kind: this webhook admits {JOBSET_GROUP} {JOBSET_KIND}, got "
                        f"{kind.get('group')!r} {kind.get('kind')!r}")
    if kind.get("version") != JOBSET_VERSION:
        raise BadReview(f"request.kind.version: this webhook admits {JOBSET_VERSION}, got "
                        f"{kind.get('version')!r}")
    obj = _field(request, "object", "request", dict, required=False)
    old = _field(request, "oldObject", "request", dict, required=False)
    if operation in ("CREATE", "UPDATE") and obj is None:
        raise BadReview(f"request.object: required for {operation}")
    if operation == "UPDATE" and old is None:
        raise BadReview("request.oldObject: required for UPDATE")
    return Review(uid=uid, operation=operation,
                  name=str(request.get("name") or _meta(obj).get("name") or ""),
                  namespace=str(request.get("namespace") or ""),
                  object_json=_dumps(obj) if obj is not None else "",
                  old_object_json=_dumps(old) if old is not None else "", obj=obj)


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def validate_request(review: Review, feature_gates: dict[str, bool],
                     mutate: bool) -> pb.ValidateRequest:
    """The Validate RPC's request for a review. The mutating webhook asks as a create (its
    answer's object is the defaulted JobSet); the validating one sends the stored object on an
    update, as `decider validate --old` does."""
    request = pb.ValidateRequest(object_json=review.object_json)
    request.options.feature_gates.update(feature_gates)
    if not mutate and review.operation == "UPDATE":
        request.old_object_json = review.old_object_json
    return request


# ---- answers --------------------------------------------------------------------------------

def _review(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def allowed(uid: str, patch: list[dict[str, Any]] | None = None,
            warnings: list[str] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(_dumps(patch).encode()).decode()
    if warnings:
        response["warnings"] = warnings
    return _review(response)


def _status(code: int, reason: str, message: str,
            details: dict[str, Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"metadata": {}, "status": "Failure", "message": message,
                              "reason": reason, "code": code}
    if details is not None:
        status["details"] = details
    return status


def denied(uid: str, code: int, reason: str, message: str,
           details: dict[str, Any] | None = None) -> dict[str, Any]:
    return _review({"uid": uid, "allowed": False,
                    "status": _status(code, reason, message, details)})


def cause_type(message: str) -> str:
    """The field.ErrorType an apimachinery validator would have given this message."""
    lower = message.lower()
    # The OpenAPI validator's type error (field.TypeInvalid; decider/core/admission/types.py).
    if lower.startswith("invalid value: ") and " in body must be of type " in lower:
        return "FieldValueTypeInvalid"
    for prefix, cause in (("required value", "FieldValueRequired"),
                          ("duplicate value", "FieldValueDuplicate"),
                          ("unsupported value", "FieldValueNotSupported"),
                          ("forbidden", "FieldValueForbidden"),
                          ("too long", "FieldValueTooLong"),
                          ("must have at most", "FieldValueTooMany")):
        if lower.startswith(prefix):
            return cause
    return "FieldValueInvalid"


def invalid(uid: str, name: str, errors: list[FieldError]) -> dict[str, Any]:
    """A denial as the API server shows a validation failure (apierrors.NewInvalid): 422,
    reason Invalid, every error in the message and one cause per error."""
    parts = [str(e) for e in errors]
    listed = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    message = f'{JOBSET_KIND}.{JOBSET_GROUP} "{name}" is invalid: {listed}'
    causes = [{"reason": cause_type(e.message), "message": e.message, "field": e.field}
              for e in errors]
    return denied(uid, 422, "Invalid", message,
                  {"name": name, "group": JOBSET_GROUP, "kind": JOBSET_KIND, "causes": causes})


def _object_fields(errors: list[FieldError]) -> list[FieldError]:
    """Errors the decider reports for the request's fields, named as the object's own."""
    out = []
    for e in errors:
        field = e.field
        for prefix, replacement in (("old_object_json.", "oldObject."), ("object_json.", ""),
                                    ("old_object_json", "oldObject"), ("object_json", "")):
            if field.startswith(prefix):
                field = replacement + field[len(prefix):]
                break
        out.append(FieldError(field, e.message))
    return out


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    """An HTTP error's body: a metav1.Status, which the API server quotes when it fails the
    call."""
    return {"apiVersion": "v1", "kind": "Status", **_status(code, reason, message)}


# ---- the mutating webhook's patch -----------------------------------------------------------

def _pointer(path: str, key: str | int) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def json_patch(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """RFC 6902 operations taking `before` to `after`: what defaulting added or changed.

    Keys `before` held as null and `after` dropped are not removed: the API server prunes
    those nulls itself before any webhook sees the object, so they are not defaults.
    """
    if isinstance(before, dict) and isinstance(after, dict):
        ops: list[dict[str, Any]] = []
        for key, value in after.items():
            if key not in before:
                ops.append({"op": "add", "path": _pointer(path, key), "value": value})
            else:
                ops.extend(json_patch(before[key], value, _pointer(path, key)))
        for key, value in before.items():
            if key not in after and value is not None:
                ops.append({"op": "remove", "path": _pointer(path, key)})
        return ops
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        ops = []
        for index, (b, a) in enumerate(zip(before, after, strict=True)):
            ops.extend(json_patch(b, a, _pointer(path, index)))
        return ops
    # 1 and true are equal in Python, not in JSON.
    if type(before) is not type(after) or before != after:
        return [{"op": "replace", "path": path, "value": after}]
    return []


# ---- on a decision worker -------------------------------------------------------------------

def answer(mutate: bool, data: bytes, limits: Limits) -> Any:
    """A worker's reply to one review: OK with the answering review's JSON, or
    INVALID_ARGUMENT with the reason the body is not a review (the webhook's HTTP 400)."""
    header, _, body = data.partition(b"\n")
    gates = json.loads(header).get("featureGates") or {}
    try:
        review = parse(body)
    except BadReview as exc:
        return failure(INVALID_ARGUMENT, str(exc))
    return Reply(OK, _dumps(decide(review, gates, mutate, limits)).encode())


def decide(review: Review, gates: dict[str, bool], mutate: bool,
           limits: Limits) -> dict[str, Any]:
    """The answering review: through the Validate method, exactly as the RPC decides."""
    # Upstream defaults on create only, and never vetoes a delete.
    if review.operation not in ("CREATE", "UPDATE") or (mutate and review.operation != "CREATE"):
        return allowed(review.uid)
    try:
        response = answer_message("Validate", validate_request(review, gates, mutate),
                                           limits)
    except InvalidInput as exc:
        return invalid(review.uid, review.name, _object_fields(exc.errors))
    except TooLarge as exc:
        return denied(review.uid, 413, "RequestEntityTooLarge", str(exc))
    if mutate:
        # Defaults only: whether the result is valid is the validating webhook's to say, as
        # for upstream's two webhooks.
        return allowed(review.uid, json_patch(review.obj, json.loads(response.object_json)))
    if response.valid:
        return allowed(review.uid)
    return invalid(review.uid, review.name,
                   [FieldError(e.field, e.message) for e in response.errors])
