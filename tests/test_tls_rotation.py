"""`serve --tls-*-file`: renewed certificate files are served to new connections, no restart.

cert-manager renews the Secret and the kubelet swaps the mounted files (`..data`); before this
the server presented the certificate it started with until the pod restarted, and after the old
certificate expired every handshake failed.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from decider.service.server import BackgroundServer
from decider.service.tls_files import ServerCertificates, TLSFiles
from support.cert_rotation import (
    Authority,
    SecretVolume,
    same_certificate,
    served_certificate,
    wait_for,
)

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
SERVING = health_pb2.HealthCheckResponse.SERVING


def _check(port: int, ca: bytes, client: tuple[bytes, bytes] | None = None) -> object:
    """SERVING, or the status code of the refusal, over a new connection."""
    creds = grpc.ssl_channel_credentials(ca, client[1] if client else None,
                                         client[0] if client else None)
    # A subchannel of its own: channels alike share connections in grpcio by default.
    options = [("grpc.use_local_subchannel_pool", 1), ("grpc.so_reuseport", 0)]
    with grpc.secure_channel(f"127.0.0.1:{port}", creds, options) as channel:
        try:
            return health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="decider.v1.Decider"), timeout=10).status
        except grpc.RpcError as exc:
            return exc.code()


class _Files:
    """The server's cert and key, in a kubelet-style volume or as plain files overwritten."""

    def __init__(self, root: Path, how: str, cert: bytes, key: bytes) -> None:
        self.how = how
        if how == "symlink-swap":
            self.volume = SecretVolume(root / "tls", {"tls.crt": cert, "tls.key": key})
            self.cert, self.key = self.volume.path("tls.crt"), self.volume.path("tls.key")
        else:
            self.cert, self.key = str(root / "tls.crt"), str(root / "tls.key")
            self.replace(cert, key)

    def replace(self, cert: bytes, key: bytes) -> None:
        if self.how == "symlink-swap":
            self.volume.update({"tls.crt": cert, "tls.key": key})
        else:
            Path(self.cert).write_bytes(cert)
            Path(self.key).write_bytes(key)


@pytest.mark.parametrize("how", ["symlink-swap", "overwrite"])
@pytest.mark.parametrize("issuer", ["same-ca", "new-ca"])
def test_a_new_connection_gets_the_renewed_certificate(tmp_path: Path, how: str,
                                                       issuer: str) -> None:
    ca_a = Authority("ca-a")
    ca_b = ca_a if issuer == "same-ca" else Authority("ca-b")
    cert_a, key_a = ca_a.server()
    cert_b, key_b = ca_b.server()
    files = _Files(tmp_path, how, cert_a, key_a)
    with BackgroundServer(tls=TLSFiles(files.cert, files.key, check_seconds=0)) as srv:
        assert same_certificate(served_certificate(srv.port), cert_a)
        assert _check(srv.port, ca_a.pem) == SERVING
        files.replace(cert_b, key_b)
        assert same_certificate(served_certificate(srv.port), cert_b)
        # A client trusting only the new issuer is served by the same, never restarted, server.
        assert _check(srv.port, ca_b.pem) == SERVING
        if issuer == "new-ca":
            assert _check(srv.port, ca_a.pem) == grpc.StatusCode.UNAVAILABLE


def test_a_half_rotated_pair_keeps_the_old_certificate_and_warns_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ca = Authority("ca")
    cert_a, key_a = ca.server()
    cert_b, key_b = ca.server()
    files = _Files(tmp_path, "overwrite", cert_a, key_a)
    with BackgroundServer(tls=TLSFiles(files.cert, files.key, check_seconds=0)) as srv:
        caplog.set_level(logging.WARNING)
        Path(files.cert).write_bytes(cert_b)  # the key is not written yet
        for _ in range(3):
            assert same_certificate(served_certificate(srv.port), cert_a)
            assert _check(srv.port, ca.pem) == SERVING
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                    and "cannot be used yet" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
        assert "is not the key of the certificate" in warnings[0].getMessage()
        Path(files.key).write_bytes(key_b)  # the rest of the rotation
        assert same_certificate(served_certificate(srv.port), cert_b)


