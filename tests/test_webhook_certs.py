"""--webhook-self-signed against the fake API server: the certificate kept in its Secret and
shared by replicas, the CA in both webhook configurations' caBundle, and the webhook serving
it; failures are one line naming the object."""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import json
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from kubernetes import client, config

from decider.webhook import certs as webhook_certs
from fakekube import FakeKube
from fakekube.resources import DEFAULT_RESOURCES, ResourceType
from support.waiting import HANG_GUARD

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
NS = "jobset-decider"
CFG = webhook_certs.SelfSigned(namespace=NS)
RESOURCES = (*DEFAULT_RESOURCES,
             ResourceType("", "v1", "Secret", "secrets", status_subresource=False),
             ResourceType("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
                          "mutatingwebhookconfigurations", namespaced=False,
                          status_subresource=False),
             ResourceType("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
                          "validatingwebhookconfigurations", namespaced=False,
                          status_subresource=False))


def _webhook(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"service": {"name": CFG.service, "namespace": NS, "path": path}}}


@pytest.fixture
def kube(tmp_path: Path):
    fake = FakeKube(resources=RESOURCES).start()
    store = fake.store
    store.create(store.resource_for("", "v1", "secrets"), NS, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": CFG.secret, "namespace": NS},
        "type": "Opaque"})
    for plural, kind, name, hooks in (
        ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", CFG.mutating,
         [_webhook("mjobset.jobset-decider.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset")]),
        ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", CFG.validating,
         [_webhook("vjobset.jobset-decider.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset")]),
    ):
        store.create(store.resource_for("admissionregistration.k8s.io", "v1", plural), "", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": hooks})
    fake.kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
    try:
        yield fake
    finally:
        fake.stop()


def api(fake: FakeKube) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(fake.kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration)


def stored(fake: FakeKube) -> dict[str, bytes]:
    secret = fake.store.get(fake.store.resource_for("", "v1", "secrets"), NS, CFG.secret)
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def ca_bundles(fake: FakeKube) -> list[bytes]:
    out = []
    for plural, name in (("mutatingwebhookconfigurations", CFG.mutating),
                         ("validatingwebhookconfigurations", CFG.validating)):
        rt = fake.store.resource_for("admissionregistration.k8s.io", "v1", plural)
        for hook in fake.store.get(rt, "", name)["webhooks"]:
            out.append(base64.b64decode(hook["clientConfig"]["caBundle"]))
    return out


def test_setup_stores_the_certificate_and_sets_the_ca_bundle_of_both_configurations(
        kube, tmp_path):
    cert_path, key_path = webhook_certs.setup(api(kube), CFG, str(tmp_path))
    data = stored(kube)
    assert set(data) == {"ca.crt", "tls.crt", "tls.key"}
    assert Path(cert_path).read_bytes() == data["tls.crt"]
    assert Path(key_path).read_bytes() == data["tls.key"]
    assert oct(Path(key_path).stat().st_mode & 0o777) == "0o600"
    assert ca_bundles(kube) == [data["ca.crt"], data["ca.crt"]]
    cert = x509.load_pem_x509_certificate(data["tls.crt"])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "jobset-decider-webhook", "jobset-decider-webhook.jobset-decider",
        "jobset-decider-webhook.jobset-decider.svc",
        "jobset-decider-webhook.jobset-decider.svc.cluster.local"]
    # The CA verifies the certificate for the name the API server dials.
    ca = x509.load_pem_x509_certificate(data["ca.crt"])
    cert.verify_directly_issued_by(ca)


def test_a_second_replica_uses_the_stored_certificate_and_patches_nothing(kube, tmp_path):
    (tmp_path / "a").mkdir()
    webhook_certs.setup(api(kube), CFG, str(tmp_path / "a"))
    first = stored(kube)
    writes = len(kube.writes(method="PUT")) + len(kube.writes(method="PATCH"))
    (tmp_path / "b").mkdir()
    cert_path, _ = webhook_certs.setup(api(kube), CFG, str(tmp_path / "b"))
    assert stored(kube) == first
    assert Path(cert_path).read_bytes() == first["tls.crt"]
    assert len(kube.writes(method="PUT")) + len(kube.writes(method="PATCH")) == writes


def test_a_certificate_near_expiry_is_renewed_and_the_old_ca_stays_trusted(kube, tmp_path):
    now = dt.datetime.now(dt.UTC)
    webhook_certs.setup(api(kube), CFG, str(tmp_path), now=now)
    old = stored(kube)
    later = now + webhook_certs.CERT_VALIDITY - webhook_certs.RENEW_BEFORE + dt.timedelta(days=1)
    webhook_certs.setup(api(kube), CFG, str(tmp_path), now=later)
    new = stored(kube)
    assert new["tls.crt"] != old["tls.crt"]
    # Newest CA first, the previous one after it while it is valid.
    assert new["ca.crt"].endswith(old["ca.crt"]) and len(new["ca.crt"]) > len(old["ca.crt"])
    assert ca_bundles(kube) == [new["ca.crt"], new["ca.crt"]]


