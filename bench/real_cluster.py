"""What bench/shim_scale_real.py drives a real control plane with: a pooled HTTPS client as the
admin, a watch that feeds shim_scale's Seen, and upstream's JobSet controller installed as its
own release installs it (its CRD, its webhooks with a CA bundle, the binary on this machine).
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import urllib3
import yaml

from bench import upstream_jobset
from tools.controlplane import pki, product
from tools.controlplane.cluster import Cluster
from tools.controlplane.processes import free_ports, wait_for

JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"


class Api:
    """The admin's requests on one pool of keep-alive connections (threads share it)."""

    def __init__(self, cluster: Cluster, connections: int = 16) -> None:
        admin = cluster.state.data["admin"]
        self.server = cluster.server
        self.pool = urllib3.PoolManager(
            num_pools=2, maxsize=connections, block=True, cert_reqs="CERT_REQUIRED",
            ca_certs=str(cluster.ca_file), cert_file=admin["cert"], key_file=admin["key"],
            retries=False)

    def call(self, method: str, path: str, body: Any = None,
             content_type: str = "application/json", **query: str) -> Any:
        resp = self.pool.request(
            method, self.server + path, fields=query or None if method == "GET" else None,
            body=None if body is None else orjson.dumps(body),
            headers={"Content-Type": content_type, "Accept": "application/json"},
            timeout=urllib3.Timeout(connect=30, read=300))
        if not 200 <= resp.status <= 299:
            raise RuntimeError(f"{method} {path}: {resp.status} {resp.data[:500]!r}")
        return orjson.loads(resp.data) if resp.data else None

    def items(self, path: str, **query: str) -> list[dict[str, Any]]:
        return self.call("GET", path, **query)["items"]

    def patch(self, path: str, body: Any) -> Any:
        return self.call("PATCH", path, body, content_type="application/merge-patch+json")


class Watch(threading.Thread):
    """One collection, listed then watched until stopped: every event goes to on_event
    (the list's items as ADDED); `last_event` says when the cluster last changed."""

    def __init__(self, api: Api, path: str, resource: str, on_event: Any) -> None:
        super().__init__(daemon=True, name=f"watch {resource}")
        self.api, self.path, self.resource, self.on_event = api, path, resource, on_event
        self.stopped = threading.Event()
        self.last_event = time.monotonic()
        self.synced = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the bench's waits, not lost in a thread
            self.error = exc

    def _run(self) -> None:
        rv = ""
        while not self.stopped.is_set():
            if not rv:
                listed = self.api.call("GET", self.path)
                for item in listed["items"]:
                    self.on_event(self.resource, "ADDED", item)
                rv = listed["metadata"]["resourceVersion"]
                self.synced.set()
            resp = self.api.pool.request(
                "GET", self.api.server + self.path,
                fields={"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true",
                        "timeoutSeconds": "300"},
                preload_content=False, timeout=urllib3.Timeout(connect=30, read=330))
            try:
                buf = b""
                for chunk in resp.stream(65536):
                    if self.stopped.is_set():
                        return
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = orjson.loads(line)
                        kind, obj = event["type"], event["object"]
                        if kind == "ERROR":
                            rv = ""  # 410 Gone: list again (Seen keeps first sightings)
                            break
                        rv = obj["metadata"]["resourceVersion"]
                        if kind != "BOOKMARK":
                            self.last_event = time.monotonic()
                            self.on_event(self.resource, kind, obj)
                    else:
                        continue
                    break
            finally:
                resp.release_conn()

    def stop(self) -> None:
        self.stopped.set()


def quiet(watches: list[Watch], seconds: float, timeout: float) -> None:
    """Until no watched object has changed for `seconds`: the controller has finished what the
    last stage gave it, so the next stage measures its own work."""
    deadline = time.monotonic() + timeout
    while time.monotonic() - max(w.last_event for w in watches) < seconds:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the cluster not quiet within {timeout:.0f} s")
        for w in watches:
            if w.error is not None:
                raise RuntimeError(f"{w.name}: {w.error!r}")
        time.sleep(0.1)


# ---- upstream's controller, installed ---------------------------------------------------------


def _webhooks(source: Path) -> list[dict[str, Any]]:
    """config/components/webhook as its kustomization builds it: manifests.yaml with each
    patch's `replace /webhooks/N` (the pod webhooks get their objectSelector)."""
    base = source / "config" / "components" / "webhook"
    docs = [d for d in yaml.safe_load_all((base / "manifests.yaml").read_text()) if d]
    patches = {"MutatingWebhookConfiguration": "mutating-patch.yaml",
               "ValidatingWebhookConfiguration": "validating-patch.yaml"}
    for doc in docs:
        for op in yaml.safe_load((base / "patches" / patches[doc["kind"]]).read_text()):
            assert op["op"] == "replace", op
            doc["webhooks"][int(op["path"].rsplit("/", 1)[1])] = op["value"]
    return docs


def install_upstream(cluster: Cluster, version: str) -> dict[str, Any]:
    """Upstream's CRD and webhooks applied, its controller started on this machine as the
    admin, leader election off, its webhook server on loopback with a certificate of a CA
    whose bundle the webhook configurations carry; what runs where."""
    binary = upstream_jobset.build(version)
    source = upstream_jobset.source(version)
    directory = cluster.dir / "upstream"
    directory.mkdir(exist_ok=True)
    ca = pki.CA(directory, name="upstream-webhook-ca")
    serving = ca.issue("webhook", "jobset-webhook", ips=("127.0.0.1",), server=True)
    certs = directory / "certs"
    certs.mkdir(exist_ok=True)
    shutil.copyfile(serving.cert, certs / "tls.crt")
    shutil.copyfile(serving.key, certs / "tls.key")
    webhook_port, health_port = free_ports(2)
    hooks = _webhooks(source)
    for doc in hooks:
        doc["metadata"]["name"] = "jobset-" + doc["metadata"]["name"]
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{webhook_port}{path}",
                                    "caBundle": base64.b64encode(ca.pem).decode()}
    manifest = directory / "install.yaml"
    manifest.write_text(yaml.safe_dump_all(
        [*yaml.safe_load_all(upstream_jobset.crd(version).read_text()), *hooks]))
    subprocess.run([product.kubectl(), f"--kubeconfig={cluster.kubeconfig}", "apply",
                    "--server-side", "-f", str(manifest)], check=True, capture_output=True,
                   text=True)
    wait_for(f"CRD {product.CRD} Established", lambda: any(
        c["type"] == "Established" and c["status"] == "True"
        for c in cluster.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                 + product.CRD).get("status", {}).get("conditions", [])), 60)
    config = directory / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(certs)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
    }))
    record = cluster.state.start(
        "upstream-jobset", [str(binary), f"--config={config}",
                            f"--kubeconfig={cluster.kubeconfig}"],
        ports=(webhook_port, health_port),
        env={"HOME": str(directory), "PATH": "/usr/bin:/bin"}, cwd=directory)
    wait_for("upstream's /readyz", lambda: product._ready(
        f"http://127.0.0.1:{health_port}/readyz"), 120, Path(record["log"]), record)
    return {"webhook_port": webhook_port, "version": version}
