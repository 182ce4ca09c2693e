"""What the fake API server can be told to do wrong: error answers, broken watches, list pages.

A `Fault` answers matching requests with an error status. A `WatchFault` accepts a watch (200,
chunked) and then misbehaves the way real connections do: the stream ends at once (a proxy or
a restarting API server), the connection is reset, an event is cut in half, nothing is ever sent
(a half-dead connection), or an ERROR event arrives. Pagination follows the API server: `limit`
and an opaque `continue` token, which expires (410) once the snapshot it was taken at has been
compacted.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError

# metav1.Status reasons of the codes a fault is usually injected with.
FAULT_REASONS = {
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    429: "TooManyRequests",
    503: "ServiceUnavailable",
    504: "Timeout",
}

WATCH_FAULT_MODES = ("close", "reset", "cut", "silent", "error")


@dataclass
class Fault:
    """Answer matching requests with an error instead of serving them."""

    method: str
    path_pattern: str
    code: int = 500
    remaining: int = -1  # -1: until removed
    # Sent as the Retry-After header when set (seconds, or an HTTP date), as API Priority and
    # Fairness does on 429 and an overloaded or starting server may on 503.
    retry_after: str | None = None
    # Only requests whose query has these parameters (e.g. {"watch": "true"}, {"continue": ""}
    # for any value): a list and a watch share a path.
    query: dict[str, str] = field(default_factory=dict)
    # Seconds the answer is held back (an overloaded or distant API server); with code 0 the
    # request is then served as usual, so a slow answer need not be an error.
    delay: float = 0.0
    hits: int = 0
    _re: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._re = re.compile(self.path_pattern)

    def matches(self, method: str, path: str, query: dict[str, str] | None = None) -> bool:
        return (
            (self.method in ("*", method))
            and bool(self._re.search(path))
            and self.remaining != 0
            and _query_matches(self.query, query or {})
        )


@dataclass
class WatchFault:
    """A watch the server accepts and then breaks in `mode` (one of WATCH_FAULT_MODES)."""

    path_pattern: str
    mode: str
    remaining: int = -1
    # For mode "error": the code of the ERROR event's Status.
    code: int = 500
    hits: int = 0
    _re: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in WATCH_FAULT_MODES:
            raise ValueError(f"watch fault mode {self.mode!r} not in {WATCH_FAULT_MODES}")
        self._re = re.compile(self.path_pattern)

    def matches(self, path: str) -> bool:
        return bool(self._re.search(path)) and self.remaining != 0

    def error_status(self) -> dict[str, Any]:
        reason = FAULT_REASONS.get(self.code, "InternalError")
        return ApiError(self.code, reason, f"injected watch error ({self.code})").status()


def _query_matches(wanted: dict[str, str], query: dict[str, str]) -> bool:
    return all(k in query and (not v or query[k] == v) for k, v in wanted.items())


# ---- pagination ---------------------------------------------------------------------------


def encode_continue(rv: str, last_key: tuple[str, str]) -> str:
    raw = json.dumps({"rv": rv, "start": list(last_key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> tuple[str, tuple[str, str]]:
    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(doc["rv"]), (str(doc["start"][0]), str(doc["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
        raise ApiError(400, "BadRequest", f"invalid continue token: {exc}") from exc


def page(
    items: list[dict[str, Any]],
    rv: str,
    query: dict[str, str],
    compacted_rv: int,
) -> tuple[list[dict[str, Any]], str, str]:
    """(the page's items, its resourceVersion, the next continue token or "").

    `items` is the whole list sorted by (namespace, name). A page after the first resumes after
    the token's last key and reports the first page's resourceVersion, as one snapshot would;
    a token older than the compaction is answered 410 Expired, as etcd answers it.
    """
    token = query.get("continue", "")
    start_after: tuple[str, str] | None = None
    if token:
        rv, start_after = decode_continue(token)
        if int(rv) < compacted_rv:
            raise ApiError(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
            )
        items = [i for i in items if _key(i) > start_after]
    limit = int(query.get("limit") or 0)
    if limit <= 0 or len(items) <= limit:
        return items, rv, ""
    out = items[:limit]
    return out, rv, encode_continue(rv, _key(out[-1]))


def _key(item: dict[str, Any]) -> tuple[str, str]:
    meta = item["metadata"]
    return (meta.get("namespace", ""), meta["name"])
