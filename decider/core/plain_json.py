"""JSON that every encoder writes alike, and copies of it through orjson.

Plain JSON here is strings, booleans, nulls, integers within 64 bits, lists and dicts with
string keys: for such data orjson reads and writes exactly what json does (compact separators,
non-ASCII as UTF-8), several times faster. Floats are left out: the two libraries spell some
of them differently (1e-05 against 1e-5), and so are integers beyond 64 bits, which orjson
refuses to write and reads as floats.
"""

from __future__ import annotations

from typing import Any

import orjson

_MIN_INT = -(2**63)
_MAX_INT = 2**64 - 1


def is_plain(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is int:
            if not _MIN_INT <= item <= _MAX_INT:
                return False
        elif not (kind is str or kind is bool or item is None):
            return False
    return True


def plain_bytes(value: Any) -> bytes | None:
    """orjson's encoding of `value` when it is plain JSON (json's, byte for byte); else None."""
    if not is_plain(value):
        return None
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # a lone surrogate: no UTF-8 for it
        return None
