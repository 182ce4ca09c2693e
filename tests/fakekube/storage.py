"""The fake API server's storage, as etcd and the watch cache give it to kube-apiserver: objects
by resource, one global resourceVersion counter, a bounded event history per resource (a watch
from before it gets 410 Gone), open watches fed as objects change, and in-process listeners.

Apart from store.py, which gives writes the API's meaning (preconditions, subresources,
finalizers, deletion), because what is kept and who is told does not depend on what a write
means.
"""

from __future__ import annotations

import collections
import copy
import json
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .errors import ApiError, not_found
from .resources import ResourceType
from .selection import parse_field_selector, parse_label_selector

Obj = dict[str, Any]


class Watcher:
    """One open watch: a queue of serialized event lines, fed by the store."""

    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_match: Callable[[dict[str, str]], bool],
        field_match: Callable[[Obj], bool],
    ) -> None:
        self.rt = rt
        self.namespace = namespace
        self.label_match = label_match
        self.field_match = field_match
        self.events: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.closed = False

    def matches(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return self.label_match(meta.get("labels") or {}) and self.field_match(obj)

    def close(self) -> None:
        self.closed = True
        self.events.put(None)


def event_line(event_type: str, obj: Obj) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


class Storage:
    """Objects, resourceVersions, history and watches; the writes that give them meaning are
    store.py's, through _emit, _next_rv and _current."""

    def __init__(self, resources: Iterable[ResourceType], history_limit: int) -> None:
        self._lock = threading.RLock()
        self.resources: dict[str, ResourceType] = {}
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self._history: dict[str, collections.deque[tuple[int, bytes, Obj]]] = {}
        # Events older than this resourceVersion have been compacted away (410 Gone).
        self._compacted_rv: dict[str, int] = {}
        self._watchers: dict[str, list[Watcher]] = {}
        self._rv = 100
        self._history_limit = history_limit
        self._listeners: list[Callable[[str, str, Obj], None]] = []
        for rt in resources:
            self.add_resource(rt)

    # ---- registration ---------------------------------------------------------------------

    def add_resource(self, rt: ResourceType) -> None:
        with self._lock:
            self.resources[rt.key] = rt
            self._objects.setdefault(rt.key, {})
            self._history.setdefault(rt.key, collections.deque())
            self._compacted_rv.setdefault(rt.key, 0)
            self._watchers.setdefault(rt.key, [])

    def resource_for(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.resources.get(f"{group}/{version}/{plural}")

    def resource_for_kind(self, api_version: str, kind: str) -> ResourceType:
        for rt in self.resources.values():
            if rt.api_version == api_version and rt.kind == kind:
                return rt
        raise KeyError(f"{api_version} {kind}")

    def add_listener(self, fn: Callable[[str, str, Obj], None]) -> None:
        """In-process observers (the Job simulator): called with (resource key, type, obj)."""
        with self._lock:
            self._listeners.append(fn)

    # ---- lifecycle ------------------------------------------------------------------------

    def drop_watches(self) -> int:
        """End every open watch, as an API server restart or a load balancer would."""
        with self._lock:
            n = 0
            for watchers in self._watchers.values():
                for w in watchers:
                    w.close()
                    n += 1
                watchers.clear()
            return n

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def compact(self) -> None:
        """Drop all watch history: any watch that resumes from an older resourceVersion gets 410."""
        with self._lock:
            for key in self._history:
                self._history[key].clear()
                self._compacted_rv[key] = self._rv

    def compacted_rv(self, rt: ResourceType) -> int:
        """Watches from, and list continuations taken at, an older resourceVersion get 410."""
        with self._lock:
            return self._compacted_rv[rt.key]

    # ---- reads ----------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        with self._lock:
            obj = self._objects[rt.key].get((namespace if rt.namespaced else "", name))
            if obj is None:
                raise not_found(rt, name)
            return copy.deepcopy(obj)

    def try_get(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        try:
            return self.get(rt, namespace, name)
        except ApiError:
            return None

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str = "",
        field_selector: str = "",
    ) -> tuple[list[Obj], str]:
        label_match = parse_label_selector(label_selector)
        field_match = parse_field_selector(field_selector)
        with self._lock:
            items = [
                copy.deepcopy(o)
                for (ns, _), o in sorted(self._objects[rt.key].items())
                if (not namespace or ns == namespace)
                and label_match(o["metadata"].get("labels") or {})
                and field_match(o)
            ]
            return items, str(self._rv)

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        resource_version: str,
        label_selector: str = "",
        field_selector: str = "",
    ) -> Watcher:
        watcher = Watcher(
            rt,
            namespace,
            parse_label_selector(label_selector),
            parse_field_selector(field_selector),
        )
        with self._lock:
            if resource_version in ("", "0"):
                # "Get state and start at most recent": synthetic ADDED for what exists.
                for _, o in sorted(self._objects[rt.key].items()):
                    if watcher.matches(o):
                        watcher.events.put(event_line("ADDED", o))
            else:
                try:
                    start = int(resource_version)
                except ValueError as exc:
                    raise ApiError(
                        400, "BadRequest", f"invalid resource version {resource_version!r}"
                    ) from exc
                if start < self._compacted_rv[rt.key]:
                    # A real server accepts the watch, then sends an ERROR event with 410.
                    gone = ApiError(
                        410,
                        "Expired",
                        f"too old resource version: {start} ({self._compacted_rv[rt.key]})",
                    ).status()
                    watcher.events.put(event_line("ERROR", gone))
                    watcher.events.put(None)
                    return watcher
                for rv, line, o in self._history[rt.key]:
                    if rv > start and watcher.matches(o):
                        watcher.events.put(line)
            self._watchers[rt.key].append(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        with self._lock:
            watchers = self._watchers.get(watcher.rt.key, [])
            if watcher in watchers:
                watchers.remove(watcher)

    def bookmark_line(self, rt: ResourceType) -> bytes:
        with self._lock:
            return event_line(
                "BOOKMARK",
                {
                    "kind": rt.kind,
                    "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": str(self._rv)},
                },
            )

    # ---- what writes use ------------------------------------------------------------------

    def _emit(self, rt: ResourceType, event_type: str, obj: Obj) -> None:
        line = event_line(event_type, obj)
        history = self._history[rt.key]
        history.append((self._rv, line, obj))
        while len(history) > self._history_limit:
            old_rv, _, _ = history.popleft()
            self._compacted_rv[rt.key] = old_rv
        for w in self._watchers[rt.key]:
            if w.matches(obj):
                w.events.put(line)
        for fn in self._listeners:
            fn(rt.key, event_type, obj)

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _current(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self._objects[rt.key].get((namespace if rt.namespaced else "", name))
        if obj is None:
            raise not_found(rt, name)
        return obj
