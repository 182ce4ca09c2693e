"""The Helm chart on a real control plane (issue 30, item 3): `helm install` (the webhook's
certificate made by Helm), a JobSet run to completion, `helm upgrade` to new values that the
objects and the running processes take on (a feature gate the webhook now admits, the shim's
API QPS, the replica counts, the autoscaler dropped, the certificate reused through `lookup`),
and `helm uninstall` leaving none of the objects the chart rendered nor any the product made.

Helm applies everything, the Deployments too (their pods sit on KWOK nodes, which run
nothing); the decider and the shim run as host processes from the release's Deployments
(tools/controlplane/helm_product.py says what is adapted for loopback, and why).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from kubernetes.client.exceptions import ApiException

from tests.e2e.faults_support import Own, http_get, namespace, own_control_plane
from tests.e2e.framework import (
    EXIT_CODE,
    JOBSETS,
    conditions,
    eventually,
    has_condition,
    jobset,
    phases,
    replicated_job,
)
from tools.controlplane import versions
from tools.controlplane.helm_product import CHART, WEBHOOK_KINDS, Helm, HostRollout

pytestmark = [pytest.mark.e2e, pytest.mark.waits]

RELEASE = "jobset-decider"
NS = "jobset-decider"
SECRET = "jobset-decider-webhook-cert"
SERVICE_NAME = f"jobset-decider-webhook.{NS}.svc"


class Release:
    def __init__(self, own: Own, helm: Helm, host: HostRollout) -> None:
        self.own = own
        self.helm = helm
        self.host = host
        self.rendered: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.install_values: Any = None
        self.helm_cert: dict[str, str] = {}

    def remember(self) -> list[dict[str, Any]]:
        docs = self.helm.manifest()
        for doc in docs:
            self.rendered[(doc["apiVersion"], doc["kind"], doc["metadata"]["name"])] = doc
        return docs


@pytest.fixture(scope="module")
def release() -> Iterator[Release]:
    with own_control_plane("helm") as own:
        # The user's namespace, labelled as docs/install.md says (Helm cannot create it first).
        own.kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": NS, "labels": {
                                                   "pod-security.kubernetes.io/enforce":
                                                   "restricted"}}})
        helm = Helm(own.cluster, RELEASE, NS)
        rel = Release(own, helm, HostRollout(helm))
        try:
            yield rel
        finally:
            rel.host.stop()
            with contextlib.suppress(Exception):
                helm("uninstall", RELEASE, "--wait", "--ignore-not-found")


def resource_path(own: Own, doc: dict[str, Any], namespace: str | None = None) -> str:
    """The object's URL, its resource name found by discovery."""
    api = doc["apiVersion"]
    base = "/api/v1" if api == "v1" else f"/apis/{api}"
    for res in own.cluster.request("GET", base)["resources"]:
        if res["kind"] == doc["kind"] and "/" not in res["name"]:
            ns = namespace or doc["metadata"].get("namespace") or NS
            where = f"/namespaces/{ns}" if res["namespaced"] else ""
            return f"{base}{where}/{res['name']}/{doc['metadata']['name']}"
    raise KeyError(f"{api} {doc['kind']} is not served")


def live(own: Own, api: str, kind: str, name: str) -> dict[str, Any] | None:
    return own.kube.maybe(resource_path(own, {"apiVersion": api, "kind": kind,
                                              "metadata": {"name": name}}))


def container_args(own: Own, name: str) -> list[str]:
    dep = own.kube.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")
    return dep["spec"]["template"]["spec"]["containers"][0]["args"]


def ca_bundles(own: Own) -> set[str]:
    return {hook["clientConfig"].get("caBundle", "")
            for kind in WEBHOOK_KINDS
            for hook in live(own, "admissionregistration.k8s.io/v1", kind,
                             "jobset-decider-" + ("mutating" if kind.startswith("M")
                                                  else "validating"))["webhooks"]}


def restart_job_jobset(ns: str) -> dict[str, Any]:
    return jobset(ns, "restart-job", [replicated_job("w")],
                  failurePolicy={"maxRestarts": 1,
                                 "rules": [{"name": "one", "action": "RestartJob"}]})


