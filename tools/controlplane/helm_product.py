"""jobset-decider installed on the control plane with Helm (charts/jobset-decider), as a user
installs it, and run from what Helm applied.

Helm applies every object the chart renders, the Deployments included: their pods land on KWOK
nodes, which run nothing. What runs is, as for deploy/ (product.py), host processes, and they
take their command, arguments and environment from the Deployments of the release as Helm
applied them (`helm get manifest`), so a `helm upgrade` that changes a value changes what runs
at the next `rollout`, as a new ReplicaSet would. Only loopback is adapted, as product.py does:

- ports and addresses: `--port`, `--webhook-port`, `--healthz-port` free loopback ports,
  `--host=127.0.0.1`, the shim's `--decider-address` the decider's port instead of the
  headless Service's DNS name;
- the shim authenticates as the release's `decider-shim` ServiceAccount (a TokenRequest
  token), so the chart's RBAC is what it meets;
- the webhook: the API server reaches no Service without real pods, so after each
  install/upgrade the live configurations are pointed at https://127.0.0.1:PORT/<their path>
  with the caBundle of a CA made here, which the decider serves a certificate of (the
  `--webhook-cert-file`/`--webhook-key-file` the chart mounts from its Secret are replaced).
  This is a change of the live objects, as cert-manager's CA injector changes their caBundle.
  Before a `helm upgrade`, `restore_webhooks` puts the release's own clientConfig back: Helm's
  three-way merge adds the chart's `service` beside the live `url`, and the API server refuses
  the result ("exactly one of url or service is required": the first run here failed so).
  After the upgrade `adapt_webhooks` adapts again. The certificate Helm made (mode `helm`)
  names the Service, which no loopback URL matches, so the API server is not shown it; tests
  read it from the Secret and the configurations before they are adapted.

Helm's own directories (cache, config, data) are inside the run's directory.
"""

from __future__ import annotations

import base64
import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tools.controlplane import pki
from tools.controlplane.cluster import Cluster, kubeconfig_for_token
from tools.controlplane.processes import free_ports, wait_for
from tools.controlplane.product import (
    REPO,
    _ready,
    _tls_listening,
    adapted_args,
    env_of,
)

CHART = REPO / "charts" / "jobset-decider"
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
WEBHOOK_PATHS = {"MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
                 "ValidatingWebhookConfiguration": "validatingwebhookconfigurations"}


def helm_binary() -> str:
    """JOBSET_DECIDER_HELM, else what .ci/ensure-helm builds (cached after the first time)."""
    given = os.environ.get("JOBSET_DECIDER_HELM")
    if given:
        return given
    out = subprocess.run([str(REPO / ".ci" / "ensure-helm")], check=True, capture_output=True,
                         text=True)
    return out.stdout.strip().splitlines()[-1]


class Helm:
    """helm against one control plane, as its admin."""

    def __init__(self, cluster: Cluster, release: str, namespace: str) -> None:
        self.cluster = cluster
        self.release = release
        self.namespace = namespace
        self.binary = helm_binary()
        self.home = cluster.dir / "helm"
        self.home.mkdir(exist_ok=True)

    def __call__(self, *args: str, timeout: float = 600) -> str:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
               "HELM_CACHE_HOME": str(self.home / "cache"),
               "HELM_CONFIG_HOME": str(self.home / "config"),
               "HELM_DATA_HOME": str(self.home / "data"), "TMPDIR": str(self.home)}
        done = subprocess.run([self.binary, f"--kubeconfig={self.cluster.kubeconfig}",
                               f"--namespace={self.namespace}", *args],
                              capture_output=True, text=True, env=env, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"helm {' '.join(args)}: exit {done.returncode}\n"
                               f"{done.stdout}\n{done.stderr}")
        return done.stdout

    def values_file(self, name: str, values: dict[str, Any]) -> Path:
        path = self.home / f"{name}.yaml"
        path.write_text(yaml.safe_dump(values))
        return path

    def manifest(self) -> list[dict[str, Any]]:
        """The objects of the release's current revision, as Helm applied them."""
        return [d for d in yaml.safe_load_all(self("get", "manifest", self.release)) if d]


