"""Kueue's own install manifests, adapted only where a control plane on loopback needs it.

Kueue installs from `config/default` of its module (the kustomization its release manifests are
rendered from): CRDs with conversion webhooks, RBAC, a ConfigMap holding the manager's
`controller_manager_config.yaml`, a Deployment, Services, the webhook configurations, the
visibility APIServices and an empty Secret that its internal certificate management fills.

On the end-to-end control plane there is no pod network: the manager runs as a host process
and the API server reaches it on 127.0.0.1. So, and only so:

- the webhook configurations and the CRDs' conversion webhooks call `https://127.0.0.1:PORT`
  instead of the Service, with the CA bundle of a certificate for 127.0.0.1 (Kueue's internal
  certificate management issues one for the Service's DNS name only, which a loopback URL
  cannot use; this is the shape of Kueue's cert-manager option: certificates from outside,
  the CA injected into webhooks and CRDs);
- the manager's configuration is a file, its ports on loopback and free, its certificates in
  a directory of the run's, its leader-election Lease in its namespace (a pod reads that from
  its ServiceAccount's mount); the certificate its metrics server reads from the fixed path
  /etc/kueue/metrics/certs laid over /etc in a mount namespace of its own (kueue.py);
- what only a pod can serve is not installed: the Deployment (the process replaces it), the
  Services in front of it, the internal-certificate Secret and the visibility APIServices (an
  APIService names a Service, never a URL; the visibility server is switched off with Kueue's
  own `VisibilityOnDemand` gate, since it would read its certificate from /visibility).

Everything else (the CRDs' schemas, every RBAC object, the webhooks' rules, selectors and
failure policies, the integrations list with `jobset.x-k8s.io/jobset`) is Kueue's, as rendered.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

Obj = dict[str, Any]

CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
JOBSET_FRAMEWORK = "jobset.x-k8s.io/jobset"
# Kinds served only by a pod behind a Service, which this control plane has no network for.
NOT_INSTALLED = {
    "Deployment": "the manager runs as a host process",
    "Service": "nothing to route to: the manager listens on 127.0.0.1",
    "APIService": "an APIService names a Service, never a URL (visibility server off)",
    "Secret": "internal certificate management is off; the certificates are files",
}


@dataclass(frozen=True)
class Loopback:
    """Where the manager listens, and the CA that signed its webhook certificate."""

    webhook_port: int
    metrics_port: int
    health_port: int
    cert_dir: str
    ca_pem: bytes


@dataclass
class Adapted:
    """What to apply, the manager's configuration, and what was left out and why."""

    apply: list[Obj]
    config: Obj
    left_out: list[str] = field(default_factory=list)


def _loopback_client(client_config: Obj, loopback: Loopback) -> Obj:
    service = client_config.get("service") or {}
    path = service.get("path") or "/"
    return {"url": f"https://127.0.0.1:{loopback.webhook_port}{path}",
            "caBundle": base64.b64encode(loopback.ca_pem).decode()}


def _webhooks(doc: Obj, loopback: Loopback) -> Obj:
    out = copy.deepcopy(doc)
    for hook in out.get("webhooks") or []:
        hook["clientConfig"] = _loopback_client(hook.get("clientConfig") or {}, loopback)
    return out


def _crd(doc: Obj, loopback: Loopback) -> Obj:
    out = copy.deepcopy(doc)
    webhook = ((out.get("spec") or {}).get("conversion") or {}).get("webhook")
    if webhook is not None:
        webhook["clientConfig"] = _loopback_client(webhook.get("clientConfig") or {}, loopback)
    return out


def manager_config(config_map: Obj, loopback: Loopback) -> Obj:
    """Kueue's controller_manager_config.yaml with loopback ports and outside certificates."""
    config: Obj = yaml.safe_load((config_map.get("data") or {})[CONFIG_KEY])
    namespace = (config_map.get("metadata") or {}).get("namespace") or "kueue-system"
    frameworks = ((config.get("integrations") or {}).get("frameworks")) or []
    if JOBSET_FRAMEWORK not in frameworks:
        raise ValueError(f"{CONFIG_MAP}: integrations.frameworks lacks {JOBSET_FRAMEWORK}")
    config["health"] = {**(config.get("health") or {}),
                        "healthProbeBindAddress": f"127.0.0.1:{loopback.health_port}"}
    config["metrics"] = {**(config.get("metrics") or {}),
                         "bindAddress": f"127.0.0.1:{loopback.metrics_port}"}
    config["webhook"] = {**(config.get("webhook") or {}), "port": loopback.webhook_port,
                         "host": "127.0.0.1", "certDir": loopback.cert_dir}
    config["internalCertManagement"] = {"enable": False}
    config["featureGates"] = {**(config.get("featureGates") or {}), "VisibilityOnDemand": False}
    # In a pod, controller-runtime finds the Lease's namespace in the ServiceAccount's mount;
    # a host process has none to read.
    config["leaderElection"] = {**(config.get("leaderElection") or {}),
                                "resourceNamespace": namespace}
    return config


def adapt(docs: list[Obj], loopback: Loopback) -> Adapted:
    """Kueue's rendered `config/default`, ready for a control plane on loopback."""
    apply: list[Obj] = []
    left_out: list[str] = []
    config: Obj | None = None
    for doc in docs:
        if not doc:
            continue
        kind = doc.get("kind", "")
        name = (doc.get("metadata") or {}).get("name", "")
        if kind in NOT_INSTALLED:
            left_out.append(f"{kind}/{name}: {NOT_INSTALLED[kind]}")
        elif kind == "ConfigMap" and name == CONFIG_MAP:
            config = manager_config(doc, loopback)
            left_out.append(f"{kind}/{name}: given to the manager as a file (--config)")
        elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            apply.append(_webhooks(doc, loopback))
        elif kind == "CustomResourceDefinition":
            apply.append(_crd(doc, loopback))
        else:
            apply.append(copy.deepcopy(doc))
    if config is None:
        raise ValueError(f"the rendered manifests have no ConfigMap {CONFIG_MAP}")
    return Adapted(apply=apply, config=config, left_out=left_out)
