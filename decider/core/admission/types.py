"""The CRD structural schema's type check of a JobSet's spec, at every level the schema covers
(replicated Jobs' templates down to the last pod field), with the API server's wording.

The API server validates a custom resource with kube-openapi's schema validator
(pkg/validation/validate): its type validator reports a value of the wrong JSON type as
`<path> in body must be of type <type>: "<actual>"`, which apiextensions turns into a
`field.TypeInvalid` at that path (kubeOpenAPIResultToFieldErrors), written
`<path>: Invalid value: "<actual>": <path> in body must be of type <type>: "<actual>"`.
The validator's quirks are kept:

- An integer field accepts a JSON number with an integral value (2.0), never 1.5.
- Where the schema gives a format (int32 and int64 on integers, date-time on the condition
  times of a PVC template's status), a value that is not a string, not a list and not of the
  schema's type is reported against the format instead, with the Go format of the value:
  `must be of type int32: "float64"` for 1.5, `must be of type int32: ""` for true or an
  object. A list, or a string given to an integer, is reported against the type (`must be of
  type integer: "string"`); a list given to a date-time string passes the type check. (Whether
  a date-time string parses, the format validator's question, is not asked here.)
- x-kubernetes-int-or-string (IntOrString, and quantities) has the types integer and string,
  and the CRD adds `anyOf: [{type: integer}, {type: string}]`: a value of neither gets the
  type error, the anyOf error (not a *Validation error, so it has no field: `<nil>`), and the
  first alternative's type error.
- null: the API server prunes a null object property or map value before validation (it
  defaults it if the schema has a default; no JobSet field is nullable: crd.copy_pruned), so
  only a null list item reaches the validator, as `must be of type <type>: "null"`.
- Neither status (the status subresource: a create drops it, an update keeps the old one) nor
  metadata (decoded by the API server's own ObjectMeta code) is checked here.

Whatever fails this check also blocks the CRD's CEL rules (apiextensions' hasBlockingErr):
they are not evaluated, and the API server says so once (CEL_SKIPPED).

On create, upstream's mutating webhook decodes the object into Go types before the schema is
checked, and Go's decoder refuses most of these values first (`json: cannot unmarshal string
into Go struct field ...`, no field path); the schema's errors are given for both operations,
except for a quantity, whose decoding error create.py reports instead (skip).

A field's format is not in the generated schema data (a node is shared by every field of its
kind), so the integer formats are listed here by field name, from upstream's CRD, where no
name has two formats.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from decider.core.admission import crd
from decider.core.admission._util import is_int, quote
from decider.core.errors import FieldError

# Integer fields of the CRD with format int64 (an array's name for its items); every other
# integer field is int32, except these two Go `int` fields, which have no format.
_INT64 = frozenset({
    "activeDeadlineSeconds", "expirationSeconds", "fsGroup", "runAsGroup", "runAsUser",
    "seconds", "supplementalGroups", "terminationGracePeriodSeconds", "tolerationSeconds",
})
_NO_FORMAT = frozenset({"jobIndex", "podIndex"})
# String fields with a format kube-openapi knows (type-checked against it, see above).
_DATE_TIME = frozenset({"lastProbeTime", "lastTransitionTime"})
_DATE_TIME_FORMAT = "date-time"

CEL_SKIPPED = FieldError(
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)
_MARK = " in body must be of type "


def type_errors(spec: Any, skip: Collection[str] = ()) -> list[FieldError]:
    """The type errors of a (pruned, defaulted) JobSet spec, in the order of its keys. skip:
    paths whose value another check already refused (a quantity the webhook cannot decode)."""
    errs: list[FieldError] = []
    if spec is not None:
        _walk(spec, crd.SPEC, "spec", "spec", errs, skip)
    return errs


def blocks_cel(errs: list[FieldError]) -> bool:
    """A type error stops the CEL rules from running (hasBlockingErr)."""
    return any(_MARK in e.message for e in errs)


def _json_type(value: Any) -> str:
    """kube-openapi's name for the JSON type of a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_format(value: Any) -> str:
    """The format kube-openapi infers from the Go type the API server decoded a value to."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return ""


# A path is built only for an error: the walk passes (parent, key or index) pairs down.
_Path = str | tuple[Any, str | int]


def _render(path: _Path) -> str:
    steps: list[str | int] = []
    while isinstance(path, tuple):
        path, step = path
        steps.append(step)
    out = [path]
    for step in reversed(steps):
        out.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return "".join(out)


def _error(raw: _Path, expected: str, actual: str) -> FieldError:
    path = _render(raw)
    return FieldError(path, f'Invalid value: "{actual}": {path}{_MARK}{expected}: "{actual}"')


# The scalar kinds each exact Python type satisfies: most values of a big JobSet are such
# scalars, and telling them apart here spares a call and a path for each.
_FITS: dict[type, frozenset[str]] = {
    str: frozenset({"string", "int-or-string", "quantity"}),
    int: frozenset({"integer", "number", "int-or-string", "quantity"}),
    bool: frozenset({"boolean"}),
}
_NOTHING: frozenset[str] = frozenset()


def _fits(value: Any, kind: str) -> bool:
    return kind in _FITS.get(type(value), _NOTHING)


def _walk(value: Any, node: crd.Node, path: _Path, name: str, errs: list[FieldError],
          skip: Collection[str]) -> None:
    kind = node.kind
    if kind == "object":
        if isinstance(value, dict):
            props = node.props
            for key, sub in value.items():
                child = props.get(key)
                # An unknown field is strict decoding's error; a null property was pruned.
                if child is not None and sub is not None and not _fits(sub, child.kind):
                    _walk(sub, child, (path, key), key, errs, skip)
        else:
            errs.append(_error(path, "object", _json_type(value)))
    elif kind == "array":
        if isinstance(value, list):
            item = node.child
            if item is not None:
                kind = item.kind
                for i, sub in enumerate(value):
                    if not _fits(sub, kind):
                        _walk(sub, item, (path, i), name, errs, skip)
        else:
            errs.append(_error(path, "array", _json_type(value)))
    elif kind == "map":
        if isinstance(value, dict):
            item = node.child
            if item is not None:
                kind = item.kind
                for key, sub in value.items():
                    if sub is not None and not _fits(sub, kind):
                        _walk(sub, item, (path, key), name, errs, skip)
        else:
            errs.append(_error(path, "object", _json_type(value)))
    elif kind == "string":
        if not isinstance(value, str):
            _scalar_error(value, "string", _DATE_TIME_FORMAT if name in _DATE_TIME else "",
                          path, errs)
    elif kind == "integer":
        if not is_int(value):
            fmt = "" if name in _NO_FORMAT else "int64" if name in _INT64 else "int32"
            _scalar_error(value, "integer", fmt, path, errs)
    elif kind == "boolean":
        if not isinstance(value, bool):
            errs.append(_error(path, "boolean", _json_type(value)))
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errs.append(_error(path, "number", _json_type(value)))
    elif kind in ("int-or-string", "quantity") and not (
            isinstance(value, str) or is_int(value)):
        _int_or_string_error(value, _render(path), errs, skip)
    # "any": preserved as it is, never validated.


def _int_or_string_error(value: Any, path: str, errs: list[FieldError],
                         skip: Collection[str]) -> None:
    if path in skip:
        return
    actual = _json_type(value)
    errs.append(_error(path, "integer,string", actual))
    if value is not None:
        # The anyOf: its own error (no field), then the errors of its first alternative, as
        # both alternatives fail alike.
        errs.append(FieldError(
            "<nil>", f'Invalid value: "": {quote(path)} must validate at least one schema '
                     "(anyOf)"))
        errs.append(_error(path, "integer", actual))



def _scalar_error(value: Any, expected: str, fmt: str, path: _Path,
                  errs: list[FieldError]) -> None:
    """kube-openapi's typeValidator for a value not of the expected scalar type."""
    actual = _json_type(value)
    if value is None:
        errs.append(_error(path, expected, actual))
    elif fmt and actual not in ("string", "array"):
        # The format check comes first for anything but a string or a list.
        errs.append(_error(path, fmt, _go_format(value)))
    elif fmt and expected == "string":
        # A list given to a formatted string passes the type check.
        return
    else:
        errs.append(_error(path, expected, actual))
