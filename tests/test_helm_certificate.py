"""charts/jobset-decider, webhook.certificate.mode=helm: the certificate Helm makes at install.

It is one the decider can serve (its own TLS set-up loads it) for the names its own certificate
would cover, signed by the CA both webhook configurations carry; and an upgrade reuses it, found
by `lookup` in the cluster, unless it is near expiry or made for other names. `lookup` is
answered by a stand-in API server (support.helm.LookupCluster) through
`helm template --dry-run=server`, the same call `helm upgrade` makes.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import pytest

from support import helm as H

NS = H.NAMESPACE
HELM_MODE = {"webhook.certificate.mode": "helm"}
SECRET = "jobset-decider-webhook-cert"
EXPIRES = "jobset-decider.io/helm-certificate-expires"
NAMES = "jobset-decider.io/helm-certificate-names"


@pytest.fixture(scope="module")
def helm() -> Path:
    return H.require()


@pytest.mark.waits
def test_helm_mode_makes_a_certificate_the_decider_can_serve_and_the_api_server_trusts(
        helm: Path, tmp_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import padding

    from decider.webhook import certs
    from decider.webhook.server import tls_context

    docs = H.rendered(helm, {"webhook.certificate.mode": "helm"})
    secret = H.one(docs, "Secret", "jobset-decider-webhook-cert", NS)
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert set(data) == {"ca.crt", "tls.crt", "tls.key"}
    ca = x509.load_pem_x509_certificate(data["ca.crt"])
    cert = x509.load_pem_x509_certificate(data["tls.crt"])
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    # The names the decider's own certificate covers: the webhook Service's, every spelling.
    assert names.get_values_for_type(x509.DNSName) == certs.SelfSigned(namespace=NS).dns_names
    assert cert.issuer == ca.subject
    ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(),
                           cert.signature_hash_algorithm)
    assert secret["metadata"]["annotations"]["jobset-decider.io/helm-certificate-names"] == \
        ",".join(certs.SelfSigned(namespace=NS).dns_names)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (hook,) = next(d for d in docs if d["kind"] == kind)["webhooks"]
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == data["ca.crt"]
    # The decider reads the mounted Secret, with no API token and no certificate RBAC.
    decider = H.container(docs, "jobset-decider")
    serve = H.parsed_args(decider)
    assert serve["webhook_self_signed"] is False
    pod = H.one(docs, "Deployment", "jobset-decider")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    mount = next(m for m in decider["volumeMounts"] if m["name"] == "webhook-certs")
    volume = next(v for v in pod["volumes"] if v["name"] == "webhook-certs")
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    assert serve["webhook_cert_file"] == f"{mount['mountPath']}/tls.crt"
    assert serve["webhook_key_file"] == f"{mount['mountPath']}/tls.key"
    (tmp_path / "tls.crt").write_bytes(data["tls.crt"])
    (tmp_path / "tls.key").write_bytes(data["tls.key"])
    tls_context(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    assert not {d["kind"] for d in docs if d["metadata"]["name"].endswith(
        ("-webhook-cert", "-ca-injection"))} - {"Secret"}


def _secret(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return H.one(docs, "Secret", SECRET, NS)


def _ca_bundles(docs: list[dict[str, Any]]) -> set[str]:
    return {d["webhooks"][0]["clientConfig"]["caBundle"] for d in docs
            if d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")}


def _path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/secrets/{SECRET}"


@pytest.mark.waits
def test_an_upgrade_reuses_the_certificate_it_finds(helm: Path, tmp_path: Path) -> None:
    with H.LookupCluster(tmp_path, {}) as cluster:
        first = cluster.render(helm, HELM_MODE)
        assert _path(NS) in cluster.seen, cluster.seen  # lookup did ask the cluster
    installed = _secret(first)
    with H.LookupCluster(tmp_path, {_path(NS): installed}) as cluster:
        again = cluster.render(helm, HELM_MODE)
    assert _secret(again)["data"] == installed["data"]
    assert _secret(again)["metadata"]["annotations"] == installed["metadata"]["annotations"]
    assert _ca_bundles(again) == {installed["data"]["ca.crt"]}


def _near_expiry(secret: dict[str, Any]) -> dict[str, Any]:
    secret["metadata"]["annotations"][EXPIRES] = str(int(time.time()) + 100 * 86400)
    return secret


def _other_names(secret: dict[str, Any]) -> dict[str, Any]:
    secret["metadata"]["annotations"][NAMES] = "jobset-decider-webhook.elsewhere.svc"
    return secret


def _made_by_the_decider(secret: dict[str, Any]) -> dict[str, Any]:
    del secret["metadata"]["annotations"]
    return secret


@pytest.mark.waits
@pytest.mark.parametrize("change", [_near_expiry, _other_names, _made_by_the_decider],
                         ids=["within-renewBeforeDays-of-expiry", "made-for-other-names",
                              "not-made-by-helm"])
def test_an_upgrade_replaces_a_certificate_it_cannot_trust(helm: Path, tmp_path: Path,
                                                           change: Any) -> None:
    installed = _secret(H.rendered(helm, HELM_MODE))
    with H.LookupCluster(tmp_path, {_path(NS): change(installed)}) as cluster:
        again = cluster.render(helm, HELM_MODE)
    assert _secret(again)["data"]["tls.crt"] != installed["data"]["tls.crt"]
    assert _ca_bundles(again) == {_secret(again)["data"]["ca.crt"]}
    expires = int(_secret(again)["metadata"]["annotations"][EXPIRES])
    assert expires - time.time() > 3649 * 86400
