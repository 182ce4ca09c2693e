"""Resource quantities as the API server writes them (k8s.io/apimachinery pkg/api/resource).

JobSet's mutating webhook decodes the object into Go types and writes it back; on the way
every `resource.Quantity` is parsed (ParseQuantity) and marshalled again (MarshalJSON): the
stored value is a string in canonical form, whether the request had a JSON number or a string.

    4 -> "4"    1.5 -> "1500m"    "1.5Gi" -> "1536Mi"    "1024Mi" -> "1Gi"    12000 -> "12k"

ParseQuantity remembers the text it was given when that text is already canonical in its
narrow sense (the fast int64 path, a suffix exponent that is a multiple of 3 and a numeral
without a leading zero or three trailing zeros; for binary suffixes a numeral not divisible by
8), and MarshalJSON then writes that text verbatim: "+4" stays "+4", "1e3" stays "1e3".

A JSON number does not reach the webhook as the client wrote it: the API server decodes the
request (an integer within int64 as int64, any other number as float64) and encodes the
AdmissionReview with Go's encoding/json, so the webhook parses that text (1e3 -> "1000" ->
"1k"); go_number_text writes a number so.
"""

from __future__ import annotations

import math
import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Decimal, localcontext
from typing import Any

SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT = f"quantities must match the regular expression '{SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_DECIMAL_SI = "DecimalSI"
_BINARY_SI = "BinarySI"
_DECIMAL_EXPONENT = "DecimalExponent"
_DEC_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                 "E": 18}
_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP = {e: s for s, e in _DEC_SUFFIXES.items()}
_BIN_BY_EXP = {e: s for s, e in _BIN_SUFFIXES.items()}
_SUFFIX_CHARS = set("eEinumkKMGTP")
_MAX_INT64 = 2**63 - 1
# Go's unicode.IsSpace, which strings.TrimSpace uses (Python's str.strip also strips \x1c-\x1f).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
            "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_DEC_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)", re.ASCII)


class QuantityError(ValueError):
    """ParseQuantity's error; str() is apimachinery's message."""


def canonical(value: Any) -> str:
    """What the webhook's Go round trip stores for a quantity given as `value` (a JSON
    string or number). Raises QuantityError with apimachinery's message."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        # UnmarshalJSON parses the raw JSON text: true, {...} and [...] are no quantities.
        raise QuantityError(ERR_FORMAT)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise QuantityError(ERR_FORMAT)
        text = go_number_text(value)
    elif isinstance(value, str):
        text = value.strip(_GO_SPACE)
    else:
        raise QuantityError(ERR_FORMAT)
    with localcontext() as ctx:
        # Exact arithmetic, as Go's int64 and inf.Dec: every digit kept, any exponent.
        ctx.prec = len(text) + 40
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        return _marshal(text)


def go_number_text(value: int | float) -> str:
    """A JSON number as the API server re-encodes it: int64 as is, anything else as a float64
    in encoding/json's form (shortest digits; positional from 1e-6 to 1e21, else exponent form
    with `e-07` cleaned to `e-7`)."""
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return str(value)
    f = float(value)
    if f == 0:
        return "0"
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        # Python's repr is in exponent form here too, with the same shortest digits.
        text = repr(f)
        if len(text) >= 4 and text[-4] == "e" and text[-3] == "-" and text[-2] == "0":
            text = text[:-2] + text[-1]
        return text
    return format(Decimal(repr(f)).normalize(), "f")


def _scan(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: sign, numeric text, numerator, denominator, suffix."""
    positive, pos, end = True, 0, len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] != "-"
        pos += 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    if pos >= end:
        return positive, s, s[start:], "", ""
    num = s[start:pos] or "0"
    denom = ""
    if s[pos] == ".":
        pos += 1
        dstart = pos
        while pos < end and s[pos].isascii() and s[pos].isdigit():
            pos += 1
        denom = s[dstart:pos]
        if pos >= end:
            return positive, s, num, denom, ""
    value = s[:pos]
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, s[suffix_start:]
    if s[pos] in "+-":
        pos += 1
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT)
    return positive, value, num, denom, s[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], _DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], _BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        # strconv.ParseInt(suffix[1:], 10, 64), then int32(...) in Go.
        digits = suffix[1:]
        if re.fullmatch(r"[+-]?[0-9]+", digits, re.ASCII) and \
                -(2**63) <= int(digits) <= _MAX_INT64:
            exp = (int(digits) + 2**31) % 2**32 - 2**31
            return 10, exp, _DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def _marshal(s: str) -> str:
    if not s:
        raise QuantityError(ERR_FORMAT)
    if s == "0":
        return "0"
    positive, value, num, denom, suffix = _scan(s)
    base, exponent, fmt = _interpret(suffix)
    amount: Decimal | None = None
    precision = -1
    scale = 0
    mantissa = 1
    if fmt in (_DECIMAL_EXPONENT, _DECIMAL_SI):
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            product = int(shifted) * mantissa
            if product <= _MAX_INT64:
                # The fast path keeps canonical-looking text verbatim (Quantity.s).
                if fmt == _BINARY_SI:
                    if exponent % 10 == 0 and int(shifted) & 0x07:
                        return s
                elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                    return s
                amount = Decimal(product if positive else -product).scaleb(scale)
    if amount is None:
        amount = _slow_amount(positive, value, base, exponent)
        if fmt == _BINARY_SI and 0 < abs(amount) < 1:
            fmt = _DECIMAL_SI
    return _canonical_text(amount, fmt)


def _slow_amount(positive: bool, value: str, base: int, exponent: int) -> Decimal:
    """The inf.Dec path: exact value, rounded away from zero to nano, binary capped at int64."""
    if not _DEC_NUMBER.fullmatch(value):
        raise QuantityError(ERR_NUMERIC)
    amount = abs(Decimal(value))
    amount = amount.scaleb(exponent) if base == 10 else amount * (2 ** exponent)
    # Rounding to nano only changes digits past it (quantize would also pad huge numbers).
    if amount != 0 and amount.as_tuple().exponent < -9:
        amount = amount.quantize(Decimal("1e-9"), rounding=ROUND_UP)
    if base == 2 and amount > _MAX_INT64:
        amount = Decimal(_MAX_INT64)
    return amount if positive else -amount


def _canonical_text(amount: Decimal, fmt: str) -> str:
    """CanonicalizeBytes: as large a suffix as keeps the value exact, no fractional digits."""
    if amount == 0:
        return "0"
    if fmt == _BINARY_SI:
        if -1024 < amount < 1024 or amount != amount.to_integral_value():
            fmt = _DECIMAL_SI
        else:
            n, k = int(amount), 0
            while abs(n) >= 1024 and n % 1024 == 0:
                n, k = n // 1024, k + 1
            return f"{n}{_BIN_BY_EXP.get(10 * k, '')}"
    sign, digits, exp = amount.normalize().as_tuple()
    mantissa = int("".join(map(str, digits))) * (-1 if sign else 1)
    # Exponent down to a multiple of 3, the mantissa growing to match.
    shift = exp % 3
    mantissa *= 10 ** shift
    exp -= shift
    if fmt == _DECIMAL_EXPONENT:
        return f"{mantissa}" + (f"e{exp}" if exp else "")
    # An exponent past the table gets no suffix at all (apimachinery's constructBytes).
    return f"{mantissa}{_DEC_BY_EXP.get(exp, '')}"
