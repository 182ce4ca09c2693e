"""`decider serve --webhook-self-signed`: the webhook's certificate without cert-manager.

As upstream JobSet's internal certificate management does, at start the decider makes a CA and
a serving certificate for the webhook Service's DNS names, keeps them in a Secret, and writes the
CA into the `caBundle` of its two webhook configurations, so the API server trusts it.

Several replicas share one certificate: the Secret holds it, and the first replica to find it
missing or near expiry makes a new one (an update at the Secret's resourceVersion: a replica that
loses the race reads the winner's). The CA's private key is never stored: nobody can issue
another certificate under it. A renewed CA is added to `caBundle` beside the previous one while
that is still valid, so replicas serving the previous certificate keep being trusted until they
restart.

The API rights this needs are narrow (deploy/webhook/self-signed): get and update of that one
Secret, get and patch of those two webhook configurations, each by name.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

log = logging.getLogger("decider.webhook_certs")

CA_VALIDITY = dt.timedelta(days=3650)
CERT_VALIDITY = dt.timedelta(days=5 * 365)
# A certificate with less left than this is replaced at start.
RENEW_BEFORE = dt.timedelta(days=365)
NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
CA_KEY, CERT_KEY, KEY_KEY = "ca.crt", "tls.crt", "tls.key"
MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"


class CertError(Exception):
    """Self-signed setup failed; the message names the object and the problem."""


@dataclass(frozen=True)
class SelfSigned:
    namespace: str
    service: str = "jobset-decider-webhook"
    secret: str = "jobset-decider-webhook-cert"
    mutating: str = "jobset-decider-mutating"
    validating: str = "jobset-decider-validating"

    @property
    def dns_names(self) -> list[str]:
        svc, ns = self.service, self.namespace
        return [svc, f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"]


@dataclass(frozen=True)
class Bundle:
    ca_pem: bytes  # every CA the API server should trust, newest first
    cert_pem: bytes
    key_pem: bytes


def pod_namespace() -> str:
    """The namespace the decider runs in: POD_NAMESPACE, else its service account's."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open(NAMESPACE_FILE) as f:
            return f.read().strip()
    except OSError:
        return ""


# ---- certificates ---------------------------------------------------------------------------