def test_a_missing_secret_is_one_line_naming_it(kube, tmp_path):
    rt = kube.store.resource_for("", "v1", "secrets")
    kube.store.delete(rt, NS, CFG.secret, None)
    with pytest.raises(webhook_certs.CertError) as err:
        webhook_certs.setup(api(kube), CFG, str(tmp_path))
    assert str(err.value) == (f"get secret {NS}/{CFG.secret}: 404 Not Found "
                              "(apply deploy/ first: it creates it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_decider_serve_self_signed_serves_reviews_with_the_certificate_it_made(kube, tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "decider.cli", "serve", "--host", "127.0.0.1", "--port", "0",
         "--workers", "1", "--drain-delay", "0", "--webhook-port", str(port),
         "--webhook-self-signed", "--webhook-namespace", NS, "--kubeconfig",
         str(kube.kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert "serving decider.v1.Decider" in line, proc.stderr.read()
        ca = stored(kube)["ca.crt"]
        ctx = ssl.create_default_context(cadata=ca.decode())
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": {"uid": "u-1", "operation": "DELETE",
                                       "kind": {"group": "jobset.x-k8s.io",
                                                "version": "v1alpha2", "kind": "JobSet"}}})
        deadline = time.monotonic() + HANG_GUARD
        while True:
            try:
                raw = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        # TLS checked against the Service's DNS name, as the API server dials it.
        tls = ctx.wrap_socket(raw, server_hostname=f"{CFG.service}.{NS}.svc")
        conn = http.client.HTTPSConnection("unused", port, context=ctx)
        conn.sock = tls
        conn.request("POST", "/validate-jobset-x-k8s-io-v1alpha2-jobset", body=body,
                     headers={"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        assert answer["response"] == {"uid": "u-1", "allowed": True}
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_decider_serve_self_signed_without_its_secret_exits_naming_it(kube):
    kube.store.delete(kube.store.resource_for("", "v1", "secrets"), NS, CFG.secret, None)
    out = subprocess.run(
        [sys.executable, "-m", "decider.cli", "serve", "--port", "0", "--webhook-port", "0",
         "--webhook-self-signed", "--webhook-namespace", NS, "--kubeconfig",
         str(kube.kubeconfig)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        f"decider: --webhook-self-signed: get secret {NS}/{CFG.secret}: 404 Not Found "
        "(apply deploy/ first: it creates it)")


@pytest.mark.parametrize(("args", "expected"), [
    (["--webhook-port", "9443"], "--webhook-port needs --webhook-cert-file and "
                                 "--webhook-key-file"),
    (["--webhook-port", "9443", "--webhook-cert-file", "/nonexistent",
      "--webhook-key-file", "/nonexistent"], "--webhook-cert-file: /nonexistent: cannot read"),
    (["--webhook-port", "9443", "--webhook-self-signed", "--webhook-feature-gates", "Nope=true"],
     "--webhook-feature-gates: unknown feature gate 'Nope'"),
    (["--webhook-port", "9443", "--webhook-self-signed", "--webhook-namespace", "x",
      "--kubeconfig", "/nonexistent/kubeconfig"],
     "--webhook-self-signed: no Kubernetes credentials (--kubeconfig /nonexistent/kubeconfig)"),
])
def test_bad_webhook_flags_are_one_line_exit_2(args, expected):
    out = subprocess.run([sys.executable, "-m", "decider.cli", "serve", "--port", "0", *args],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("decider: " + expected), last
    assert "Traceback" not in out.stderr


def test_two_replicas_starting_together_end_with_one_certificate(kube) -> None:
    real = webhook_certs.kube_requester(api(kube))
    now = dt.datetime.now(dt.UTC)
    raced: list[webhook_certs.Bundle] = []

    def request(method: str, path: str, body: Any, content_type: str) -> Any:
        if method == "PUT" and not raced:
            # The other replica writes between this one's read and its write.
            raced.append(webhook_certs.ensure_bundle(real, CFG, now))
        return real(method, path, body, content_type)

    mine = webhook_certs.ensure_bundle(request, CFG, now)
    assert mine == raced[0]
    assert stored(kube)["tls.crt"] == mine.cert_pem
    assert len([w for w in kube.writes(method="PUT") if w.code == 409]) == 1
