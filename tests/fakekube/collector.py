"""The fake API server's garbage collector, as kube-controller-manager's acts on owner
references: dependents of a gone owner are deleted in the background, a foreground deletion
waits for the dependents that block it, an orphaning one strips their references first.

Apart from the store's writes because it is a client of them: it runs on its own thread, on the
uids the writes queue, and changes objects only through the store's delete and its
read-modify-write (store.py).
"""

from __future__ import annotations

import collections
import copy
import queue
import threading
from collections.abc import Callable, Iterable

from .resources import ResourceType
from .storage import Obj, Storage

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


class GarbageCollector(Storage):
    """The owner index and the collector's queue and thread, beside the storage they watch."""

    def __init__(self, resources: Iterable[ResourceType], history_limit: int,
                 gc_delay: float) -> None:
        self._by_uid: dict[str, tuple[str, str, str]] = {}
        self._removed_uids: set[str] = set()
        self._dependents: dict[str, set[tuple[str, str, str]]] = collections.defaultdict(set)
        self._gc_queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._gc_delay = gc_delay
        self._gc_thread: threading.Thread | None = None
        super().__init__(resources, history_limit)

    # The writes the collector makes are the store's own (store.py).

    def delete(self, rt: ResourceType, namespace: str, name: str, options: Obj | None) -> Obj:
        raise NotImplementedError

    def mutate(
        self, rt: ResourceType, namespace: str, name: str, fn: Callable[[Obj], None], status: bool
    ) -> Obj | None:
        raise NotImplementedError

    def _write(
        self, rt: ResourceType, current: Obj, new: Obj, subresource: str, want_rv: str | None
    ) -> Obj:
        raise NotImplementedError

    def start_collector(self) -> None:
        if self._gc_thread is None:
            self._gc_thread = threading.Thread(
                target=self._gc_loop, name="fakekube-gc", daemon=True
            )
            self._gc_thread.start()

    def stop_collector(self) -> None:
        self._gc_queue.put(None)

    def _index_owners(self, key: tuple[str, str, str], obj: Obj | None, old: Obj | None) -> None:
        for ref in (old or {}).get("metadata", {}).get("ownerReferences") or []:
            self._dependents[ref["uid"]].discard(key)
        for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
            self._dependents[ref["uid"]].add(key)

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
