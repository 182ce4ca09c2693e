"""Kueue's multi-layer slice topology annotation, read as Kueue reads it.

`kueue.x-k8s.io/podset-slice-required-topology-constraints` holds a JSON array of
`{"topology": <node label>, "size": <pods per slice>}` layers. Kueue's TASMultiLayerTopology gate
is Beta and on by default since Kueue 0.19, so jobframework's topology request builder decodes
it with Go's encoding/json into `[]PodsetSliceRequiredTopologyConstraint` and, when it is present,
uses it instead of the two-level `podset-slice-required-topology` / `podset-slice-size` pair.

Go's decoder differs from Python's `json` in ways that change the answer, so they are kept:
- keys match the field names exactly or case-insensitively, unknown keys are ignored, and when
  a key repeats the last value wins;
- `null` leaves a field (or a whole layer) at its zero value;
- `size` must be a JSON integer literal that fits int32 (`4.0` and `4e0` are refused);
- NaN and Infinity are not JSON.
"""

from __future__ import annotations

import json
from typing import Any

from decider.core.errors import InvalidInput

CONSTRAINTS_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
MAX_LAYERS = 3
_GO_TYPE = "[]v1beta2.PodsetSliceRequiredTopologyConstraint"
_INT32 = (-(2**31), 2**31 - 1)


class _Object(list[tuple[str, Any]]):
    """A JSON object's members in document order (repeated keys kept, as Go sees them)."""


def _json_kind(value: Any) -> str:
    """Go's name for a JSON value's kind in an UnmarshalTypeError."""
    if isinstance(value, _Object):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    return "number"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def _layer(raw: Any, index: int) -> dict[str, Any]:
    """One layer as Go decodes it into the struct: zero values for what is absent or null."""
    if raw is None:
        return {"topology": "", "size": 0}
    if not isinstance(raw, _Object):
        raise ValueError(f"json: cannot unmarshal {_json_kind(raw)} into Go value of type "
                         f"v1beta2.PodsetSliceRequiredTopologyConstraint (element {index})")
    topology, size = "", 0
    for key, value in raw:
        # encoding/json folds case when no field matches exactly; both names are plain ASCII.
        name = key.casefold()
        if value is None or name not in ("topology", "size"):
            continue
        if name == "topology":
            if not isinstance(value, str):
                raise ValueError(f"json: cannot unmarshal {_json_kind(value)} into Go struct "
                                 "field PodsetSliceRequiredTopologyConstraint.topology of type "
                                 "string")
            topology = value
        else:
            # Python reads 4.0 and 4e0 as floats; Go refuses both for an int32 field.
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not _INT32[0] <= value <= _INT32[1]:
                shown = json.dumps(value) if not isinstance(value, _Object) else "object"
                raise ValueError(f"json: cannot unmarshal {_json_kind(value)} {shown} into Go "
                                 "struct field PodsetSliceRequiredTopologyConstraint.size of "
                                 "type int32")
            size = value
    return {"topology": topology, "size": size}


def slice_constraints(text: str, path: str) -> list[dict[str, Any]]:
    """The layers Kueue puts in `podsetSliceRequiredTopologyConstraints`, or InvalidInput with
    Kueue's own refusal (its PodSets call fails, so the object never gets a Kueue Workload)."""
    where = f"{path}[{CONSTRAINTS_ANNOTATION}]"
    try:
        doc = json.loads(text, object_pairs_hook=_Object, parse_constant=_refuse_constant)
        if doc is None:
            layers: list[dict[str, Any]] = []
        elif isinstance(doc, _Object) or not isinstance(doc, list):
            raise ValueError(f"json: cannot unmarshal {_json_kind(doc)} into Go value of type "
                             f"{_GO_TYPE}")
        else:
            layers = [_layer(raw, i) for i, raw in enumerate(doc)]
    except ValueError as exc:  # json.JSONDecodeError is a ValueError too
        raise InvalidInput.at(where, "failed to parse multi-layer topology constraints "
                                     f"annotation: {exc}") from None
    if not 1 <= len(layers) <= MAX_LAYERS:
        raise InvalidInput.at(where, f"topology constraints must contain between 1 and "
                                     f"{MAX_LAYERS} entries: got {len(layers)}")
    return layers
