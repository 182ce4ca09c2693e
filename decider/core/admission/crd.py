"""The CRD's full structural schema (generated into _crd_data from upstream's CRD and Go types)
and what the API server does with it before validation:

- unknown_fields: strict decoding (`kubectl`'s default field validation). The API server prunes
  every field the schema does not know and, when strict, answers `strict decoding error:
  unknown field "spec.foo"` instead. The schema covers every level, pod templates included
  (upstream's CRD embeds the full Job and pod schemas and marks nothing
  x-kubernetes-preserve-unknown-fields), so a typo in a container is found like one in spec.
- go_round_trip: the mutating webhook decodes the JobSet into Go types and patches in what
  json.Marshal writes back: the zero value of every field without `omitempty` (a replicated
  Job's `name: ""`, `onPodConditions[].status: ""`), `{}` for every struct (`resources: {}`),
  and each resource quantity in canonical form (4 -> "4"). controller-runtime drops the
  patch's removals, so nothing the request had goes away.
- quantity_errors: what the webhook's decoding refuses (a quantity Go cannot parse), and on
  update, where no webhook mutates, what the CRD's quantity pattern refuses.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from decider.core.admission import _crd_data, quantity
from decider.core.errors import FieldError
from decider.core.go_regex import compile_go_regex


@dataclass(slots=True)
class Node:
    kind: str
    props: dict[str, Node] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    # Items of an array, values of a map.
    child: Node | None = None
    # What json.Marshal writes for a property left out (go_round_trip): omitempty matters.
    zeros: tuple[tuple[str, Any], ...] = ()
    # What Go decodes a left-out property to, where that is not nil (typed_equal): every
    # non-pointer field has its zero, omitempty or not. Kept apart from `zeros`: an omitempty
    # `bool` decodes absent as false but is never written back as false.
    absent_as: dict[str, Any] = field(default_factory=dict)


def _absent_as(props: dict[str, Node], zeros: tuple[tuple[str, Any], ...],
               decoded: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    # A non-scalar in `zeros` (a struct's {}, a Quantity's "0", an IntOrString's 0) is a Go
    # value, so its written zero is also what an absent one decodes to; scalars come only from
    # the generator's decoded zeros, which know pointer from value.
    out = {name: zero for name, zero in zeros if props[name].kind not in _SCALAR_KINDS}
    out.update(decoded)
    return out


_SCALAR_KINDS = ("string", "integer", "number", "boolean")


def _build() -> list[Node]:
    nodes: list[Node] = []
    # The generator emits children before their parents.
    for raw in _crd_data.NODES:
        kind = raw[0]
        if kind == "object":
            props = {name: nodes[i] for name, i in raw[1]}
            nodes.append(Node(kind, props, raw[2], zeros=raw[3],
                              absent_as=_absent_as(props, raw[3], raw[4])))
        elif kind in ("array", "map"):
            nodes.append(Node(kind, child=nodes[raw[1]]))
        else:
            nodes.append(Node(kind))
    return nodes


_NODES = _build()
SPEC = _NODES[_crd_data.SPEC]
STATUS = _NODES[_crd_data.STATUS]
_STRING = Node("string")
_ANY = Node("any")  # raw JSON to its decoder (managedFields[].fieldsV1)
_OBJECT_META_NODE = Node("object", {
    **{k: _STRING for k in ("name", "generateName", "namespace", "selfLink", "uid",
                            "resourceVersion", "creationTimestamp", "deletionTimestamp")},
    "generation": Node("integer"), "deletionGracePeriodSeconds": Node("integer"),
    "labels": Node("map", child=_STRING), "annotations": Node("map", child=_STRING),
    "finalizers": Node("array", child=_STRING),
    "ownerReferences": Node("array", child=Node("object", {
        "apiVersion": _STRING, "kind": _STRING, "name": _STRING, "uid": _STRING,
        "controller": Node("boolean"), "blockOwnerDeletion": Node("boolean")})),
    "managedFields": Node("array", child=Node("object", {
        "manager": _STRING, "operation": _STRING, "apiVersion": _STRING, "time": _STRING,
        "fieldsType": _STRING, "fieldsV1": _ANY, "subresource": _STRING})),
})
# spec.scheduling is in the generated data (tools/crd/scheduling.yaml, upstream's newest
# API): strict decoding knows its fields and reports a superseded spelling as unknown.
ROOT = Node("object", {"apiVersion": _STRING, "kind": _STRING, "metadata": _OBJECT_META_NODE,
                       "spec": SPEC, "status": STATUS})

_ROOT_META = ("apiVersion", "kind", "metadata")


def copy_pruned(obj: Any) -> Any:
    """A deep copy without the nulls of known fields, as the API server prunes them
    (PruneNonNullableNullsWithoutDefaults: no JobSet field is nullable; a null that has a
    default is defaulted after, as if absent), and whole numbers written as integers, as it
    stores them. Unknown fields are copied as they are: strict decoding reports them, nulls
    included."""
    return _copy(obj, ROOT)


def _copy(value: Any, node: Node | None) -> Any:
    if node is _ANY:
        node = None
    if isinstance(value, dict):
        out = {}
        for key, sub in value.items():
            known = _sub_node(node, key)
            if sub is None and known is not None:
                continue
            out[key] = _copy(sub, known)
        return out
    if isinstance(value, list):
        item = node.child if node is not None and node.kind == "array" else None
        return [_copy(v, item) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        # Go's encoding/json writes a whole float64 as an integer (2.0 is stored as 2).
        return int(value)
    return value


def _sub_node(node: Node | None, key: str) -> Node | None:
    if node is None:
        return None
    if key in node.props:
        return node.props[key]
    return node.child if node.kind == "map" else None


def unknown_fields(obj: Any) -> list[str]:
    """Paths of the fields strict decoding reports, in the API server's order: those of the
    root metadata as its decoder meets them, then the schema's, sorted."""
    if not isinstance(obj, dict):
        return []
    found = _unknown_meta(obj.get("metadata"))
    pruned: list[str] = []
    for key, value in obj.items():
        if key in _ROOT_META:
            continue
        node = {"spec": SPEC, "status": STATUS}.get(key)
        if node is None:
            pruned.append(key)
        else:
            _prune(value, node, key, pruned)
    # Go's sort.Strings orders bytes; UTF-8 bytes order as code points do.
    return found + sorted(pruned)


