"""A structural schema's nodes and how the API server checks a value against them: types,
required fields, enums, lengths, minimums and 32/64-bit ranges, maxItems and minItems, and the
x-kubernetes-list-type uniqueness of list maps and list sets (apiextensions' listtype
validation, whose "Duplicate value" shows the key as the API server prints it).

Apart from schema.py, which is what a JobSet's tree of these nodes says, because how a node is
checked is the API server's and holds for any tree.

Messages follow apimachinery's wording where it has one ("Required value", "must have at most
5 items", `unsupported value "X": supported values: ...`); the type errors of these nodes say
what was expected (TYPE_MESSAGES), for the callers that keep them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from decider.core.admission._util import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    byte_len,
    go_json,
    is_int,
    quote,
)
from decider.core.errors import FieldError


@dataclass(frozen=True, slots=True)
class Str:
    enum: tuple[str, ...] = ()
    max_length: int | None = None


@dataclass(frozen=True, slots=True)
class Int:
    minimum: int | None = None
    bits: int = 32


@dataclass(frozen=True, slots=True)
class Bool:
    pass


@dataclass(frozen=True, slots=True)
class StrMap:
    """map[string]string (labels, annotations, nodeSelector)."""


@dataclass(frozen=True, slots=True)
class Obj:
    props: Mapping[str, Node] = field(default_factory=dict)
    required: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Arr:
    items: Node
    max_items: int | None = None
    # x-kubernetes-list-type: map: the x-kubernetes-list-map-keys, in the CRD's order; the
    # combination of their values must be unique across the items.
    map_keys: tuple[str, ...] = ()
    # x-kubernetes-list-type: set: no item may appear twice.
    unique: bool = False
    min_items: int | None = None


Node = Str | Int | Bool | StrMap | Obj | Arr

TYPE_MESSAGES: dict[type, str] = {
    Str: "must be a string",
    Int: "must be an integer",
    Bool: "must be a boolean",
    StrMap: "must be an object",
    Obj: "must be an object",
    Arr: "must be a list",
}
TYPE_TEXTS = frozenset(TYPE_MESSAGES.values())


def unsupported(value: str, allowed: tuple[str, ...]) -> str:
    return f"unsupported value {quote(value)}: supported values: " + ", ".join(
        quote(a) for a in allowed
    )


def check(value: Any, node: Node, path: str, errs: list[FieldError]) -> None:
    """Append the errors of one value against one schema node. None means absent: nulls are
    pruned before validation, and required-ness is the parent object's check."""
    if value is None:
        return
    if isinstance(node, Str):
        if not isinstance(value, str):
            errs.append(FieldError(path, TYPE_MESSAGES[Str]))
        elif node.enum and value not in node.enum:
            errs.append(FieldError(path, unsupported(value, node.enum)))
        elif node.max_length is not None and byte_len(value) > node.max_length:
            errs.append(FieldError(path, f"Too long: may not be more than {node.max_length} "
                                         "bytes"))
    elif isinstance(node, Int):
        if not is_int(value):
            errs.append(FieldError(path, TYPE_MESSAGES[Int]))
            return
        lo, hi = (INT32_MIN, INT32_MAX) if node.bits == 32 else (INT64_MIN, INT64_MAX)
        if not lo <= value <= hi:
            # The webhook decodes into Go int32/int: an out-of-range number fails there.
            errs.append(FieldError(path, f"must be a {node.bits}-bit integer (from {lo} to {hi})"))
        elif node.minimum is not None and value < node.minimum:
            errs.append(FieldError(path, f"must be greater than or equal to {node.minimum}"))
    elif isinstance(node, Bool):
        if not isinstance(value, bool):
            errs.append(FieldError(path, TYPE_MESSAGES[Bool]))
    elif isinstance(node, StrMap):
        if not isinstance(value, dict):
            errs.append(FieldError(path, TYPE_MESSAGES[StrMap]))
            return
        for key, item in value.items():
            if not isinstance(item, str):
                errs.append(FieldError(f"{path}[{key}]", TYPE_MESSAGES[Str]))
    elif isinstance(node, Obj):
        if not isinstance(value, dict):
            errs.append(FieldError(path, TYPE_MESSAGES[Obj]))
            return
        for name in node.required:
            if value.get(name) is None:
                errs.append(FieldError(f"{path}.{name}", "Required value"))
        for name, sub in node.props.items():
            check(value.get(name), sub, f"{path}.{name}", errs)
    elif isinstance(node, Arr):
        check_array(value, node, path, errs)


