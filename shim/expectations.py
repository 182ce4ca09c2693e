"""What a JobSet's caches must show of the shim's own writes before it is decided again.

A pass's writes come back through the watches a moment after the API server answered them. A
pass that starts in that moment (an event came in while the last one ran) decides on caches that
predate them: it plans again what was just done, and spends a Decide and API requests on nothing:
each create is answered AlreadyExists and read back, a delete sent again, the status write
answered 409 (another pass, a 50 ms retry). At client-go's 5 QPS each wasted request holds the
next useful one back 0.2 s. client-go's controllers keep "expectations" for the same reason
(ReplicaSet, Job); here, per JobSet, and read off the caches themselves, so an event that came
before the write was recorded is no race:

- a status write made against resourceVersion R is seen once the cached JobSet is not at R (the
  API server orders writes: the next version the watch brings is this one or a later one). A
  write that changed nothing keeps R and brings no event: nothing is awaited for it;
- an object created is seen once the cache holds it, with its UID;
- an object deleted is seen once the cache shows it terminating (a deletionTimestamp) or gone;
- an object patched (a Job suspended or resumed, a gang minCount put back) is seen once the
  cached object's resourceVersion is no longer the one it had before the patch was sent.

A pass that finds its JobSet's writes unseen is put off until the event that brings them (which
queues the JobSet again). An expectation unmet after `timeout` (a watch that missed an object
created and deleted while it was away) is dropped, and the pass runs as it would without.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from shim.owned import jobset_owner

Obj = dict[str, Any]
Key = tuple[str, str]
# (namespace, controller UID, kind, name) -> the cached object, if any.
Lookup = Callable[[str, str, str, str], Obj | None]


@dataclass
class _Pending:
    deadline: float
    # The JobSet's UID when the writes were made (a JobSet of the same name later is another).
    uid: str
    # The resourceVersions the JobSet had before each status write awaited: a pass may write
    # twice (a resume's execution attempt first), and the cache showing the first write alone
    # is not the second shown.
    status_before: frozenset[str] | None = None
    # (kind, name, uid, deleted)
    objects: list[tuple[str, str, str, bool]] = field(default_factory=list)
    # (kind, name, resourceVersion the cache had before the patch)
    patched: list[tuple[str, str, str]] = field(default_factory=list)


class Expectations:
    def __init__(self, lookup: Lookup, watched: Iterable[str], timeout: float = 5.0,
                 clock: Callable[[], float] = time.monotonic,
                 by_name: Iterable[str] = ()) -> None:
        """`lookup` reads the cache of what JobSets control; `watched`: the kinds it holds (an
        object of another kind, or one the JobSet does not control, never shows there).
        `by_name`: watched kinds that `lookup` finds by name whoever controls them (a retained
        PVC has no owner at all): a create of one is awaited even without the JobSet's
        controller reference, or the pass right after it could plan it again."""
        self.lookup = lookup
        self.watched = frozenset(watched)
        self.by_name = frozenset(by_name) & self.watched
        self.timeout = timeout
        self.clock = clock
        self._pending: dict[Key, _Pending] = {}
        self._lock = threading.Lock()

    # ---- what the applier wrote -----------------------------------------------------------

    def status_written(self, jobset: Obj, before: str, after: str) -> None:
        if after and after != before:
            with self._lock:
                entry = self._entry(jobset)
                entry.status_before = (entry.status_before or frozenset()) | {before}

    def created(self, jobset: Obj, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        js = jobset["metadata"]
        if (meta.get("uid") and obj.get("kind") in self.watched
                and (obj.get("kind") in self.by_name
                     or jobset_owner(obj) == (js.get("namespace", ""), js.get("uid")))):
            with self._lock:
                self._entry(jobset).objects.append(
                    (str(obj.get("kind", "")), str(meta.get("name", "")), str(meta["uid"]), False))

    def deleted(self, jobset: Obj, kind: str, name: str, uid: str) -> None:
        if uid and kind in self.watched:
            with self._lock:
                self._entry(jobset).objects.append((kind, name, uid, True))

    def cached_version(self, jobset: Obj, kind: str, name: str) -> str:
        """The resourceVersion the cache holds of a JobSet's object, read before it is patched
        ("" if the cache holds none: nothing can then be awaited)."""
        if kind not in self.watched:
            return ""
        js = jobset["metadata"]
        return self._version(js.get("namespace", ""), str(js.get("uid", "")), kind, name)

    def patched(self, jobset: Obj, kind: str, name: str, version_before: str) -> None:
        """A patch the API server accepted: a pass on a cache that still holds the object at
        `version_before` would plan the same patch again (a second write, at 5 QPS)."""
        if version_before:
            with self._lock:
                self._entry(jobset).patched.append((kind, name, version_before))

    def _entry(self, jobset: Obj) -> _Pending:
        meta = jobset["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        entry = self._pending.get(key)
        uid = str(meta.get("uid", ""))
        if entry is None or entry.uid != uid:
            entry = self._pending[key] = _Pending(self.clock() + self.timeout, uid)
        else:
            # The latest write sets how long its JobSet may wait for it.
            entry.deadline = self.clock() + self.timeout
        return entry

    # ---- before a pass --------------------------------------------------------------------

    def unseen(self, key: Key, jobset: Obj | None) -> float | None:
        """Seconds to wait at most for this JobSet's own writes to show; None: decide now."""
        with self._lock:
            entry = self._pending.get(key)
            if entry is None:
                return None
            left = entry.deadline - self.clock()
            meta = (jobset or {}).get("metadata") or {}
            if jobset is None or meta.get("uid") != entry.uid or left <= 0:
                del self._pending[key]
                return None
            if entry.status_before is not None and (
                    meta.get("resourceVersion") not in entry.status_before):
                entry.status_before = None
            entry.objects = [o for o in entry.objects if not self._seen(key[0], entry.uid, o)]
            entry.patched = [p for p in entry.patched
                             if self._version(key[0], entry.uid, p[0], p[1]) == p[2]]
            if entry.status_before is None and not entry.objects and not entry.patched:
                del self._pending[key]
                return None
            return left

    def awaiting(self, key: Key) -> bool:
        """Whether a pass of this JobSet waits for some of its own writes to show."""
        with self._lock:
            return key in self._pending

    def _seen(self, namespace: str, owner: str, expected: tuple[str, str, str, bool]) -> bool:
        kind, name, uid, deleted = expected
        cached = self.lookup(namespace, owner, kind, name)
        meta = (cached or {}).get("metadata") or {}
        if deleted:
            return cached is None or meta.get("uid") != uid or bool(meta.get("deletionTimestamp"))
        return meta.get("uid") == uid

    def _version(self, namespace: str, owner: str, kind: str, name: str) -> str:
        cached = self.lookup(namespace, owner, kind, name)
        return str(((cached or {}).get("metadata") or {}).get("resourceVersion") or "")

    def forget(self, key: Key) -> None:
        with self._lock:
            self._pending.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)
