"""Kueue's manifests adapted for loopback: what changes, and that nothing else does."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e import kueue
from tests.e2e.kueue_manifests import CONFIG_KEY, CONFIG_MAP, Loopback, adapt

LOOP = Loopback(webhook_port=19443, metrics_port=18443, health_port=18081,
                cert_dir="/run/kueue-certs", ca_pem=b"-----BEGIN CERTIFICATE-----\nx\n")
CA = base64.b64encode(LOOP.ca_pem).decode()

CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443}, "leaderElection": {"leaderElect": True},
    "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset", "pod"]},
}


def config_map(config: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": "kueue-system"},
            "data": {CONFIG_KEY: yaml.safe_dump(config)}}


def service_ref(path: str) -> dict[str, Any]:
    return {"service": {"name": "kueue-webhook-service", "namespace": "kueue-system",
                        "path": path}}


WEBHOOKS = {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "kueue-mutating-webhook-configuration"},
            "webhooks": [{"name": "mjobset.kb.io", "failurePolicy": "Fail",
                          "clientConfig": service_ref("/mutate-jobset-x-k8s-io-v1alpha2-jobset"),
                          "rules": [{"operations": ["CREATE"], "resources": ["jobsets"]}]}]}
CRD_CONVERTED = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "workloads.kueue.x-k8s.io"},
                 "spec": {"conversion": {"strategy": "Webhook", "webhook": {
                     "clientConfig": service_ref("/convert"),
                     "conversionReviewVersions": ["v1"]}}}}
CRD_PLAIN = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": "resourceflavors.kueue.x-k8s.io"}, "spec": {"group": "x"}}
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kueue-manager-role"}, "rules": [{"verbs": ["get"]}]}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "kueue-controller-manager"}}
APISERVICE = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
              "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert"}}


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind)


@pytest.mark.parametrize(("doc", "expect"), [
    (WEBHOOKS, lambda d: d["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:19443/mutate-jobset-x-k8s-io-v1alpha2-jobset", "caBundle": CA}),
    (WEBHOOKS, lambda d: d["webhooks"][0]["failurePolicy"] == "Fail"
     and d["webhooks"][0]["rules"] == WEBHOOKS["webhooks"][0]["rules"]),
    (CRD_CONVERTED, lambda d: d["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "url": "https://127.0.0.1:19443/convert", "caBundle": CA}),
    (CRD_CONVERTED, lambda d: d["spec"]["conversion"]["strategy"] == "Webhook"),
    (CRD_PLAIN, lambda d: d == CRD_PLAIN),
    (ROLE, lambda d: d == ROLE),
], ids=["webhook-calls-loopback-with-ca", "webhook-rules-and-policy-kept",
        "conversion-calls-loopback-with-ca", "conversion-strategy-kept",
        "crd-without-conversion-unchanged", "rbac-unchanged"])
def test_applied(doc: dict[str, Any], expect: Any) -> None:
    before = copy.deepcopy(doc)
    out = adapt([doc, config_map(CONFIG)], LOOP)
    assert expect(one(out.apply, doc["kind"]))
    assert doc == before, "the rendered manifests are not modified in place"


@pytest.mark.parametrize("doc", [DEPLOYMENT, APISERVICE, SECRET,
                                 {"apiVersion": "v1", "kind": "Service",
                                  "metadata": {"name": "kueue-webhook-service"}}],
                         ids=["deployment-replaced-by-process", "apiservice-needs-a-service",
                              "internal-cert-secret", "service-has-no-pod"])
def test_left_out_with_reason(doc: dict[str, Any]) -> None:
    out = adapt([doc, config_map(CONFIG)], LOOP)
    assert all(d["kind"] != doc["kind"] for d in out.apply)
    assert any(line.startswith(f"{doc['kind']}/{doc['metadata']['name']}: ")
               for line in out.left_out), out.left_out


@pytest.mark.parametrize(("path", "value"), [
    (("health", "healthProbeBindAddress"), "127.0.0.1:18081"),
    (("metrics", "bindAddress"), "127.0.0.1:18443"),
    (("webhook", "port"), 19443),
    (("webhook", "host"), "127.0.0.1"),
    (("webhook", "certDir"), "/run/kueue-certs"),
    (("internalCertManagement", "enable"), False),
    (("featureGates", "VisibilityOnDemand"), False),
    (("leaderElection", "leaderElect"), True),
    (("leaderElection", "resourceNamespace"), "kueue-system"),
    (("integrations", "frameworks"), ["batch/job", "jobset.x-k8s.io/jobset", "pod"]),
], ids=["health-on-loopback", "metrics-on-loopback", "webhook-port", "webhook-host-loopback",
        "certs-from-dir", "internal-certs-off", "visibility-off", "leader-election-kept",
        "lease-in-kueues-namespace",
        "integrations-kept"])
def test_manager_config(path: tuple[str, str], value: Any) -> None:
    config = adapt([config_map(CONFIG)], LOOP).config
    assert config[path[0]][path[1]] == value


@pytest.mark.parametrize(("docs", "message"), [
    ([ROLE], "no ConfigMap kueue-manager-config"),
    ([config_map({**CONFIG, "integrations": {"frameworks": ["batch/job"]}})],
     "lacks jobset.x-k8s.io/jobset"),
], ids=["no-manager-config", "jobset-integration-off"])
def test_refused(docs: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        adapt(docs, LOOP)


@pytest.mark.parametrize(("env", "expected"), [
    ({"XDG_CACHE_HOME": "/var/cache/ci"}, "/var/cache/ci/jobset-decider/kueue/v0.17.0/bin/kueue"),
    ({}, str(Path.home() / ".cache/jobset-decider/kueue/v0.17.0/bin/kueue")),
], ids=["xdg-cache-home", "home-cache"])
def test_binary_cached_by_version(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                  expected: str) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert str(kueue.binary("v0.17.0")) == expected


def test_a_cached_binary_is_not_built_again(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cached = kueue.binary("v0.17.0")
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"")

    def no_go(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"go ran: {args}")

    monkeypatch.setattr(kueue.subprocess, "run", no_go)
    assert kueue.build("v0.17.0") == cached
