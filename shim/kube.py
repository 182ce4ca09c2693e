"""Generic Kubernetes REST over the official client.

Every call goes through `kubernetes.client.ApiClient` (its configuration, authentication, TLS and
connection pool), but paths are built from apiVersion/kind (kube_resource.py), so the shim can
read, create and delete any kind a plan names, including kinds added after this code was
written. Objects stay plain dicts in the API server's JSON, which is also what the decider client
consumes.

Every request but a watch first takes a token from the client-side rate limiter, if any, and a
429 or 5xx that carries Retry-After is waited out and sent again, a bounded number of times
(shim/ratelimit.py).

The client builds each request (URL, authentication, headers: `ApiClient.param_serialize`) and
its connection pool sends it; the JSON of bodies and answers is kube_json.py's.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTResponse
from urllib3.util.retry import Retry

from shim import kube_json
from shim.kube_errors import KubeError, ResourceNotServed
from shim.kube_resource import KNOWN_KINDS, Resource
from shim.kube_watch import WatchStream
from shim.ratelimit import DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_WAIT, TokenBucket, retry_after

log = logging.getLogger(__name__)

Obj = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
# Discovery runs as the shim starts; an API server that answers 5xx/429 for longer than this
# is reported (main() exits 2 naming the answer) rather than waited for without end.
DISCOVERY_TIMEOUT = 30.0


def _no_status_retries(api_client: client.ApiClient) -> None:
    """Leave Retry-After to Kube.request.

    urllib3's default Retry waits out a Retry-After itself, unbounded and only for GET, PUT and
    DELETE, before the answer reaches us; connection errors keep its three retries.
    """
    pool = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if pool is not None:
        pool.connection_pool_kw["retries"] = Retry(3, respect_retry_after_header=False)
        pool.clear()  # pools made before this keep their own defaults



def _timeout(value: Any) -> urllib3.Timeout | None:
    if isinstance(value, tuple):
        return urllib3.Timeout(connect=value[0], read=value[1])
    return urllib3.Timeout(total=value) if value else None



class Kube:
    """Dict-in, dict-out REST calls through one `ApiClient`."""

    def __init__(
        self,
        api_client: client.ApiClient,
        request_timeout: float = 30.0,
        limiter: TokenBucket | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
    ) -> None:
        self.api = api_client
        self.request_timeout = request_timeout
        self.limiter = limiter
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._resources: dict[tuple[str, str], Resource] = {}
        self._discovered: dict[str, list[Obj] | None] = {}
        self._lock = threading.Lock()
        # How long discovery waits out 5xx/429 answers before it fails.
        self.discovery_timeout = DISCOVERY_TIMEOUT
        # Set by the shim: a span and metrics per request (shim/telemetry.py).
        self.observer: Any = None
        _no_status_retries(api_client)

    def for_leader_election(self) -> Kube:
        """The same client (connections, caches) without the rate limit or Retry-After waits.

        A Lease renewal queued behind a plan's creates, or asleep in a Retry-After, could miss
        the renew deadline and lose a healthy leader its Lease (kube-controller-manager gives
        leader election a client of its own for the same reason); the elector retries on its
        own period anyway.
        """
        other = copy.copy(self)
        other.limiter = None
        other.max_retries = 0
        return other

    def for_events(self) -> Kube:
        """The same client with a token bucket of its own, of the same rate and burst.

        client-go's event recorder has a client of its own: events neither wait behind the
        writes of a pass nor take the tokens those writes need.
        """
        other = copy.copy(self)
        if self.limiter is not None:
            other.limiter = TokenBucket(self.limiter.qps, self.limiter.burst)
        return other

    # ---- resource resolution --------------------------------------------------------------

    def discover(self, api_version: str) -> list[Obj] | None:
        """The APIResourceList of a group/version, or None when it is not served."""
        with self._lock:
            if api_version in self._discovered:
                return self._discovered[api_version]
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        deadline = time.monotonic() + self.discovery_timeout
        wait = 0.1
        while True:
            try:
                doc = self.request("GET", path)
                resources: list[Obj] | None = list(doc.get("resources") or [])
                break
            except ApiException as exc:
                if exc.status == 404:
                    resources = None
                    break
                # An API server restarting or overloaded answers 5xx/429 for seconds: at start
                # that is waited out, as controller-runtime waits for its caches, rather than
                # exiting on one answer (a restarted pod, then the same wait).
                transient = exc.status == 429 or 500 <= (exc.status or 0) <= 599
                if not transient or time.monotonic() + wait > deadline:
                    raise
                log.warning("discovery of %s: %s; retrying in %.1fs", api_version, exc, wait)
            time.sleep(wait)
            wait = min(wait * 2, 5.0)
        with self._lock:
            self._discovered[api_version] = resources
        return resources

    def served(self, api_version: str, kind: str) -> bool:
        resources = self.discover(api_version)
        return resources is not None and any(
            r.get("kind") == kind and "/" not in r.get("name", "") for r in resources
        )

    def resource(self, api_version: str, kind: str) -> Resource:
        key = (api_version, kind)
        with self._lock:
            found = self._resources.get(key)
        if found is not None:
            return found
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        known = KNOWN_KINDS.get((group, kind))
        if known is not None:
            res = Resource(api_version, kind, known[0], known[1])
        else:
            entry = next(
                (
                    r
                    for r in self.discover(api_version) or []
                    if r.get("kind") == kind and "/" not in r.get("name", "")
                ),
                None,
            )
            if entry is None:
                # A kind installed after our first look (a CRD applied later): ask once more.
                with self._lock:
                    self._discovered.pop(api_version, None)
                entry = next(
                    (
                        r
                        for r in self.discover(api_version) or []
                        if r.get("kind") == kind and "/" not in r.get("name", "")
                    ),
                    None,
                )
            if entry is None:
                raise ResourceNotServed(f"{kind} in {api_version} is not served by the API server")
            res = Resource(api_version, kind, entry["name"], bool(entry.get("namespaced", True)))
        with self._lock:
            self._resources[key] = res
        return res

    # ---- requests -------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        timeout: Any,
    ) -> Any:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = kube_json.dumps(body)
        method, url, headers, _, _ = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=None,
            auth_settings=["BearerToken"],
        )
        try:
            resp = self.api.rest_client.pool_manager.request(
                method, url, body=data, headers=headers, timeout=_timeout(timeout),
                preload_content=False)
        except urllib3.exceptions.SSLError as exc:
            # As the client's own path says a TLS failure: an ApiException of status 0.
            raise KubeError(method, path, status=0, reason=f"{type(exc).__name__}\n{exc}") \
                from exc
        return RESTResponse(resp)

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        if self.observer is None:
            return self._request(method, path, query, body, content_type, [0])
        with self.observer.api_call(method, path) as status:
            return self._request(method, path, query, body, content_type, status)

    def _request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        status: list[int],
    ) -> Any:
        attempt = 0
        while True:
            if self.limiter is not None:
                self.limiter.acquire()
            resp = self._send(method, path, query, body, content_type, self.request_timeout)
            wait = retry_after(resp.status, resp.headers, self.max_retry_wait)
            if wait is None or attempt >= self.max_retries:
                break
            resp.read()  # the connection goes back to the pool only once drained
            attempt += 1
            log.info(
                "%s %s: %d, Retry-After; sending it again in %.1fs (%d/%d)",
                method,
                path,
                resp.status,
                wait,
                attempt,
                self.max_retries,
            )
            time.sleep(wait)
        data = resp.read()
        status[0] = resp.status
        if not 200 <= resp.status <= 299:
            raise KubeError(method, path, resp, data.decode("utf-8", "replace") if data else "")
        return kube_json.loads(data) if data else None

    def get(self, res: Resource, namespace: str, name: str) -> Obj:
        return self.request("GET", res.path(namespace, name))

    def list(self, res: Resource, namespace: str | None, label_selector: str = "",
             limit: int = 0, continue_token: str = "") -> Obj:
        """One list request; `limit`/`continue_token` ask for one page (shim/pager.py reads
        them all)."""
        query: dict[str, str] = {"labelSelector": label_selector} if label_selector else {}
        if limit > 0:
            query["limit"] = str(limit)
        if continue_token:
            query["continue"] = continue_token
        out = self.request("GET", res.path(namespace), query or None)
        # Items of built-in lists come without apiVersion/kind; every consumer wants them.
        for item in out.get("items") or []:
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
        return out

    def create(self, res: Resource, namespace: str, body: Obj) -> Obj:
        return self.request("POST", res.path(namespace), body=body)

    def replace_status(self, res: Resource, namespace: str, name: str, body: Obj) -> Obj:
        return self.request("PUT", res.path(namespace, name, "status"), body=body)

    def replace(self, res: Resource, namespace: str, name: str, body: Obj) -> Obj:
        return self.request("PUT", res.path(namespace, name), body=body)

    def merge_patch(
        self, res: Resource, namespace: str, name: str, patch: Obj, subresource: str = ""
    ) -> Obj:
        return self.request(
            "PATCH", res.path(namespace, name, subresource), body=patch, content_type=MERGE_PATCH
        )

    def delete(
        self,
        res: Resource,
        namespace: str,
        name: str,
        uid: str = "",
        propagation_policy: str = "Background",
    ) -> Obj:
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if uid:
            body["preconditions"] = {"uid": uid}
        return self.request("DELETE", res.path(namespace, name), body=body)

    def watch(
        self,
        res: Resource,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int,
        label_selector: str = "",
        read_margin: float = 30.0,
    ) -> WatchStream:
        """The server ends the watch at `timeout_seconds`, however quiet; a read that waits
        `read_margin` longer has met a dead connection (shim/informer.py)."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if label_selector:
            query["labelSelector"] = label_selector
        # The read timeout outlives the server-side timeout: silence until then is a quiet
        # kind, silence past it a connection that died unnoticed by TCP keepalive.
        read = float(timeout_seconds) + read_margin
        resp = self._send("GET", res.path(namespace), query, None, "", (10, read))
        if not 200 <= resp.status <= 299:
            data = resp.read()
            raise KubeError("GET", f"{res.path(namespace)} (watch)", resp,
                            data.decode("utf-8", "replace") if data else "")
        return WatchStream(resp.response)

