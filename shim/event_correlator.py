"""What becomes of an event before it is written: counted, combined, or dropped, as client-go's
event correlator (tools/record/events_cache.go) decides for every recorder, upstream JobSet's
included.

- **Counted**: the same event again (same source, object, type, reason and message) is not a new
  Event object: the first one's `count` goes up and its `lastTimestamp` moves (a merge patch).
- **Combined**: the tenth distinct message within ten minutes for the same source, object, type
  and reason, and every later one, is written as one event, `(combined from similar events):
  <message>`, counted as above.
- **Dropped**: each source and object has a token bucket of 25 events, refilled one every five
  minutes: a decider answering with 20,000 Event actions, or a JobSet that is always unhealthy,
  writes 25, then one every five minutes. A count going up takes a token too.

Only the write is affected: a pass never waits for an event either way (shim/event_sink.py).
The caches hold at most 4,096 keys each, least recently used dropped first, as client-go's.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Obj = dict[str, Any]

CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Lru(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: collections.OrderedDict[K, V] = collections.OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class _Bucket:
    tokens: float
    last: float


@dataclass
class _Aggregate:
    messages: set[str]
    last: float


@dataclass
class _Seen:
    name: str
    count: int
    first_timestamp: str


@dataclass(frozen=True)
class Write:
    """What to send: `patch` the event named in `body` (its count and times), or, without a
    patch, create `body`. An event counted after it expired (events live an hour) is created
    again from `body`, under the same name and with its count, as client-go's recorder does."""

    body: Obj
    patch: Obj | None = None


class EventCorrelator:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
        aggregate_max: int = AGGREGATE_MAX_EVENTS,
        aggregate_interval: float = AGGREGATE_INTERVAL,
        cache_entries: int = CACHE_ENTRIES,
    ) -> None:
        self._clock = clock
        self.burst = burst
        self.qps = qps
        self.aggregate_max = aggregate_max
        self.aggregate_interval = aggregate_interval
        self._buckets: _Lru[tuple[str, ...], _Bucket] = _Lru(cache_entries)
        self._aggregates: _Lru[tuple[str, ...], _Aggregate] = _Lru(cache_entries)
        self._seen: _Lru[tuple[str, ...], _Seen] = _Lru(cache_entries)
        self._lock = threading.Lock()
        self.dropped = 0

    def correlate(self, body: Obj) -> Write | None:
        """The write `body` (a whole core/v1 Event as the recorder builds it) becomes, or None
        when the source's budget for this object is spent."""
        now = self._clock()
        with self._lock:
            body, key = self._aggregate(body, now)
            write = self._observe(body, key)
            if not self._allow(_object_key(body), now):
                self.dropped += 1
                return None
            return write

    def _aggregate(self, body: Obj, now: float) -> tuple[Obj, tuple[str, ...]]:
        group = (*_object_key(body), body.get("type", ""), body.get("reason", ""),
                 body.get("reportingComponent", ""), body.get("reportingInstance", ""))
        record = self._aggregates.get(group)
        if record is None or now - record.last > self.aggregate_interval:
            record = _Aggregate(set(), now)
        message = str(body.get("message", ""))
        record.messages.add(message)
        record.last = now
        self._aggregates.put(group, record)
        if len(record.messages) < self.aggregate_max:
            return body, (*group, message)
        # Keep the set at most this large; the combined event's key is the group's own.
        record.messages.discard(next(iter(record.messages)))
        combined = {**body, "message": COMBINED_PREFIX + message}
        return combined, (*group, COMBINED_PREFIX)

    def _observe(self, body: Obj, key: tuple[str, ...]) -> Write:
        seen = self._seen.get(key)
        if seen is None:
            self._seen.put(key, _Seen(body["metadata"]["name"], int(body.get("count", 1)),
                                      str(body.get("firstTimestamp", ""))))
            return Write(body)
        seen.count += 1
        self._seen.put(key, seen)
        counted = {**body, "metadata": {**body["metadata"], "name": seen.name},
                   "count": seen.count, "firstTimestamp": seen.first_timestamp}
        patch = {"count": seen.count, "lastTimestamp": body.get("lastTimestamp"),
                 "message": body.get("message")}
        return Write(counted, patch)

    def _allow(self, key: tuple[str, ...], now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) * self.qps)
        bucket.last = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        self._buckets.put(key, bucket)
        return allowed


def _object_key(body: Obj) -> tuple[str, ...]:
    source = body.get("source") or {}
    obj = body.get("involvedObject") or {}
    return (str(source.get("component", "")), str(source.get("host", "")),
            str(obj.get("kind", "")), str(obj.get("namespace", "")), str(obj.get("name", "")),
            str(obj.get("uid", "")), str(obj.get("apiVersion", "")))
