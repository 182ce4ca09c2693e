"""Kubernetes resource quantities ("500m", "1Gi", "2", "1e3"), exactly, as apimachinery reads them.

A quantity is a signed decimal number with an optional suffix: binary SI (Ki, Mi, Gi, Ti, Pi,
Ei), decimal SI (n, u, m, k, M, G, T, P, E) or a decimal exponent (e3, E-2). Values are kept as
exact fractions, so sums are exact, and turned into integers only at the end the way Kueue does
(`resources.ResourceValue`): millicores for cpu, whole units rounded up for everything else,
clamped to int64.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from decider.core.errors import InvalidInput

INT64_MAX = 2**63 - 1
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?", re.ASCII)
# apimachinery refuses exponents this large long before any real request gets near them; the
# bound keeps 10**exp from costing anything.
_MAX_EXPONENT = 1000


def parse(value: Any, path: str) -> Fraction:
    """The quantity at `path` (a string, or a JSON number as the API server also accepts)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidInput.at(path, "must be a quantity string such as \"500m\" or \"1Gi\"")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput.at(path, "is a number out of range")
        return Fraction(value).limit_denominator(10**9)
    text = str(value)
    m = _QUANTITY.fullmatch(text)
    if not text or m is None or not (m["int"] or m["frac"]):
        raise InvalidInput.at(path, f"{text!r} is not a quantity (e.g. \"500m\", \"1Gi\", "
                                    "\"2\")")
    number = Fraction(int(m["int"] or "0"))
    if m["frac"]:
        number += Fraction(int(m["frac"]), 10 ** len(m["frac"]))
    if m["exp"] is not None:
        exp = int(m["exp"])
        if abs(exp) > _MAX_EXPONENT:
            raise InvalidInput.at(path, f"{text!r}: the exponent is out of range")
        number *= Fraction(10) ** exp
    elif m["suffix"]:
        number *= _BINARY.get(m["suffix"]) or _DECIMAL[m["suffix"]]
    return -number if m["sign"] == "-" else number


def kueue_value(name: str, amount: Fraction) -> int:
    """Kueue's integer for a resource: millicores for cpu, whole units for the rest, each
    rounded up (apimachinery's MilliValue and Value) and clamped to int64."""
    scaled = amount * 1000 if name == "cpu" else amount
    return max(-INT64_MAX - 1, min(INT64_MAX, math.ceil(scaled)))


def saturating_mul(a: int, b: int) -> int:
    """a x b clamped to int64, as Kueue scales a pod's requests by the pod count."""
    return max(-INT64_MAX - 1, min(INT64_MAX, a * b))
