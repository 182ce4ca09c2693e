"""Small helpers shared by the admission modules: JSON-shape predicates, safe reads, paths.

Admission must be total over any JSON-like input, so nothing here ever raises on a value of an
unexpected type: readers return None (or an empty container) and the schema module is the one
place that turns a wrong shape into an error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import MAX_EMAX, MIN_EMIN, Decimal, DecimalException, localcontext
from typing import TYPE_CHECKING, Any

from decider.core.admission import quantity

if TYPE_CHECKING:
    from decider.core.admission.crd import Node

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def is_int(value: Any) -> bool:
    """A JSON integer. bool is an int subclass in Python but a distinct JSON type, so it is
    excluded; a float with an integral value is accepted, as the API server's OpenAPI
    validator does for `type: integer`."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def as_int(value: Any) -> int | None:
    return int(value) if is_int(value) else None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_dict(value: Any) -> dict[str, Any]:
    """The value if it is an object, else an empty dict (never shared with the caller's data
    when it is a fallback, so callers may not mutate what they get for a non-dict)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dig(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]..., or None as soon as a level is missing or not an object."""
    cur = obj
    for key in keys:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def present(obj: Any, key: str) -> bool:
    """CEL's has(): the key exists with a non-null value. Null counts as absent because the
    API server prunes nulls of non-nullable fields before defaulting and validation."""
    return isinstance(obj, dict) and obj.get(key) is not None


def quote(value: str) -> str:
    """Go's %q for the ASCII strings these messages carry (JSON escaping is close enough)."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def go_json(value: Any) -> str:
    """Go's json.Marshal of decoded JSON: compact, map keys sorted, and <, >, &, U+2028 and
    U+2029 escaped (field.Error shows a non-scalar bad value so)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                        ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, escaped)
    return text


def byte_len(value: str) -> int:
    """Go's len() of a string counts UTF-8 bytes; length limits are in bytes."""
    return len(value.encode("utf-8", errors="surrogatepass"))


def _normalize(value: Any) -> Any:
    """Drop what Go's typed round trip cannot tell from absent: null, {} and [] (apimachinery's
    semantic DeepEqual treats nil and empty slices/maps as equal), and integral floats."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            nv = _normalize(v)
            if _empty(nv):
                continue
            out[k] = nv
        return out
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if is_int(value) and isinstance(value, float):
        return int(value)
    return value


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality that, unlike Python's ==, never equates a bool with a number (1 == True in
    Python). Integral floats equal their ints, as the API server's JSON numbers do."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (dict, list)) and len(value) == 0)


def semantic_equal(a: Any, b: Any) -> bool:
    """Equality as the webhook's typed comparison sees it (see _normalize)."""
    na, nb = _normalize(a), _normalize(b)
    if _empty(na) and _empty(nb):
        return True
    return strict_equal(na, nb)


def quantity_value(value: Any) -> Decimal | None:
    """The exact value of a resource quantity as Go parses it (ParseQuantity, rounding
    included), or None when Go cannot parse it. Two quantities are semantically equal when
    these are (Quantity.Cmp == 0): "1Gi", "1024Mi" and 1073741824 are one value."""
    try:
        # canonical() does ParseQuantity's rounding; its text is then exact to evaluate.
        text = quantity.canonical(value)
        match = _QUANTITY_TEXT.fullmatch(text)
        if match is None:
            return None
        base, exponent, _ = quantity._interpret(match.group(2))
        with localcontext() as ctx:
            ctx.prec = len(text) + 40
            ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
            number = Decimal(match.group(1))
            return number.scaleb(exponent) if base == 10 else number * (2**exponent)
    except (quantity.QuantityError, DecimalException, ValueError, OverflowError):
        return None


_QUANTITY_TEXT = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(.*)", re.ASCII | re.S)


def typed_equal(a: Any, b: Any, node: Node) -> bool:
    """apimachinery's equality.Semantic.DeepEqual of the Go values `a` and `b` decode to, for
    a value of the schema node `node` (crd.py's, generated from upstream's CRD and Go types);
    None stands for an absent field.

    What the typed comparison sees that a JSON comparison does not:
    - a non-pointer field (node.absent_as: a struct, a Quantity, a scalar with or without
      omitempty, named string types included) decodes the same absent as at its zero value:
      an absent `template.metadata` equals `{}`, an absent `stdin` equals `false`;
    - any other field is a pointer: absent (nil) differs from a pointer to the zero value, so
      adding `securityContext: {}` or `runAsNonRoot: false` is a change;
    - nil and empty slices and maps are equal (the forked reflect.DeepEqual says so);
    - quantities compare by value (Semantic's Quantity equality is Cmp == 0).
    Values of a shape the node does not expect fall back to semantic_equal."""
    kind = node.kind
    if kind == "quantity":
        if a is None or b is None:
            return a is None and b is None
        va, vb = quantity_value(a), quantity_value(b)
        if va is None or vb is None:
            # Unparseable (the webhook's decoding would refuse it): compare the text.
            return strict_equal(a, b)
        return va == vb
    if kind == "map" and node.child is not None:
        a, b = {} if a is None else a, {} if b is None else b
        if not isinstance(a, dict) or not isinstance(b, dict):
            return semantic_equal(a, b)
        return a.keys() == b.keys() and all(typed_equal(a[k], b[k], node.child) for k in a)
    if kind == "array" and node.child is not None:
        a, b = [] if a is None else a, [] if b is None else b
        if not isinstance(a, list) or not isinstance(b, list):
            return semantic_equal(a, b)
        return len(a) == len(b) and all(
            typed_equal(x, y, node.child) for x, y in zip(a, b, strict=True)
        )
    if kind == "object" and node.props:
        a, b = {} if a is None else a, {} if b is None else b
        if not isinstance(a, dict) or not isinstance(b, dict):
            return semantic_equal(a, b)
        absent_as = node.absent_as
        for key in a.keys() | b.keys():
            va, vb = a.get(key), b.get(key)
            sub = node.props.get(key)
            if sub is None:
                # Unknown to the Go type (strict decoding refuses it before this): as before.
                if not semantic_equal(va, vb):
                    return False
                continue
            if key in absent_as:
                zero = absent_as[key]
                va = zero if va is None else va
                vb = zero if vb is None else vb
            elif sub.kind == "object" and (va is None) != (vb is None):
                # A pointer to a struct: nil is not a pointer to the zero struct.
                return False
            if not typed_equal(va, vb, sub):
                return False
        return True
    if kind == "object":
        # A free-form object (no properties in the schema): the JSON view.
        return semantic_equal(a, b)
    # Scalars: both absent, or the same JSON value (an absent pointer is not its zero).
    if a is None or b is None:
        return a is None and b is None
    return strict_equal(a, b)


def gate_values(feature_gates: Any, known: Mapping[str, bool]) -> dict[str, bool]:
    """Known gates with the caller's overrides. Unknown names and non-bool values are ignored:
    admission judges the object, and a caller's configuration typo is not the object's error."""
    gates = dict(known)
    if isinstance(feature_gates, Mapping):
        for name, value in feature_gates.items():
            if name in gates and isinstance(value, bool):
                gates[name] = value
    return gates