def test_a_client_of_a_new_client_ca_is_accepted_once_the_ca_file_changes(
        tmp_path: Path) -> None:
    server_ca, old_clients, new_clients = Authority("srv"), Authority("c1"), Authority("c2")
    cert, key = server_ca.server()
    volume = SecretVolume(tmp_path / "tls", {"tls.crt": cert, "tls.key": key,
                                             "ca.crt": old_clients.pem})
    files = TLSFiles(volume.path("tls.crt"), volume.path("tls.key"),
                     client_ca_file=volume.path("ca.crt"), check_seconds=0)
    old_client, new_client = old_clients.client(), new_clients.client()
    with BackgroundServer(tls=files) as srv:
        assert _check(srv.port, server_ca.pem, old_client) == SERVING
        assert _check(srv.port, server_ca.pem, new_client) == grpc.StatusCode.UNAVAILABLE
        volume.update({"tls.crt": cert, "tls.key": key, "ca.crt": new_clients.pem})
        assert _check(srv.port, server_ca.pem, new_client) == SERVING
        assert _check(srv.port, server_ca.pem, old_client) == grpc.StatusCode.UNAVAILABLE
        # Still mutual TLS: a client without a certificate is refused.
        assert _check(srv.port, server_ca.pem) == grpc.StatusCode.UNAVAILABLE


def test_an_error_while_checking_the_files_never_reaches_the_handshake(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ca = Authority("ca")
    cert, key = ca.server()
    files = _Files(tmp_path, "overwrite", cert, key)
    certificates = ServerCertificates(TLSFiles(files.cert, files.key, check_seconds=0))

    class Broken:
        def paths(self) -> tuple[str, ...]:
            return ("broken",)

        def read(self) -> object:
            raise RuntimeError("disk on fire")

    certificates.watch.paths = Broken()  # type: ignore[assignment]
    assert certificates.fetch() is None
    assert "checking them failed" in caplog.text


def test_decider_serve_follows_a_kubelet_volume(tmp_path: Path) -> None:
    ca = Authority("ca")
    cert_a, key_a = ca.server()
    cert_b, key_b = ca.server()
    volume = SecretVolume(tmp_path / "tls", {"tls.crt": cert_a, "tls.key": key_a})
    proc = subprocess.Popen([sys.executable, "-m", "decider.cli", "serve", "--host",
                             "127.0.0.1", "--port", "0", "--drain-delay", "0",
                             "--tls-cert-file", volume.path("tls.crt"),
                             "--tls-key-file", volume.path("tls.key")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving decider.v1.Decider" in line
        port = int(line.strip().rsplit(":", 1)[-1])
        assert same_certificate(served_certificate(port), cert_a)
        volume.update({"tls.crt": cert_b, "tls.key": key_b})
        # Within CHECK_SECONDS (5 s) of the swap, for new connections.
        assert wait_for(lambda: same_certificate(served_certificate(port), cert_b))
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_a_mismatched_pair_at_start_exits_2_naming_the_files(tmp_path: Path) -> None:
    ca = Authority("ca")
    cert, _ = ca.server()
    _, other_key = ca.server()
    (tmp_path / "c.pem").write_bytes(cert)
    (tmp_path / "k.pem").write_bytes(other_key)
    done = subprocess.run([sys.executable, "-m", "decider.cli", "serve", "--port", "0",
                           "--tls-cert-file", str(tmp_path / "c.pem"),
                           "--tls-key-file", str(tmp_path / "k.pem")],
                          capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert done.returncode == 2
    assert "is not the key of the certificate" in done.stderr
    assert "Traceback" not in done.stderr