def run_to_completion(own: Own, ns: str, name: str) -> dict[str, Any]:
    pods = eventually(f"the pod of {name} Running", lambda: own.kube.pods(ns, name),
                      lambda ps: len(ps) == 1 and phases(ps) and set(
                          phases(ps).values()) == {"Running"}, show=phases)
    own.kube.patch(f"/api/v1/namespaces/{ns}/pods/{pods[0]['metadata']['name']}",
                   {"metadata": {"annotations": {EXIT_CODE: "0"}}})
    return eventually(f"JobSet {name} Completed", lambda: own.kube.jobset(ns, name),
                      lambda j: has_condition(j, "Completed"), show=conditions)


def test_helm_install_then_a_jobset_runs_to_completion(release):
    own, helm = release.own, release.helm
    release.install_values = helm.values_file("install", {
        "shim": {"schedulingApiVersion": versions.release(
            own.cluster.version).scheduling_api_version},
        "webhook": {"certificate": {"mode": "helm"}}})
    helm("install", RELEASE, str(CHART), "-f", str(release.install_values), "--wait",
         "--timeout", "5m")
    docs = release.remember()
    for doc in docs:
        assert own.kube.maybe(resource_path(own, doc)) is not None, doc["kind"]

    # Mode helm: the Secret holds a CA and a certificate for the Service it signed, and both
    # configurations trust that CA (read before the harness adapts them to loopback).
    secret = own.kube.get(f"/api/v1/namespaces/{NS}/secrets/{SECRET}")
    ca_b64 = secret["data"]["ca.crt"]
    assert ca_bundles(own) == {ca_b64}
    ca = x509.load_pem_x509_certificate(base64.b64decode(ca_b64))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert SERVICE_NAME in names, names
    release.helm_cert = dict(secret["data"])

    release.host.adapt_webhooks()
    running = release.host.rollout()
    assert "--feature-gates=" in running["shim_argv"]
    with namespace(own, "helm-install") as ns:
        # The webhook as the chart configured it: no gates, so RestartJob is refused.
        with pytest.raises(ApiException) as refused:
            own.kube.create_jobset(restart_job_jobset(ns))
        assert refused.value.status == 422, refused.value.body
        assert "RestartJob feature gate is disabled" in refused.value.body
        created = own.kube.create_jobset(jobset(ns, "first", [replicated_job("w")]))
        # The mutating webhook defaulted it on the way in.
        assert created["spec"].get("startupPolicy"), created["spec"]
        run_to_completion(own, ns, "first")


UPGRADE = {"featureGates": {"RestartJob": True},
           "shim": {"replicas": 1, "kubeAPI": {"qps": 100, "burst": 200}},
           "decider": {"autoscaling": {"enabled": False}, "replicas": 3}}