def deployment_container(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == name:
            return doc["spec"]["template"]["spec"]["containers"][0]
    raise KeyError(f"no Deployment {name} in the release")


class HostRollout:
    """The release's decider and shim as host processes (see the module's docstring)."""

    def __init__(self, helm: Helm) -> None:
        self.helm = helm
        self.cluster = helm.cluster
        self.dir = self.cluster.dir / "helm-product"
        self.dir.mkdir(exist_ok=True)
        self.ca = pki.CA(self.dir, name="webhook-ca")
        self.serving = self.ca.issue("webhook", "jobset-decider-webhook", ips=("127.0.0.1",),
                                     server=True)
        self.grpc_port, self.webhook_port, self.healthz_port = free_ports(3)
        self.info: dict[str, Any] = {}

    def adapt_webhooks(self) -> None:
        """Point the live webhook configurations at the host decider (see above)."""
        ca = base64.b64encode(self.ca.pem).decode()
        for kind in WEBHOOK_KINDS:
            for doc in self.helm.manifest():
                if doc["kind"] != kind:
                    continue
                path = (f"/apis/admissionregistration.k8s.io/v1/{WEBHOOK_PATHS[kind]}/"
                        f"{doc['metadata']['name']}")
                live = self.cluster.request("GET", path)
                for hook in live["webhooks"]:
                    route = hook["clientConfig"].get("service", {}).get("path")
                    if route is None:
                        # Adapted already (an upgrade that left clientConfig alone): keep its path.
                        route = "/" + hook["clientConfig"]["url"].split("/", 3)[3]
                    hook["clientConfig"] = {
                        "url": f"https://127.0.0.1:{self.webhook_port}{route}", "caBundle": ca}
                self.cluster.request("PUT", path, live)

    def restore_webhooks(self) -> None:
        """The release's clientConfig back on the live configurations (before an upgrade)."""
        for doc in self.helm.manifest():
            if doc["kind"] not in WEBHOOK_KINDS:
                continue
            path = (f"/apis/admissionregistration.k8s.io/v1/{WEBHOOK_PATHS[doc['kind']]}/"
                    f"{doc['metadata']['name']}")
            live = self.cluster.request("GET", path)
            rendered = {h["name"]: h["clientConfig"] for h in doc["webhooks"]}
            for hook in live["webhooks"]:
                hook["clientConfig"] = rendered[hook["name"]]
            self.cluster.request("PUT", path, live)

    def rollout(self) -> dict[str, Any]:
        """(Re)start the decider and the shim from the release's current Deployments."""
        state = self.cluster.state
        for name in ("shim", "decider"):
            if any(r["name"] == name for r in state.processes):
                state.stop(name)
        docs = self.helm.manifest()
        decider = deployment_container(docs, "jobset-decider")
        shim = deployment_container(docs, "decider-shim")
        ns = self.helm.namespace
        bindir = Path(sys.executable).parent
        base_env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(self.dir),
                    "TMPDIR": str(self.dir)}
        pod_env = {"POD_NAMESPACE": ns, "POD_NAME": "decider-shim-helm-e2e"}

        decider_args = adapted_args(
            decider["args"],
            {"--port": str(self.grpc_port), "--webhook-port": str(self.webhook_port),
             "--webhook-cert-file": str(self.serving.cert),
             "--webhook-key-file": str(self.serving.key)},
            ["--host=127.0.0.1"])
        d = state.start("decider", [str(bindir / decider["command"][0]),
                                    *decider["command"][1:], *decider_args],
                        ports=(self.grpc_port, self.webhook_port),
                        env={**base_env, **env_of(decider, pod_env)}, cwd=self.dir)
        wait_for("the decider's webhook serving TLS", lambda: _tls_listening(
            self.webhook_port, self.ca.pair.cert), 120, Path(d["log"]), d)

        token = self.cluster.request(
            "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/decider-shim/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": 86400}})["status"]["token"]
        config = kubeconfig_for_token(self.cluster, self.dir / "shim.kubeconfig", token)
        shim_args = adapted_args(
            shim["args"],
            {"--decider-address": f"127.0.0.1:{self.grpc_port}",
             "--healthz-port": str(self.healthz_port)},
            [f"--kubeconfig={config}", "--host=127.0.0.1"])
        s = state.start("shim", [str(bindir / shim["command"][0]), *shim_args],
                        ports=(self.healthz_port,),
                        env={**base_env, **env_of(shim, pod_env)}, cwd=self.dir)
        wait_for("the shim's /readyz", lambda: _ready(
            f"http://127.0.0.1:{self.healthz_port}/readyz"), 120, Path(s["log"]), s)
        self.info = {"decider_argv": d["argv"], "shim_argv": s["argv"],
                     "shim_healthz": f"http://127.0.0.1:{self.healthz_port}"}
        return copy.deepcopy(self.info)

    def stop(self) -> None:
        for name in ("shim", "decider"):
            if any(r["name"] == name for r in self.cluster.state.processes):
                self.cluster.state.stop(name)
