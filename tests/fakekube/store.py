"""The fake API server's storage: objects, resourceVersions, watch history, garbage collection.

Semantics follow kube-apiserver + etcd closely enough for a controller to be tested against it:
one global resourceVersion counter, a bounded event history (older watch starts get 410 Gone),
optimistic concurrency on update, UID preconditions, finalizers, and an asynchronous garbage
collector with foreground, background and orphan propagation.
"""

from __future__ import annotations

import collections
import copy
import json
import queue
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from .patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from .resources import DEFAULT_RESOURCES, ResourceType

Obj = dict[str, Any]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Scheduling directives a suspended, never-started Job may change (KEP-2926).
_MUTABLE_WHILE_SUSPENDED = (
    "labels",
    "annotations",
    "nodeSelector",
    "tolerations",
    "schedulingGates",
)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    """An error the API server answers with a metav1.Status."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> Obj:
        out: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{rt.resource_label} "{name}" not found',
        {"name": name, "group": rt.group, "kind": rt.plural},
    )


def conflict(rt: ResourceType, name: str, message: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.resource_label} "{name}": {message}',
        {"name": name, "group": rt.group, "kind": rt.plural},
    )


def invalid(rt: ResourceType, name: str, causes: list[tuple[str, str]]) -> ApiError:
    text = ", ".join(f"{field}: {msg}" for field, msg in causes)
    return ApiError(
        422,
        "Invalid",
        f'{rt.kind}.{rt.group or "core"} "{name}" is invalid: {text}',
        {
            "name": name,
            "group": rt.group,
            "kind": rt.kind,
            "causes": [
                {"reason": "FieldValueInvalid", "message": msg, "field": field}
                for field, msg in causes
            ],
        },
    )


def parse_label_selector(selector: str) -> Callable[[dict[str, str]], bool]:
    if not selector:
        return lambda labels: True
    terms: list[Callable[[dict[str, str]], bool]] = []
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        if "!=" in term:
            k, v = (s.strip() for s in term.split("!=", 1))
            terms.append(lambda lb, k=k, v=v: lb.get(k) != v)
        elif "==" in term or "=" in term:
            k, v = (s.strip() for s in re.split("==|=", term, maxsplit=1))
            terms.append(lambda lb, k=k, v=v: lb.get(k) == v)
        elif term.startswith("!"):
            absent = term[1:].strip()
            terms.append(lambda lb, k=absent: k not in lb)
        elif " in " in term or " notin " in term or "(" in term:
            raise ApiError(400, "BadRequest", f"unsupported label selector term {term!r}")
        else:
            terms.append(lambda lb, k=term: k in lb)
    return lambda labels: all(t(labels) for t in terms)


def parse_field_selector(selector: str) -> Callable[[Obj], bool]:
    if not selector:
        return lambda obj: True
    terms: list[Callable[[Obj], bool]] = []
    for raw in selector.split(","):
        negate = "!=" in raw
        field, value = (s.strip() for s in re.split("!=|==|=", raw, maxsplit=1))
        if field not in ("metadata.name", "metadata.namespace"):
            raise ApiError(
                400, "BadRequest", f'field label not supported: "{field}" (fake API server)'
            )
        key = field.split(".", 1)[1]
        terms.append(
            lambda o, key=key, value=value, negate=negate: (
                (o["metadata"].get(key, "") == value) != negate
            )
        )
    return lambda obj: all(t(obj) for t in terms)


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


class Store:
    def __init__(
        self,
        resources: Iterable[ResourceType] = DEFAULT_RESOURCES,
        history_limit: int = 100_000,
        gc_delay: float = 0.0,
    ) -> None:
        self._lock = threading.RLock()
        self.resources: dict[str, ResourceType] = {}
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self._history: dict[str, collections.deque[tuple[int, bytes, Obj]]] = {}
        # Events older than this resourceVersion have been compacted away (410 Gone).
        self._compacted_rv: dict[str, int] = {}
        self._watchers: dict[str, list[Watcher]] = {}
        self._rv = 100
        self._history_limit = history_limit
        self._by_uid: dict[str, tuple[str, str, str]] = {}
        self._removed_uids: set[str] = set()
        self._dependents: dict[str, set[tuple[str, str, str]]] = collections.defaultdict(set)
        self._gc_queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._gc_delay = gc_delay
        self._gc_thread: threading.Thread | None = None
        self._listeners: list[Callable[[str, str, Obj], None]] = []
        # The API server's MutablePodResourcesForSuspendedJobs gate (KEP-5440, alpha and off in
        # Kubernetes 1.35): a suspended Job's containers may change their requests and limits.
        self.mutable_pod_resources_for_suspended_jobs = False
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

    def start(self) -> None:
        if self._gc_thread is None:
            self._gc_thread = threading.Thread(
                target=self._gc_loop, name="fakekube-gc", daemon=True
            )
            self._gc_thread.start()

    def stop(self) -> None:
        self._gc_queue.put(None)
        with self._lock:
            for watchers in self._watchers.values():
                for w in watchers:
                    w.close()
                watchers.clear()

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

    # ---- writes ---------------------------------------------------------------------------

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

    def _index_owners(self, key: tuple[str, str, str], obj: Obj | None, old: Obj | None) -> None:
        for ref in (old or {}).get("metadata", {}).get("ownerReferences") or []:
            self._dependents[ref["uid"]].discard(key)
        for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
            self._dependents[ref["uid"]].add(key)

    def _validate_metadata(self, rt: ResourceType, obj: Obj, name: str) -> None:
        causes: list[tuple[str, str]] = []
        meta = obj["metadata"]
        pattern = _DNS1123_LABEL if rt.kind in ("Job", "Service") else _DNS1123_SUBDOMAIN
        limit = 63 if rt.kind in ("Job", "Service") else 253
        if not pattern.match(name) or len(name) > limit:
            causes.append(
                (
                    "metadata.name",
                    f'Invalid value: "{name}": must be a lowercase RFC 1123 '
                    f"{'label' if limit == 63 else 'subdomain'} (at most {limit} characters)",
                )
            )
        refs = meta.get("ownerReferences") or []
        for i, ref in enumerate(refs):
            for field in ("apiVersion", "kind", "name", "uid"):
                if not ref.get(field):
                    causes.append((f"metadata.ownerReferences[{i}].{field}", "Required value"))
        if sum(1 for r in refs if r.get("controller")) > 1:
            causes.append(
                ("metadata.ownerReferences", "Only one reference can have Controller set to true")
            )
        for field in ("labels", "annotations"):
            for k, v in (meta.get(field) or {}).items():
                if not isinstance(v, str):
                    causes.append((f"metadata.{field}[{k}]", "must be a string"))
        if causes:
            raise invalid(rt, name, causes)

    def create(self, rt: ResourceType, namespace: str, body: Obj) -> Obj:
        obj = copy.deepcopy(body)
        if obj.get("apiVersion") != rt.api_version or obj.get("kind") != rt.kind:
            raise ApiError(
                400,
                "BadRequest",
                f"the API version in the data ({obj.get('apiVersion')}) does not match the "
                f"expected API version ({rt.api_version}) or kind {obj.get('kind')!r} is not "
                f"{rt.kind!r}",
            )
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                )
            meta["namespace"] = namespace
        with self._lock:
            name = meta.get("name") or ""
            if not name:
                if not meta.get("generateName"):
                    raise invalid(
                        rt,
                        "",
                        [("metadata.name", "Required value: name or generateName is required")],
                    )
                while True:
                    name = meta["generateName"][:58] + uuid.uuid4().hex[:5]
                    if (namespace, name) not in self._objects[rt.key]:
                        break
                meta["name"] = name
            self._validate_metadata(rt, obj, name)
            key = (namespace if rt.namespaced else "", name)
            if key in self._objects[rt.key]:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{rt.resource_label} "{name}" already exists',
                    {"name": name, "group": rt.group, "kind": rt.plural},
                )
            for field in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"):
                meta.pop(field, None)
            if rt.status_subresource:
                obj.pop("status", None)
            _default_and_validate(rt, obj, None, self.mutable_pod_resources_for_suspended_jobs)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta["generation"] = 1
            meta["resourceVersion"] = self._next_rv()
            self._objects[rt.key][key] = obj
            self._by_uid[meta["uid"]] = (rt.key, key[0], name)
            self._index_owners((rt.key, key[0], name), obj, None)
            self._emit(rt, "ADDED", obj)
            # An owner deleted before its dependent was made (a controller acting on a stale
            # cache): the real garbage collector looks absent owners up and deletes such
            # dependents; so does this one. (Owners it never held are left alone: tests name
            # made-up ones.)
            for ref in meta.get("ownerReferences") or []:
                if ref.get("uid") in self._removed_uids:
                    self._gc_queue.put(ref["uid"])
            return copy.deepcopy(obj)

    def _current(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self._objects[rt.key].get((namespace if rt.namespaced else "", name))
        if obj is None:
            raise not_found(rt, name)
        return obj

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Obj,
        subresource: str = "",
        require_resource_version: bool | None = None,
    ) -> Obj:
        if body.get("apiVersion") != rt.api_version or body.get("kind") != rt.kind:
            raise ApiError(
                400,
                "BadRequest",
                f"the API version in the data ({body.get('apiVersion')}) does not match the "
                f"expected API version ({rt.api_version})",
            )
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            raise ApiError(
                400, "BadRequest", "the name of the object does not match the name on the URL"
            )
        if rt.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the "
                "request",
            )
        with self._lock:
            current = self._current(rt, namespace, name)
            rv = meta.get("resourceVersion")
            if require_resource_version is None:
                # Custom resources refuse unconditional updates; built-in types allow them.
                require_resource_version = not rt.builtin
            if not rv and require_resource_version:
                raise invalid(
                    rt,
                    name,
                    [
                        (
                            "metadata.resourceVersion",
                            "Invalid value: 0x0: must be specified for an update",
                        )
                    ],
                )
            return self._write(rt, current, copy.deepcopy(body), subresource, rv or None)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        content_type: str,
        subresource: str = "",
    ) -> Obj:
        with self._lock:
            current = self._current(rt, namespace, name)
            try:
                if content_type == "application/merge-patch+json":
                    if not isinstance(patch, dict):
                        raise ApiError(400, "BadRequest", "merge patch must be a JSON object")
                    patched = merge_patch(current, patch)
                elif content_type == "application/strategic-merge-patch+json":
                    if not rt.builtin:
                        raise ApiError(
                            415,
                            "UnsupportedMediaType",
                            f"the body of the request was in an unknown format - accepted media "
                            f"types include: application/json-patch+json, "
                            f"application/merge-patch+json, application/apply-patch+yaml "
                            f"(strategic merge patch is not supported for {rt.resource_label})",
                        )
                    if not isinstance(patch, dict):
                        raise ApiError(400, "BadRequest", "strategic merge patch must be an object")
                    patched = strategic_merge_patch(current, patch)
                elif content_type == "application/json-patch+json":
                    patched = json_patch(current, patch)
                else:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        f"the fake API server does not support patch type {content_type!r}",
                    )
            except PatchError as exc:
                raise invalid(rt, name, [("patch", str(exc))]) from exc
            new_meta = patched.setdefault("metadata", {})
            # A resourceVersion or uid carried by the patch is a precondition.
            want_rv = new_meta.get("resourceVersion")
            if want_rv == current["metadata"]["resourceVersion"]:
                want_rv = None
            if new_meta.get("name") != name:
                raise ApiError(400, "BadRequest", "a patch cannot change metadata.name")
            return self._write(rt, current, patched, subresource, want_rv)

    def _write(
        self, rt: ResourceType, current: Obj, new: Obj, subresource: str, want_rv: str | None
    ) -> Obj:
        cur_meta = current["metadata"]
        name = cur_meta["name"]
        new_meta = new.setdefault("metadata", {})
        if new_meta.get("uid") and new_meta["uid"] != cur_meta["uid"]:
            raise ApiError(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {new_meta['uid']}, UID in object "
                f"meta: {cur_meta['uid']}",
            )
        if want_rv is not None and want_rv != cur_meta["resourceVersion"]:
            raise conflict(
                rt,
                name,
                "the object has been modified; please apply your changes to the latest version "
                "and try again",
            )
        if subresource == "status":
            if not rt.status_subresource:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            result = copy.deepcopy(current)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
        elif subresource:
            raise ApiError(404, "NotFound", f"subresource {subresource!r} is not served")
        else:
            result = new
            meta = result["metadata"]
            for field in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
                if field in cur_meta:
                    meta[field] = cur_meta[field]
                else:
                    meta.pop(field, None)
            if rt.namespaced:
                meta["namespace"] = cur_meta["namespace"]
            if rt.status_subresource:
                if "status" in current:
                    result["status"] = current["status"]
                else:
                    result.pop("status", None)
            self._validate_metadata(rt, result, name)
            _default_and_validate(rt, result, current,
                                  self.mutable_pod_resources_for_suspended_jobs)
            if cur_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or []) - set(cur_meta.get("finalizers") or [])
                if added:
                    raise invalid(
                        rt,
                        name,
                        [
                            (
                                "metadata.finalizers",
                                "Forbidden: no new finalizers can be added if the "
                                "object is being deleted",
                            )
                        ],
                    )
            if result.get("spec") != current.get("spec"):
                meta["generation"] = int(cur_meta.get("generation", 1)) + 1
        result["metadata"]["resourceVersion"] = cur_meta["resourceVersion"]
        if result == current:
            # A no-op write is not persisted and produces no watch event.
            return copy.deepcopy(current)
        result["metadata"]["resourceVersion"] = self._next_rv()
        key = (cur_meta.get("namespace", ""), name)
        self._objects[rt.key][key] = result
        self._index_owners((rt.key, key[0], name), result, current)
        if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers"):
            self._remove(rt, key)
            return copy.deepcopy(result)
        self._emit(rt, "MODIFIED", result)
        if result["metadata"].get("deletionTimestamp"):
            self._gc_queue.put(cur_meta["uid"])
        return copy.deepcopy(result)

    def mutate(
        self, rt: ResourceType, namespace: str, name: str, fn: Callable[[Obj], None], status: bool
    ) -> Obj | None:
        """Read-modify-write under the store lock, for in-process controllers (Job simulator)."""
        with self._lock:
            current = self._objects[rt.key].get((namespace, name))
            if current is None:
                return None
            new = copy.deepcopy(current)
            fn(new)
            return self._write(rt, current, new, "status" if status else "", None)

    def delete(self, rt: ResourceType, namespace: str, name: str, options: Obj | None) -> Obj:
        options = options or {}
        with self._lock:
            current = self._current(rt, namespace, name)
            meta = current["metadata"]
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != meta["uid"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                    f"{meta['uid']}",
                    {"name": name, "group": rt.group, "kind": rt.plural},
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: ResourceVersion in precondition: "
                    f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                    f"{meta['resourceVersion']}",
                )
            policy = options.get("propagationPolicy")
            if policy is None and options.get("orphanDependents") is not None:
                policy = "Orphan" if options["orphanDependents"] else "Background"
            if policy is None:
                # batch/v1 Jobs still orphan their pods by default, for compatibility.
                policy = "Orphan" if rt.kind == "Job" and rt.group == "batch" else "Background"
            if policy not in ("Foreground", "Background", "Orphan"):
                raise ApiError(
                    400,
                    "BadRequest",
                    f'propagationPolicy: Unsupported value: "{policy}": supported values: '
                    f'"Foreground", "Background", "Orphan"',
                )
            finalizers = list(meta.get("finalizers") or [])
            if policy == "Foreground" and FOREGROUND not in finalizers:
                finalizers.append(FOREGROUND)
            if policy == "Orphan" and ORPHAN not in finalizers:
                finalizers.append(ORPHAN)
            key = (meta.get("namespace", ""), name)
            if not finalizers:
                return copy.deepcopy(self._remove(rt, key))
            if meta.get("deletionTimestamp") and finalizers == (meta.get("finalizers") or []):
                return copy.deepcopy(current)
            new = copy.deepcopy(current)
            new["metadata"]["finalizers"] = finalizers
            new["metadata"].setdefault("deletionTimestamp", now_rfc3339())
            new["metadata"].setdefault("deletionGracePeriodSeconds", 0)
            new["metadata"]["resourceVersion"] = self._next_rv()
            self._objects[rt.key][key] = new
            self._emit(rt, "MODIFIED", new)
            self._gc_queue.put(meta["uid"])
            return copy.deepcopy(new)

    def _remove(self, rt: ResourceType, key: tuple[str, str]) -> Obj:
        obj = self._objects[rt.key].pop(key)
        uid = obj["metadata"]["uid"]
        self._by_uid.pop(uid, None)
        self._removed_uids.add(uid)
        self._index_owners((rt.key, key[0], key[1]), None, obj)
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = self._next_rv()
        self._emit(rt, "DELETED", gone)
        # Dependents of a gone owner, and owners waiting for this dependent, need another look.
        self._gc_queue.put(uid)
        for ref in obj["metadata"].get("ownerReferences") or []:
            self._gc_queue.put(ref["uid"])
        return gone

    # ---- garbage collector ----------------------------------------------------------------

    def _gc_loop(self) -> None:
        while True:
            uid = self._gc_queue.get()
            if uid is None:
                return
            if self._gc_delay:
                threading.Event().wait(self._gc_delay)
            try:
                self._gc_one(uid)
            except Exception:  # noqa: BLE001 - the collector must outlive one bad object
                import traceback

                traceback.print_exc()

    def _gc_one(self, uid: str) -> None:
        with self._lock:
            dependents = sorted(self._dependents.get(uid, ()))
            where = self._by_uid.get(uid)
            owner = self._objects[where[0]].get((where[1], where[2])) if where else None
            if owner is None:
                # Owner gone: delete dependents whose owners are all gone (background).
                for rkey, ns, name in dependents:
                    dep = self._objects[rkey].get((ns, name))
                    if dep is None:
                        continue
                    refs = dep["metadata"].get("ownerReferences") or []
                    if any(r["uid"] in self._by_uid for r in refs):
                        continue
                    if not dep["metadata"].get("deletionTimestamp"):
                        self.delete(
                            self.resources[rkey], ns, name, {"propagationPolicy": "Background"}
                        )
                self._dependents.pop(uid, None)
                return
            meta = owner["metadata"]
            if not meta.get("deletionTimestamp"):
                return
            rt = self.resources[where[0]]
            finalizers = list(meta.get("finalizers") or [])
            if ORPHAN in finalizers:
                for rkey, ns, name in dependents:
                    self.mutate(
                        self.resources[rkey],
                        ns,
                        name,
                        lambda d: d["metadata"].__setitem__(
                            "ownerReferences",
                            [
                                r
                                for r in d["metadata"].get("ownerReferences") or []
                                if r["uid"] != uid
                            ],
                        ),
                        status=False,
                    )
                finalizers.remove(ORPHAN)
                self._set_finalizers(rt, owner, finalizers)
                return
            if FOREGROUND in finalizers:
                blocking = []
                for rkey, ns, name in dependents:
                    dep = self._objects[rkey].get((ns, name))
                    if dep is None:
                        continue
                    ref = next(
                        (
                            r
                            for r in dep["metadata"].get("ownerReferences") or []
                            if r["uid"] == uid
                        ),
                        {},
                    )
                    if ref.get("blockOwnerDeletion"):
                        blocking.append((rkey, ns, name))
                    if not dep["metadata"].get("deletionTimestamp"):
                        policy = "Foreground" if ref.get("blockOwnerDeletion") else "Background"
                        self.delete(self.resources[rkey], ns, name, {"propagationPolicy": policy})
                still = [d for d in blocking if self._objects[d[0]].get((d[1], d[2])) is not None]
                if not still:
                    finalizers.remove(FOREGROUND)
                    self._set_finalizers(rt, owner, finalizers)

    def _set_finalizers(self, rt: ResourceType, obj: Obj, finalizers: list[str]) -> None:
        new = copy.deepcopy(obj)
        new["metadata"]["finalizers"] = finalizers
        if not finalizers:
            new["metadata"].pop("finalizers")
        self._write(rt, obj, new, "", None)


def _default_and_validate(rt: ResourceType, obj: Obj, old: Obj | None,
                          mutable_resources: bool = False) -> None:
    """The per-kind defaulting and validation of the types the shim writes."""
    name = obj["metadata"]["name"]
    if rt.kind == "Job" and rt.group == "batch":
        _default_job(obj)
        _validate_job(rt, name, obj, old, mutable_resources)
    elif rt.kind == "Event" and not rt.group:
        involved = obj.get("involvedObject") or {}
        if involved.get("namespace", obj["metadata"].get("namespace")) != obj["metadata"].get(
            "namespace"
        ):
            raise invalid(
                rt,
                name,
                [("involvedObject.namespace", "Invalid value: does not match event.namespace")],
            )
    elif rt.kind == "Lease":
        spec = obj.get("spec") or {}
        if spec.get("leaseDurationSeconds") is not None and spec["leaseDurationSeconds"] <= 0:
            raise invalid(rt, name, [("spec.leaseDurationSeconds", "must be greater than 0")])
    elif rt.kind == "Service" and not rt.group:
        spec = obj.setdefault("spec", {})
        if spec.get("clusterIP") is None:
            spec["clusterIP"] = "10.96.0." + str(abs(hash(name)) % 250 + 1)
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if old is not None and old.get("spec", {}).get("clusterIP") != spec.get("clusterIP"):
            raise invalid(rt, name, [("spec.clusterIP", "Invalid value: field is immutable")])


def _default_job(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    if spec.get("completionMode") != "Indexed":
        spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    uid_key = "batch.kubernetes.io/controller-uid"
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    labels = tmeta.setdefault("labels", {})
    if "selector" not in spec:
        # The real server fills the selector and template labels from the Job's UID, which is
        # not assigned yet at defaulting time; a stable per-name value does the same job here.
        token = (
            obj["metadata"].get("uid")
            or uuid.uuid5(uuid.NAMESPACE_URL, obj["metadata"]["name"]).hex
        )
        spec["selector"] = {"matchLabels": {uid_key: token}}
        labels.setdefault(uid_key, token)
        labels.setdefault("batch.kubernetes.io/job-name", obj["metadata"]["name"])
        labels.setdefault("controller-uid", token)
        labels.setdefault("job-name", obj["metadata"]["name"])


def _strip_directives(template: Obj, resources: bool = False) -> Obj:
    t = copy.deepcopy(template)
    meta = t.get("metadata") or {}
    meta.pop("labels", None)
    meta.pop("annotations", None)
    spec = t.get("spec") or {}
    for field in ("nodeSelector", "tolerations", "schedulingGates"):
        spec.pop(field, None)
    if resources:
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or []:
                if isinstance(container, dict):
                    res = container.get("resources") or {}
                    res.pop("requests", None)
                    res.pop("limits", None)
                    if not res:
                        container.pop("resources", None)
    return t


def _validate_job(rt: ResourceType, name: str, obj: Obj, old: Obj | None,
                  mutable_resources: bool = False) -> None:
    spec = obj["spec"]
    causes: list[tuple[str, str]] = []
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    if not pod_spec.get("containers"):
        causes.append(("spec.template.spec.containers", "Required value"))
    if pod_spec.get("restartPolicy") not in ("OnFailure", "Never"):
        causes.append(
            (
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{pod_spec.get("restartPolicy", "")}": supported values: '
                f'"OnFailure", "Never"',
            )
        )
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        causes.append(("spec.completions", "Required value: when completion mode is Indexed"))
    if old is not None:
        old_spec = old.get("spec") or {}
        if spec.get("selector") != old_spec.get("selector"):
            causes.append(("spec.selector", "Invalid value: field is immutable"))
        if spec.get("completionMode") != old_spec.get("completionMode"):
            causes.append(("spec.completionMode", "Invalid value: field is immutable"))
        elastic = spec.get("completionMode") == "Indexed" and spec.get("parallelism") == spec.get(
            "completions"
        )
        if spec.get("completions") != old_spec.get("completions") and not elastic:
            causes.append(("spec.completions", "Invalid value: field is immutable"))
        new_t, old_t = spec.get("template") or {}, old_spec.get("template") or {}
        resources = mutable_resources and old_spec.get("suspend") is True
        if new_t != old_t:
            if _strip_directives(new_t, resources) != _strip_directives(old_t, resources):
                causes.append(("spec.template", "Invalid value: field is immutable"))
            else:
                never_started = not (old.get("status") or {}).get("startTime")
                if not (old_spec.get("suspend") and never_started):
                    causes.append(
                        (
                            "spec.template",
                            "Invalid value: field is immutable: scheduling directives may change "
                            "only while the Job is suspended and has never started",
                        )
                    )
    if causes:
        raise invalid(rt, name, causes)