def test_helm_upgrade_to_new_values_takes_effect(release):
    own, helm = release.own, release.helm
    assert release.install_values is not None, "the install test did not run"
    release.host.restore_webhooks()
    helm("upgrade", RELEASE, str(CHART), "-f", str(release.install_values),
         "-f", str(helm.values_file("upgrade", UPGRADE)), "--wait", "--timeout", "5m")
    docs = release.remember()

    shim_args = container_args(own, "decider-shim")
    assert "--feature-gates=RestartJob=true" in shim_args, shim_args
    assert {"--kube-api-qps=100", "--kube-api-burst=200"} <= set(shim_args), shim_args
    assert "--webhook-feature-gates=RestartJob=true" in container_args(own, "jobset-decider")
    deps = {name: own.kube.get(f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")
            for name in ("jobset-decider", "decider-shim")}
    assert deps["jobset-decider"]["spec"]["replicas"] == 3
    assert deps["decider-shim"]["spec"]["replicas"] == 1
    assert live(own, "autoscaling/v2", "HorizontalPodAutoscaler", "jobset-decider") is None
    # `lookup` found Helm's certificate and the upgrade kept it: the Secret, and the caBundle
    # the upgrade rendered into both configurations and applied.
    secret = own.kube.get(f"/api/v1/namespaces/{NS}/secrets/{SECRET}")
    assert secret["data"] == release.helm_cert
    assert {h["clientConfig"]["caBundle"] for d in docs if d["kind"] in WEBHOOK_KINDS
            for h in d["webhooks"]} == {release.helm_cert["ca.crt"]}
    assert ca_bundles(own) == {release.helm_cert["ca.crt"]}

    release.host.adapt_webhooks()
    running = release.host.rollout()
    assert "--feature-gates=RestartJob=true" in running["shim_argv"]
    assert "--webhook-feature-gates=RestartJob=true" in running["decider_argv"]
    log = own.log_text("shim")
    assert "API 100 QPS, burst 200" in log.rsplit("decider-shim decider-shim-helm-e2e", 1)[-1]
    assert http_get(running["shim_healthz"] + "/readyz")[0] == 200
    with namespace(own, "helm-upgrade") as ns:
        # The gate reached the webhook: the JobSet refused before is admitted, and runs.
        own.kube.create_jobset(restart_job_jobset(ns))
        run_to_completion(own, ns, "restart-job")


def test_helm_uninstall_leaves_nothing_of_ours(release):
    own, helm = release.own, release.helm
    assert release.rendered, "the install test did not run"
    user_ns = "e2e-helm-left"
    own.kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": user_ns}})
    eventually("serviceaccount default", lambda: own.kube.maybe(
        f"/api/v1/namespaces/{user_ns}/serviceaccounts/default"), bool)
    # The garbage collector takes a JobSet's children only once it watches JobSets, which it
    # starts at a discovery resync (up to ~30 s after the CRD came); the uninstall deletes the
    # CRD, after which it never would, and the children would stay for good (seen in a quiet
    # CI run, where install and upgrade took less than that). A JobSet deleted and its
    # children seen gone first says the collector is watching.
    own.kube.create_jobset(jobset(user_ns, "gc-probe", [replicated_job("w", replicas=1)],
                                  suspend=True))
    service = f"/api/v1/namespaces/{user_ns}/services/gc-probe"
    eventually("gc-probe's Job and headless Service", lambda: (
        len(own.kube.jobs(user_ns, "gc-probe")), own.kube.maybe(service) is not None),
        lambda seen: seen == (1, True))
    own.kube.delete(f"{JOBSETS}/namespaces/{user_ns}/jobsets/gc-probe")
    eventually("gc-probe's Job and Service collected", lambda: (
        len(own.kube.jobs(user_ns, "gc-probe")), own.kube.maybe(service) is not None),
        lambda seen: seen == (0, False))
    # A JobSet still running at uninstall: what the shim made for it (Jobs, pods, its
    # headless Service) must go with it.
    own.kube.create_jobset(jobset(user_ns, "left", [replicated_job("w", replicas=2)]))
    eventually("2 pods of left Running", lambda: own.kube.pods(user_ns, "left"),
               lambda ps: len(ps) == 2 and set(phases(ps).values()) == {"Running"},
               show=phases)

    # The host processes run on through the uninstall, as pods do through their grace period
    # after Helm deleted their Deployments: whatever they do then is in what is checked below.
    # Helm deletes the RBAC meanwhile, so the shim is refused (403) until it stops: expected.
    mark = len(own.log_text("shim"))
    helm("uninstall", RELEASE, "--wait", "--timeout", "5m")
    release.host.stop()
    own.refusals_expected.append((mark, len(own.log_text("shim"))))
    remaining = {key: resource_path(own, doc) for key, doc in release.rendered.items()}
    eventually("every object the chart rendered gone", lambda: {
        k: p for k, p in remaining.items() if own.kube.maybe(p) is not None}, lambda left: not
        left, show=lambda left: sorted(f"{k[1]}/{k[2]}" for k in left))
    kinds = sorted({k[1] for k in release.rendered})
    assert {"CustomResourceDefinition", "Deployment", "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration", "Secret", "Lease"} <= set(kinds), kinds
    assert own.kube.items(f"/api/v1/namespaces/{NS}/secrets",
                          labelSelector=f"owner=helm,name={RELEASE}") == []
    eventually("the release's pods gone", lambda: own.kube.items(
        f"/api/v1/namespaces/{NS}/pods"), lambda ps: ps == [], show=phases)
    # The CRD took the JobSet; the garbage collector takes its Jobs, pods and Service.
    eventually("the JobSet's Jobs, pods and Service gone", lambda: (
        own.kube.items(f"/apis/batch/v1/namespaces/{user_ns}/jobs"),
        own.kube.items(f"/api/v1/namespaces/{user_ns}/pods"),
        own.kube.items(f"/api/v1/namespaces/{user_ns}/services")),
        lambda seen: seen == ([], [], []),
        show=lambda seen: [[o["metadata"]["name"] for o in part] for part in seen])
    # The namespace is the user's to delete.
    assert own.kube.maybe(f"/api/v1/namespaces/{NS}") is not None
