"""The JSON of the shim's requests and of the API server's answers, lists and watch events.

orjson writes and reads it; the standard library takes over for what orjson refuses (an integer
past 64 bits). The official client's own path walks a body to sanitize it and writes and reads
JSON with the standard library: at 1,000 JobSets that was a fifth of the shim's CPU
(bench/shim_scale.py --profile).

Its own module so that every decode of the shim goes through one name, ``loads``: callers look
it up at each call, which is also where tests/shim/pass_cost.py swaps in a counting decoder.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(body: Any) -> bytes:
    """A request body as JSON: orjson, or the standard library for what orjson refuses (an
    integer past 64 bits)."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body).encode()


def loads(data: bytes | str) -> Any:
    """An answer's JSON, read as `dumps` writes it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
