"""What e2e tests are written with: the API as the admin sees it, JobSet manifests, and waiting
for a condition the way Kubernetes' own e2e framework does (poll, and on timeout say what was
awaited and what was last seen)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import config
from kubernetes.client.exceptions import ApiException

T = TypeVar("T")

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2"
SHIM = "jobset-decider.io/shim"
# How long anything the control plane does may take on a busy machine (quiet: seconds).
TIMEOUT = 180.0
EXIT_CODE = "e2e.jobset-decider.io/exit-code"


class Kube:
    """REST calls on the kubernetes client's ApiClient, objects as plain dicts."""

    def __init__(self, kubeconfig: str) -> None:
        self.api = config.new_client_from_config(config_file=kubeconfig)

    def close(self) -> None:
        self.api.close()

    def call(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None,
             content_type: str = "application/json") -> Any:
        """One request; the decoded answer. A status outside 2xx raises ApiException with the
        API server's Status in its body."""
        request = self.api.param_serialize(
            method=method, resource_path=path, query_params=list((query or {}).items()),
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body, auth_settings=["BearerToken"])
        resp = self.api.call_api(*request, _request_timeout=60)
        data = resp.read()
        if not 200 <= resp.status <= 299:
            raise ApiException.from_response(http_resp=resp, body=data.decode(errors="replace"),
                                             data=None)
        return json.loads(data) if data else None

    def get(self, path: str, **query: str) -> Any:
        return self.call("GET", path, query=query or None)

    def maybe(self, path: str) -> Any:
        try:
            return self.get(path)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, path: str, body: Any) -> Any:
        return self.call("POST", path, body)

    def patch(self, path: str, body: Any) -> Any:
        return self.call("PATCH", path, body, content_type="application/merge-patch+json")

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path)

    def items(self, path: str, **query: str) -> list[dict[str, Any]]:
        return self.get(path, **query)["items"]

    # The kinds the scenarios read.
    def jobset(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.maybe(f"{JOBSETS}/namespaces/{ns}/jobsets/{name}")

    def create_jobset(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.create(f"{JOBSETS}/namespaces/{body['metadata']['namespace']}/jobsets", body)

    def jobs(self, ns: str, jobset: str) -> list[dict[str, Any]]:
        return self.items(f"/apis/batch/v1/namespaces/{ns}/jobs",
                          labelSelector=f"jobset.sigs.k8s.io/jobset-name={jobset}")

    def pods(self, ns: str, jobset: str) -> list[dict[str, Any]]:
        return self.items(f"/api/v1/namespaces/{ns}/pods",
                          labelSelector=f"jobset.sigs.k8s.io/jobset-name={jobset}")

    def events(self, ns: str) -> list[dict[str, Any]]:
        return self.items(f"/api/v1/namespaces/{ns}/events")


def eventually(what: str, observe: Callable[[], T], done: Callable[[T], bool],
               timeout: float = TIMEOUT, interval: float = 0.5,
               show: Callable[[T], Any] = lambda seen: seen) -> T:
    """observe() until done(observation); the observation. On timeout: AssertionError naming
    what was awaited and what was last seen (show(observation), short)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = observe()
        if done(seen):
            return seen
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last "
                                 f"seen: {json.dumps(show(seen), default=str)[:2000]}")
        time.sleep(interval)


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return c
    return None


def has_condition(obj: dict[str, Any] | None, kind: str, status: str = "True") -> bool:
    c = condition(obj, kind)
    return c is not None and c["status"] == status


def conditions(obj: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", ""))
            for c in ((obj or {}).get("status") or {}).get("conditions") or []]


def phases(pods: list[dict[str, Any]]) -> dict[str, str]:
    return {p["metadata"]["name"]: (p.get("status") or {}).get("phase", "") for p in pods}


def replicated_job(name: str, replicas: int = 1, parallelism: int = 1, completions: int = 1,
                   backoff_limit: int = 0, pod_annotations: dict[str, str] | None = None,
                   container: dict[str, Any] | None = None) -> dict[str, Any]:
    pod_meta = {"annotations": pod_annotations} if pod_annotations else {}
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "parallelism": parallelism, "completions": completions, "backoffLimit": backoff_limit,
        "completionMode": "Indexed",
        "template": {"metadata": pod_meta, "spec": {
            "restartPolicy": "Never",
            "containers": [container or {"name": name, "image": "registry.invalid/e2e:1",
                                         "command": ["true"]}]}}}}}


def jobset(ns: str, name: str, replicated_jobs: list[dict[str, Any]],
           **spec: Any) -> dict[str, Any]:
    """A JobSet the shim manages."""
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"managedBy": SHIM, "replicatedJobs": replicated_jobs, **spec}}
