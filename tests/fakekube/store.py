"""The fake API server's store: the API's meaning of a write, over the storage (storage.py).

Semantics follow kube-apiserver + etcd closely enough for a controller to be tested against it:
create with generateName and AlreadyExists, optimistic concurrency on update, UID and
resourceVersion preconditions, merge, strategic merge and JSON patches, the status subresource,
finalizers, and deletion with foreground, background and orphan propagation, which the
asynchronous garbage collector (collector.py) carries out. Each kind's own defaulting and
validation is validation.py's.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from .collector import FOREGROUND, ORPHAN, GarbageCollector
from .errors import ApiError, conflict, invalid
from .patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from .resources import DEFAULT_RESOURCES, ResourceType
from .storage import Obj
from .validation import default_and_validate, validate_metadata


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store(GarbageCollector):
    def __init__(
        self,
        resources: Iterable[ResourceType] = DEFAULT_RESOURCES,
        history_limit: int = 100_000,
        gc_delay: float = 0.0,
    ) -> None:
        super().__init__(resources, history_limit, gc_delay)
        # The API server's MutablePodResourcesForSuspendedJobs gate (KEP-5440, alpha and off in
        # Kubernetes 1.35): a suspended Job's containers may change their requests and limits.
        self.mutable_pod_resources_for_suspended_jobs = False

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self.start_collector()

    def stop(self) -> None:
        self.stop_collector()
        self.drop_watches()

    # ---- writes ---------------------------------------------------------------------------

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
            validate_metadata(rt, obj, name)
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
            default_and_validate(rt, obj, None, self.mutable_pod_resources_for_suspended_jobs)
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
            validate_metadata(rt, result, name)
            default_and_validate(rt, result, current,
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