def _unknown_meta(meta: Any) -> list[str]:
    """metav1.ObjectMeta decoded strictly: unknown paths in the order the decoder meets them."""
    if not isinstance(meta, dict):
        return []
    out: list[str] = []
    for key, value in meta.items():
        node = _OBJECT_META_NODE.props.get(key)
        if node is None:
            out.append(f"metadata.{key}")
        elif node.kind == "array" and node.child is not None and node.child.props \
                and isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    out.extend(f"metadata.{key}[{i}].{k}" for k in item
                               if k not in node.child.props)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(value: Any, node: Node | None, path: str, out: list[str]) -> None:
    """Upstream's structural pruning: a key the node does not know is unknown; under no node at
    all (an array item of a non-array node, say) every key is."""
    if node is not None and node.kind == "any":
        return  # preserved whole, as x-kubernetes-preserve-unknown-fields does
    if isinstance(value, dict):
        for key, sub in value.items():
            if node is not None and key in node.props:
                _prune(sub, node.props[key], _join(path, key), out)
            elif node is not None and node.kind == "map":
                _prune(sub, node.child, _join(path, key), out)
            else:
                out.append(_join(path, key))
    elif isinstance(value, list):
        item = node.child if node is not None and node.kind == "array" else None
        for i, sub in enumerate(value):
            _prune(sub, item, f"{path}[{i}]", out)


def go_round_trip(spec: Any) -> list[FieldError]:
    """Apply the webhook's Go round trip to a JobSet spec in place; returns the decoding errors
    (quantities Go cannot parse, which then keep their value)."""
    errs: list[FieldError] = []
    _round_trip(spec, SPEC, "spec", errs)
    return errs


def _round_trip(value: Any, node: Node, path: str, errs: list[FieldError]) -> Any:
    if node.kind == "quantity":
        try:
            return quantity.canonical(value)
        except quantity.QuantityError as exc:
            errs.append(FieldError(path, str(exc)))
            return value
    if node.kind == "object" and isinstance(value, dict):
        for name, zero in node.zeros:
            if name not in value:
                value[name] = {} if zero == {} else zero
        for name, sub in node.props.items():
            if name in value:
                value[name] = _round_trip(value[name], sub, f"{path}.{name}", errs)
    elif node.kind == "map" and isinstance(value, dict) and node.child is not None:
        for key in value:
            value[key] = _round_trip(value[key], node.child, f"{path}.{key}", errs)
    elif node.kind == "array" and isinstance(value, list) and node.child is not None:
        for i, item in enumerate(value):
            value[i] = _round_trip(item, node.child, f"{path}[{i}]", errs)
    return value


def quantity_errors(spec: Any) -> list[FieldError]:
    """Quantities the webhook's decoding refuses, without changing anything."""
    errs: list[FieldError] = []
    _each_quantity(spec, SPEC, "spec", lambda p, v: _check_parse(p, v, errs))
    return errs


def quantity_pattern_errors(spec: Any) -> list[FieldError]:
    """On update no webhook rewrites quantities: the CRD's schema takes an integer, or a string
    matching its pattern (kube-openapi's message). Any other type is types.py's error."""
    errs: list[FieldError] = []

    def check(path: str, value: Any) -> None:
        if isinstance(value, str) and not _quantity_re().matches(value):
            errs.append(FieldError(path, f"{path} in body should match "
                                         f"'{_crd_data.QUANTITY_PATTERN}'"))

    _each_quantity(spec, SPEC, "spec", check)
    return errs


@functools.cache
def _quantity_re() -> Any:
    compiled = compile_go_regex(_crd_data.QUANTITY_PATTERN)
    assert compiled is not None
    return compiled


def _check_parse(path: str, value: Any, errs: list[FieldError]) -> None:
    try:
        quantity.canonical(value)
    except quantity.QuantityError as exc:
        errs.append(FieldError(path, str(exc)))


def _each_quantity(value: Any, node: Node, path: str, visit: Any) -> None:
    if node.kind == "quantity":
        if value is not None:
            visit(path, value)
    elif node.kind == "object" and isinstance(value, dict):
        for name, sub in node.props.items():
            if name in value:
                _each_quantity(value[name], sub, f"{path}.{name}", visit)
    elif node.kind == "map" and isinstance(value, dict) and node.child is not None:
        for key, sub in value.items():
            _each_quantity(sub, node.child, f"{path}.{key}", visit)
    elif node.kind == "array" and isinstance(value, list) and node.child is not None:
        for i, item in enumerate(value):
            _each_quantity(item, node.child, f"{path}[{i}]", visit)
