"""List + watch into a local cache, one reflector thread per (kind, namespace).

Semantics of client-go's reflector: list, then watch from the list's resourceVersion with
bookmarks; a watch that ends is resumed from the last resourceVersion seen (an event's or a
bookmark's); `410 Gone` (as an HTTP status or an ERROR event) forces a fresh list, which is
diffed against the cache so that deletions missed while away are still delivered. Lists are
read in pages (shim/pager.py). Every failure (an error, a 410, a watch closed at once, a watch
silent past its own end) waits a backoff that only a watch bringing events resets, so no
misbehaving server or proxy is answered with a loop of requests.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ReadTimeoutError

from shim.indexes import Indexer, IndexFunc
from shim.kube import Kube, Obj
from shim.kube_errors import KubeError
from shim.kube_resource import Resource
from shim.kube_watch import WatchStream
from shim.pager import PAGE_SIZE, list_all
from shim.ratelimit import retry_after

log = logging.getLogger(__name__)

# (event type "ADDED" | "MODIFIED" | "DELETED", the object, the previous object if any)
Handler = Callable[[str, Obj, Obj | None], None]


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class ShortWatch(Exception):
    """A watch the server ended at once without a single event: something between us and the
    API server (a proxy, a server shutting down) closes watches, and watching again at once
    would send it requests as fast as it can answer (client-go's reflector treats it as an
    error for the same reason)."""


# A watch shorter than this that brought no event is a ShortWatch (client-go: one second).
SHORT_WATCH = 1.0
# A watch may be silent for as long as it lasts: a kind nobody changes (no PodGroups, say)
# brings no event, and an API server whose etcd sends no progress notifications (etcd 3.4)
# sends no bookmark either (taking 150 s of silence for a dead connection tore such watches
# down 13 times in 13 minutes). The server ends every watch at its timeoutSeconds (5-10 min,
# client-go's range), so only a watch silent past that, and this margin, is a connection that
# died without a FIN or RST (a NAT or a load balancer that forgot it). Sooner than that, a dead
# connection is noticed by TCP keepalive, with client-go's timings (shim/main.py), as client-go
# notices one by keepalive or HTTP/2 health checks, never by a watch's silence.
WATCH_READ_MARGIN = 30.0


class _Backoff:
    """The wait before a reflector's next attempt: doubled by each failure, back to the start
    only once a watch brings an event. Resetting on anything less (a list that worked, a watch
    the server accepted) lets a failure that follows every list or every watch (410 on each
    watch, a watch closed at once) loop as fast as the server answers."""

    def __init__(self, initial: float = 0.1, cap: float = 30.0) -> None:
        self.initial = initial
        self.cap = cap
        self.current = initial

    def next(self) -> float:
        wait = self.current
        self.current = min(self.current * 2, self.cap)
        return wait

    def reset(self) -> None:
        self.current = self.initial


class Informer:
    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        namespaces: list[str] | None,
        handler: Handler,
        label_selector: str = "",
        watch_timeout: tuple[int, int] = (300, 600),
        page_size: int = PAGE_SIZE,
        read_margin: float = WATCH_READ_MARGIN,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.namespaces: list[str | None] = list(namespaces) if namespaces else [None]
        self.handler = handler
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.read_margin = read_margin
        self._store: dict[tuple[str, str], Obj] = {}
        self._indexer = Indexer(indexers) if indexers else None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._synced = [threading.Event() for _ in self.namespaces]
        self._streams: dict[int, WatchStream] = {}
        self.relists = 0
        # Watches replaced because they stayed silent past their end (dead connections).
        self.dead_watches = 0

    # ---- cache reads ----------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._store.get((namespace, name))

    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._store.values())

    def select(self, pred: Callable[[Obj], bool]) -> list[Obj]:
        """The cached objects `pred` accepts, without copying the whole cache first. A scan:
        not for a pass (by_index is)."""
        with self._lock:
            return [o for o in self._store.values() if pred(o)]

    def by_index(self, index: str, values: Iterable[Hashable]) -> list[Obj]:
        """The cached objects filed under any of `values` in `index`, in the store's order."""
        if self._indexer is None:
            raise KeyError(f"{self.resource.plural}: no index {index!r}")
        with self._lock:
            return [self._store[k] for k in self._indexer.keys(index, values)]

    # ---- store writes (under the lock: the indexes change with the store) -----------------

    def _put(self, key: tuple[str, str], obj: Obj) -> Obj | None:
        old = self._store.get(key)
        self._store[key] = obj
        if self._indexer is not None:
            self._indexer.stored(key, obj, old)
        return old

    def _pop(self, key: tuple[str, str]) -> Obj | None:
        old = self._store.pop(key, None)
        if old is not None and self._indexer is not None:
            self._indexer.deleted(key, old)
        return old

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        for i, ns in enumerate(self.namespaces):
            t = threading.Thread(
                target=self._run,
                args=(i, ns),
                name=f"informer-{self.resource.plural}-{ns or 'all'}",
                daemon=True,
            )
            t.start()
            self._threads.append(t)

    def wait_synced(self, timeout: float | None = None) -> bool:
        return all(e.wait(timeout) for e in self._synced)

    @property
    def synced(self) -> bool:
        return all(e.is_set() for e in self._synced)

    @property
    def alive(self) -> bool:
        """Every reflector thread still runs (a reflector retries errors; it only ends when
        stopped, or when something it cannot survive happened)."""
        return bool(self._threads) and not self._stop.is_set() and all(
            t.is_alive() for t in self._threads)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            streams = list(self._streams.values())
        for s in streams:
            s.close()

    def join(self, timeout: float = 5.0) -> None:
        for t in self._threads:
            t.join(timeout)

    # ---- reflector ------------------------------------------------------------------------

    def _run(self, index: int, namespace: str | None) -> None:
        rv: str | None = None
        backoff = _Backoff()
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._list(namespace)
                    self._synced[index].set()
                rv = self._watch(index, namespace, rv, backoff)
                continue
            except Gone:
                rv = None
                wait = backoff.next()
                log.info("%s: resourceVersion expired, listing again in %.1fs",
                         self.resource.plural, wait)
                self.relists += 1
            except Exception as exc:  # noqa: BLE001 - a reflector retries whatever happened
                if self._stop.is_set():
                    return
                wait = backoff.next()
                if isinstance(exc, ApiException) and exc.status == 410:
                    # A watch refused as too old: list again, as for an ERROR event with 410.
                    log.info("%s: resourceVersion expired, listing again in %.1fs",
                             self.resource.plural, wait)
                    self.relists += 1
                    rv = None
                elif isinstance(exc, ReadTimeoutError):
                    self.dead_watches += 1
                    log.warning("%s: the watch stayed silent %.0fs past its timeoutSeconds "
                                "(a dead connection); watching again in %.1fs",
                                self.resource.plural, self.read_margin, wait)
                else:
                    if isinstance(exc, ApiException):
                        # A throttled watch or list waits at least what the server asked.
                        wait = max(wait, retry_after(exc.status or 0, exc.headers) or 0.0)
                    log.warning("%s: %s; retrying in %.1fs", self.resource.plural, exc, wait)
            self._stop.wait(wait)

    def _in_scope(self, namespace: str | None, key: tuple[str, str]) -> bool:
        return namespace is None or key[0] == namespace

    def _list(self, namespace: str | None) -> str:
        out = list_all(self.kube, self.resource, namespace, self.label_selector, self.page_size)
        fresh: dict[tuple[str, str], Obj] = {}
        for item in out.get("items") or []:
            meta = item["metadata"]
            fresh[(meta.get("namespace", ""), meta["name"])] = item
        events: list[tuple[str, Obj, Obj | None]] = []
        with self._lock:
            for key, old in list(self._store.items()):
                if self._in_scope(namespace, key) and key not in fresh:
                    self._pop(key)
                    events.append(("DELETED", old, old))
            for key, obj in fresh.items():
                old = self._put(key, obj)
                if old is None:
                    events.append(("ADDED", obj, None))
                elif old["metadata"].get("resourceVersion") != obj["metadata"].get(
                    "resourceVersion"
                ):
                    events.append(("MODIFIED", obj, old))
        for event in events:
            self._deliver(*event)
        return str(out["metadata"].get("resourceVersion", ""))

    def _watch(self, index: int, namespace: str | None, rv: str, backoff: _Backoff) -> str:
        timeout = random.randint(*self.watch_timeout)
        started = time.monotonic()
        events = 0
        stream = self.kube.watch(self.resource, namespace, rv, timeout, self.label_selector,
                                 read_margin=self.read_margin)
        with self._lock:
            self._streams[index] = stream
        if self._stop.is_set():
            stream.close()
        try:
            for event in stream:
                etype = event.get("type")
                obj = event.get("object") or {}
                if etype == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone()
                    raise KubeError("watch", self.resource.plural, status=obj.get("code", 500),
                                    reason=obj.get("reason") or "", body=json.dumps(obj))
                events += 1
                if events == 1:
                    backoff.reset()
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if etype == "BOOKMARK":
                    rv = new_rv or rv
                    continue
                if etype not in ("ADDED", "MODIFIED", "DELETED"):
                    continue
                obj.setdefault("apiVersion", self.resource.api_version)
                obj.setdefault("kind", self.resource.kind)
                meta = obj["metadata"]
                key = (meta.get("namespace", ""), meta["name"])
                with self._lock:
                    old = self._pop(key) if etype == "DELETED" else self._put(key, obj)
                self._deliver(etype, obj, old)
                rv = new_rv or rv
                if self._stop.is_set():
                    break
        finally:
            with self._lock:
                self._streams.pop(index, None)
        if not events and not self._stop.is_set() and time.monotonic() - started < SHORT_WATCH:
            raise ShortWatch("the watch ended at once without an event")
        backoff.reset()
        return rv

    def _deliver(self, etype: str, obj: Obj, old: Obj | None) -> None:
        try:
            self.handler(etype, obj, old)
        except Exception:  # noqa: BLE001 - one bad handler call must not kill the reflector
            log.exception("%s: event handler failed", self.resource.plural)
