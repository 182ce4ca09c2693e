"""An in-process HTTP server speaking the Kubernetes REST protocol over the fake store.

Usable from tests and from benchmark scripts:

    with FakeKube() as kube:
        kube.write_kubeconfig(path)        # or kube.url
        ...
"""

from __future__ import annotations

import collections
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .errors import ApiError
from .faults import FAULT_REASONS, Fault, WatchFault, page
from .resources import DEFAULT_RESOURCES, ResourceType
from .store import Store
from .watchserve import WatchStreaming


@dataclass
class AuditRecord:
    time: float
    method: str
    path: str
    query: str
    user_agent: str
    code: int
    body: Any = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 128


class FakeKube:
    def __init__(
        self,
        resources: Iterable[ResourceType] = DEFAULT_RESOURCES,
        bookmark_interval: float = 1.0,
        gc_delay: float = 0.0,
        history_limit: int = 100_000,
    ) -> None:
        self.store = Store(resources, history_limit=history_limit, gc_delay=gc_delay)
        self.bookmark_interval = bookmark_interval
        self.audit: list[AuditRecord] = []
        self.faults: list[Fault] = []
        self.watch_faults: list[WatchFault] = []
        # GETs of a collection (lists and watches), whatever their outcome: a test counts
        # them, or reads their queries (limit, continue, resourceVersion).
        self.collection_reads: list[AuditRecord] = []
        self._audit_lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._open_watches: set[Any] = set()
        # Every request by resource (the plural, or "" for discovery): a soak tells a hot loop
        # from a quiet shim by it, with no audit log kept (that grows without bound).
        self.request_counts: collections.Counter[str] = collections.Counter()

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeKube:
        handler = type("Handler", (_Handler,), {"kube": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self.store.start()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.store.stop()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        path = Path(path)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "fake", "namespace": namespace},
                }
            ],
            "current-context": "fake",
        }
        path.write_text(json.dumps(config))
        return path

    # ---- test helpers ---------------------------------------------------------------------

    def add_fault(
        self,
        method: str,
        path_pattern: str,
        code: int = 500,
        count: int = -1,
        retry_after: str | float | None = None,
        query: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> Fault:
        """Answer `count` matching requests (-1: all) with `code`, before serving anything;
        `query`: only requests with these query parameters ("" matches any value); `delay`:
        seconds to wait first (with code 0, then serve the request as usual)."""
        after = None if retry_after is None else str(retry_after)
        fault = Fault(method, path_pattern, code, count, after, dict(query or {}), delay)
        with self._audit_lock:
            self.faults.append(fault)
        return fault

    def add_watch_fault(
        self, path_pattern: str, mode: str, count: int = -1, code: int = 500
    ) -> WatchFault:
        """Accept `count` matching watches (-1: all), then break each in `mode`
        (faults.WATCH_FAULT_MODES)."""
        fault = WatchFault(path_pattern, mode, count, code)
        with self._audit_lock:
            self.watch_faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._audit_lock:
            self.faults.clear()
            self.watch_faults.clear()

    def reads(self, path_pattern: str = "", watch: bool | None = None) -> list[AuditRecord]:
        """Lists and watches seen so far (any outcome); `watch`: only watches, or only lists."""
        rx = re.compile(path_pattern)
        with self._audit_lock:
            return [
                r for r in self.collection_reads
                if rx.search(r.path)
                and (watch is None or ("watch=true" in r.query) == watch)
            ]

    def writes(self, path_pattern: str = "", method: str = "") -> list[AuditRecord]:
        """Mutating requests seen so far (any outcome), optionally filtered."""
        rx = re.compile(path_pattern)
        with self._audit_lock:
            return [
                r
                for r in self.audit
                if r.method != "GET" and rx.search(r.path) and (not method or r.method == method)
            ]

    def _fault_for(self, method: str, path: str, query: dict[str, str]) -> Fault | None:
        with self._audit_lock:
            for fault in self.faults:
                if fault.matches(method, path, query):
                    fault.hits += 1
                    if fault.remaining > 0:
                        fault.remaining -= 1
                    return fault
        return None

    def _watch_fault_for(self, path: str) -> WatchFault | None:
        with self._audit_lock:
            for fault in self.watch_faults:
                if fault.matches(path):
                    fault.hits += 1
                    if fault.remaining > 0:
                        fault.remaining -= 1
                    return fault
        return None

    def _record_read(self, rec: AuditRecord) -> None:
        with self._audit_lock:
            self.collection_reads.append(rec)

    def _record(self, rec: AuditRecord) -> None:
        with self._audit_lock:
            self.audit.append(rec)

    # ---- discovery ------------------------------------------------------------------------

    def _group_versions(self) -> dict[str, list[ResourceType]]:
        out: dict[str, list[ResourceType]] = {}
        for rt in self.store.resources.values():
            out.setdefault(rt.api_version, []).append(rt)
        return out

    def discovery(self, parts: list[str]) -> dict[str, Any] | None:
        gvs = self._group_versions()
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["apis"]:
            groups: dict[str, list[str]] = {}
            for gv in gvs:
                if "/" in gv:
                    g, v = gv.split("/", 1)
                    groups.setdefault(g, []).append(v)
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": g,
                        "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                        "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                    }
                    for g, vs in sorted(groups.items())
                ],
            }
        gv = None
        if len(parts) == 2 and parts[0] == "api":
            gv = parts[1]
        elif len(parts) == 3 and parts[0] == "apis":
            gv = f"{parts[1]}/{parts[2]}"
        if gv is None or gv not in gvs:
            return None
        resources = []
        for rt in gvs[gv]:
            verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
            resources.append(
                {
                    "name": rt.plural,
                    "singularName": rt.singular,
                    "namespaced": rt.namespaced,
                    "kind": rt.kind,
                    "verbs": verbs,
                    "shortNames": list(rt.short_names),
                }
            )
            if rt.status_subresource:
                resources.append(
                    {
                        "name": f"{rt.plural}/status",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": gv,
            "resources": resources,
        }


_PATCH_TYPES = {
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
}


def _is_collection(path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        return len(parts) == 3 or (len(parts) == 5 and parts[2] == "namespaces")
    if parts[:1] == ["apis"]:
        return len(parts) == 4 or (len(parts) == 6 and parts[3] == "namespaces")
    return False


def _resource_of(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return rest[0] if rest else ""


class _Handler(WatchStreaming, BaseHTTPRequestHandler):
    kube: FakeKube
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without NODELAY, Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    # ---- plumbing -------------------------------------------------------------------------

    def _send_json(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ApiError(400, "BadRequest", f"invalid JSON body: {exc}") from exc

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        rec = AuditRecord(
            time.monotonic(), method, split.path, split.query, self.headers.get("User-Agent", ""), 0
        )
        headers: dict[str, str] = {}
        with self.kube._audit_lock:
            self.kube.request_counts[_resource_of(split.path)] += 1
        if method == "GET" and _is_collection(split.path):
            self.kube._record_read(rec)
        try:
            body = self._read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else None
            rec.body = body
            fault = self.kube._fault_for(method, split.path, query)
            if fault is not None and fault.delay:
                time.sleep(fault.delay)
            if fault is not None and fault.code:
                if fault.retry_after is not None:
                    headers["Retry-After"] = fault.retry_after
                raise ApiError(fault.code, FAULT_REASONS.get(fault.code, "InternalError"),
                               f"injected fault ({fault.code})")
            code, payload = self._serve(method, split.path, query, body)
            rec.code = code
            if code == 0:
                return  # a watch stream, already answered
        except ApiError as err:
            rec.code = err.code
            code, payload = err.code, err.status()
        except (BrokenPipeError, ConnectionResetError):
            return
        finally:
            if method != "GET" or rec.code >= 400:
                self.kube._record(rec)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send_json(code, payload, headers)

    # ---- routing --------------------------------------------------------------------------

    def _route(self, parts: list[str]) -> tuple[ResourceType, str | None, str, str]:
        """Returns (resource type, namespace or None, name, subresource)."""
        if parts and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        rt = self.kube.store.resource_for(group, version, rest[0])
        if rt is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace is not None and not rt.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and not (sub == "status" and rt.status_subresource):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return rt, namespace, name, sub

    def _serve(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if method == "GET" and (
            parts in (["api"], ["apis"])
            or (len(parts) == 2 and parts[0] == "api")
            or (len(parts) == 3 and parts[0] == "apis")
        ):
            doc = self.kube.discovery(parts)
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return 200, doc
        if method == "GET" and parts == ["version"]:
            return 200, {"major": "1", "minor": "36", "gitVersion": "v1.36.0-fakekube"}
        if (
            len(parts) < 2
            or parts[0] not in ("api", "apis")
            or (parts[0] == "apis" and len(parts) < 3)
        ):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        rt, namespace, name, sub = self._route(parts)
        store = self.kube.store
        if rt.namespaced and namespace is None and method != "GET":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = namespace or ""
        if method == "GET":
            if name:
                return 200, store.get(rt, ns, name)
            if query.get("watch") in ("true", "1"):
                self._stream_watch(rt, namespace, query, path)
                return 0, None
            items, rv = store.list(
                rt, namespace, query.get("labelSelector", ""), query.get("fieldSelector", "")
            )
            items, rv, token = page(items, rv, query, store.compacted_rv(rt))
            if rt.builtin:
                # Items of a built-in list carry no apiVersion/kind on the wire; clients that
                # need them must fill them in (custom resources keep theirs).
                for item in items:
                    item.pop("apiVersion", None)
                    item.pop("kind", None)
            return 200, {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": rv, **({"continue": token} if token else {})},
                "items": items,
            }
        if method == "POST":
            if name:
                raise ApiError(405, "MethodNotAllowed", "POST is not allowed on a named resource")
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "request body must be a JSON object")
            return 201, store.create(rt, ns, body)
        if not name:
            raise ApiError(405, "MethodNotAllowed", f"{method} on a collection is not supported")
        if method == "PUT":
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "request body must be a JSON object")
            return 200, store.update(rt, ns, name, body, sub)
        if method == "PATCH":
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if content_type not in _PATCH_TYPES:
                raise ApiError(
                    415, "UnsupportedMediaType", f"unsupported patch type {content_type!r}"
                )
            return 200, store.patch(rt, ns, name, body, content_type, sub)
        if method == "DELETE":
            if sub:
                raise ApiError(405, "MethodNotAllowed", "DELETE on a subresource")
            return 200, store.delete(rt, ns, name, body if isinstance(body, dict) else None)
        raise ApiError(405, "MethodNotAllowed", f"{method} not allowed")