def check_array(value: Any, node: Arr, path: str, errs: list[FieldError]) -> None:
    if not isinstance(value, list):
        errs.append(FieldError(path, TYPE_MESSAGES[Arr]))
        return
    if node.max_items is not None and len(value) > node.max_items:
        errs.append(FieldError(path, f"must have at most {node.max_items} items"))
    if node.min_items is not None and len(value) < node.min_items:
        errs.append(FieldError(path, f"{path} in body should have at least {node.min_items} "
                                     "items"))
    # The API server reports schema and list-type errors together; each duplicate follows its
    # item's own errors, as the single-key check always has.
    duplicates = _duplicates(value, node)
    for index, item in enumerate(value):
        item_path = f"{path}[{index}]"
        if item is None:
            # A null list item is not pruned; it is simply not of the item type.
            errs.append(FieldError(item_path, TYPE_MESSAGES[type(node.items)]))
        else:
            check(item, node.items, item_path, errs)
        if index in duplicates:
            errs.append(FieldError(item_path, f"Duplicate value: {duplicates[index]}"))


def _duplicates(items: list[Any], node: Arr) -> dict[int, str]:
    """apiextensions' listtype validation of one list: index -> the duplicate value as the
    API server shows it. Each repeated key (set: item) is reported once, at its second
    occurrence. A list map's key is the object of the key fields an item has (an absent key, or
    a null item, counts as unspecified), shown as json.Marshal writes it: keys sorted. Nulls
    are pruned and defaults applied before (ports' protocol TCP), so what is compared is what
    the API server compares."""
    identities: list[tuple[str, str]] = []
    shown: list[str] = []
    if node.map_keys:
        if any(item is not None and not isinstance(item, dict) for item in items):
            # validateListMap refuses a list with a non-object item outright and compares no
            # keys; the item's own type error says what is wrong with it.
            return {}
        for item in items:
            key = {k: item[k] for k in node.map_keys if k in item} if item else {}
            shown.append(go_json(_go_numbers(key)))
            if len(node.map_keys) > 1:
                # Several keys: the key objects themselves are compared (as JSON).
                identities.append(_identity(key))
            elif key:
                # One key: its value alone is compared.
                identities.append(_identity(next(iter(key.values()))))
            else:
                identities.append(("unspecified", ""))
    elif node.unique:
        for item in items:
            identities.append(_identity(item))
            # field.Error prints a string with %q, another scalar with %v, the rest as JSON.
            shown.append(quote(item) if isinstance(item, str) else go_json(_go_numbers(item)))
    counts: dict[tuple[str, str], int] = {}
    out: dict[int, str] = {}
    for index, identity in enumerate(identities):
        counts[identity] = counts.get(identity, 0) + 1
        if counts[identity] == 2:
            out[index] = shown[index]
    return out


def _identity(value: Any) -> tuple[str, str]:
    """What validateListSet compares: objects and lists by their json.Marshal text (80.0 is
    written 80), scalars by Go equality, which tells int64 80 from float64 80 and a string
    from a number, as the JSON text of the Python value does."""
    if isinstance(value, dict | list):
        return ("compound", go_json(_go_numbers(value)))
    return ("scalar", go_json(value))


def _go_numbers(value: Any) -> Any:
    """value with integral floats as ints: Go prints a float64 80 as 80, Python as 80.0."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _go_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_numbers(v) for v in value]
    return value