def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "jobset-decider"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def generate(dns_names: list[str], now: dt.datetime) -> tuple[bytes, bytes, bytes]:
    """A new CA and a serving certificate signed by it: (CA PEM, certificate PEM, key PEM)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("jobset-decider-webhook-ca")
    start = now - dt.timedelta(hours=1)  # clocks of the API server and the decider differ
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(now + CA_VALIDITY)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(dns_names[0]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(now + CERT_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), cert.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def usable(bundle: Bundle, dns_names: list[str], now: dt.datetime) -> bool:
    """The stored certificate serves these names for long enough, and its CA is in the bundle."""
    try:
        cert = x509.load_pem_x509_certificate(bundle.cert_pem)
        key = serialization.load_pem_private_key(bundle.key_pem, None)
        cas = x509.load_pem_x509_certificates(bundle.ca_pem)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, x509.ExtensionNotFound):
        return False
    if set(dns_names) - set(names.get_values_for_type(x509.DNSName)):
        return False
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        return False
    if key.public_key().public_bytes(serialization.Encoding.DER,
                                     serialization.PublicFormat.SubjectPublicKeyInfo) != \
            cert.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo):
        return False
    return any(ca.subject == cert.issuer for ca in cas)


def _still_valid_cas(ca_pem: bytes, now: dt.datetime) -> bytes:
    try:
        cas = x509.load_pem_x509_certificates(ca_pem)
    except ValueError:
        return b""
    pem = serialization.Encoding.PEM
    return b"".join(ca.public_bytes(pem) for ca in cas if ca.not_valid_after_utc > now)


# ---- the Kubernetes API ---------------------------------------------------------------------

Request = Callable[[str, str, Any, str], Any]


def kube_requester(api_client: Any, timeout: float = 10.0) -> Request:
    """(method, path, body, content type) -> parsed JSON, through the official client (its
    in-cluster or kubeconfig credentials); ApiException for an error status."""
    from kubernetes.client.exceptions import ApiException

    def request(method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        req = api_client.param_serialize(method=method, resource_path=path, header_params=headers,
                                         body=body, auth_settings=["BearerToken"])
        resp = api_client.call_api(*req, _request_timeout=timeout)
        data = resp.read()
        if not 200 <= resp.status <= 299:
            raise ApiException.from_response(http_resp=resp, body=data.decode("utf-8", "replace"),
                                             data=None)
        return json.loads(data) if data else None
    return request


def _api_error(exc: Exception, what: str) -> CertError:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", "") or str(exc)
    hint = {403: " (the decider's RBAC must allow it: deploy/webhook/self-signed)",
            404: " (apply deploy/ first: it creates it)"}.get(status or 0, "")
    return CertError(f"{what}: {status or ''} {reason}".replace("  ", " ") + hint)


def _secret_path(cfg: SelfSigned) -> str:
    return f"/api/v1/namespaces/{cfg.namespace}/secrets/{cfg.secret}"


def _read_bundle(secret: dict[str, Any]) -> Bundle | None:
    data = secret.get("data") or {}
    try:
        return Bundle(*(base64.b64decode(data[k]) for k in (CA_KEY, CERT_KEY, KEY_KEY)))
    except (KeyError, ValueError, TypeError):
        return None


def ensure_bundle(request: Request, cfg: SelfSigned, now: dt.datetime) -> Bundle:
    """The certificate in the Secret, made (or renewed) first when it will not do."""
    from kubernetes.client.exceptions import ApiException

    what = f"secret {cfg.namespace}/{cfg.secret}"
    for _ in range(5):
        try:
            secret = request("GET", _secret_path(cfg), None, "application/json")
        except ApiException as exc:
            raise _api_error(exc, f"get {what}") from None
        stored = _read_bundle(secret)
        if stored is not None and usable(stored, cfg.dns_names, now):
            return stored
        ca, cert, key = generate(cfg.dns_names, now)
        # The previous CA stays trusted beside the new one while replicas may still serve it.
        ca_bundle = ca + (_still_valid_cas(stored.ca_pem, now) if stored else b"")
        secret["data"] = {k: base64.b64encode(v).decode()
                          for k, v in ((CA_KEY, ca_bundle), (CERT_KEY, cert), (KEY_KEY, key))}
        try:
            request("PUT", _secret_path(cfg), secret, "application/json")
        except ApiException as exc:
            if exc.status == 409:
                continue  # another replica wrote first: use its certificate
            raise _api_error(exc, f"update {what}") from None
        log.info("made a new webhook CA and certificate for %s, stored in %s",
                 ", ".join(cfg.dns_names), what)
        return Bundle(ca_bundle, cert, key)
    raise CertError(f"update {what}: still conflicting after 5 tries")


def inject_ca(request: Request, cfg: SelfSigned, ca_pem: bytes) -> None:
    """Every webhook of both configurations trusts `ca_pem` (a JSON patch per configuration,
    each change guarded by a test of the webhook's name at its index)."""
    from kubernetes.client.exceptions import ApiException

    ca = base64.b64encode(ca_pem).decode()
    for plural, name in ((MUTATING, cfg.mutating), (VALIDATING, cfg.validating)):
        path = f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}"
        what = f"{plural[:-1]} {name}"
        try:
            current = request("GET", path, None, "application/json")
        except ApiException as exc:
            raise _api_error(exc, f"get {what}") from None
        ops: list[dict[str, Any]] = []
        for i, hook in enumerate(current.get("webhooks") or []):
            if (hook.get("clientConfig") or {}).get("caBundle") == ca:
                continue
            ops += [{"op": "test", "path": f"/webhooks/{i}/name", "value": hook.get("name")},
                    {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": ca}]
        if not ops:
            continue
        try:
            request("PATCH", path, ops, "application/json-patch+json")
        except ApiException as exc:
            raise _api_error(exc, f"patch {what}") from None
        log.info("caBundle of %s set (%d webhook(s))", what, len(ops) // 2)


def write_files(bundle: Bundle, directory: str = "") -> tuple[str, str]:
    """The certificate and key as files for the TLS server (a read-only root file system leaves
    /tmp, an emptyDir, writable); returns (cert path, key path)."""
    directory = directory or tempfile.mkdtemp(prefix="decider-webhook-")
    cert_path = os.path.join(directory, CERT_KEY)
    key_path = os.path.join(directory, KEY_KEY)
    for path, data in ((cert_path, bundle.cert_pem), (key_path, bundle.key_pem)):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return cert_path, key_path


def setup(api_client: Any, cfg: SelfSigned, directory: str = "",
          now: dt.datetime | None = None) -> tuple[str, str]:
    """Everything --webhook-self-signed does at start; CertError naming what failed."""
    request = kube_requester(api_client)
    bundle = ensure_bundle(request, cfg, now or dt.datetime.now(dt.UTC))
    inject_ca(request, cfg, bundle.ca_pem)
    return write_files(bundle, directory)
