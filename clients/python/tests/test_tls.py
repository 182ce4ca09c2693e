"""Mutual TLS from the client installed alone: its files are checked with the standard library's
ssl module (this environment has no cryptography), refused as the server refuses them, and
followed when they change."""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
from conftest import Pki, Server
from helpers import EXAMPLES

from decider_api.tls_files import FileWatch, TLSFileError, TLSPaths
from decider_client import DeciderClient, observe
from decider_client.documents import load_objects, split_jobset

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _request() -> object:
    path = EXAMPLES / "leader-workers.yaml"
    jobset, owned = split_jobset(load_objects(path.read_text(), str(path)))
    return observe.build_decide_request(jobset, owned, NOW)


def _paths(pki: Pki, cert: Path | None = None, key: Path | None = None) -> TLSPaths:
    return TLSPaths(ca_file=str(pki.ca), cert_file=str(cert or pki.client_cert),
                    key_file=str(key or pki.client_key))


def test_a_client_with_its_certificate_is_answered(mtls_server: Server, pki: Pki) -> None:
    with DeciderClient(mtls_server.target, timeout=30, tls=_paths(pki)) as client:
        plan = client.decide(_request())
    assert [a.name for a in plan.actions][:2] == ["trainer", "trainer-leader-0"]


def test_a_client_without_a_certificate_is_refused(mtls_server: Server, pki: Pki) -> None:
    with DeciderClient(mtls_server.target, timeout=30, tls=TLSPaths(ca_file=str(pki.ca))) \
            as client, pytest.raises(grpc.RpcError) as caught:
        client.decide(_request())
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_renewed_client_certificate_is_used_for_the_next_call(
        mtls_server: Server, pki: Pki, tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copyfile(pki.client_cert, cert)
    shutil.copyfile(pki.client_key, key)
    with DeciderClient(mtls_server.target, timeout=30, tls=_paths(pki, cert, key),
                       tls_check_seconds=0) as client:
        client.decide(_request())
        first = client._channels._watch.material  # type: ignore[union-attr]
        shutil.copyfile(pki.other_client_cert, cert)
        shutil.copyfile(pki.other_client_key, key)
        client.decide(_request())
        renewed = client._channels._watch.material  # type: ignore[union-attr]
    assert first.cert == pki.client_cert.read_bytes()
    assert renewed.cert == pki.other_client_cert.read_bytes()


@pytest.mark.parametrize(("cert", "key", "ca", "said"), [
    pytest.param("client_cert", "stranger_key", "ca",
                 "{key} is not the key of the certificate in {cert}", id="key-of-another-pair"),
    pytest.param("client_cert", "encrypted_key", "ca",
                 "{key}: not a PEM private key without a password: it is encrypted",
                 id="encrypted-key"),
    pytest.param("client_cert", "client_cert", "ca",
                 "{key}: not a PEM private key without a password", id="certificate-as-key"),
    pytest.param("client_key", "client_key", "ca", "{cert}: not PEM certificates",
                 id="key-as-certificate"),
    pytest.param("client_cert", "client_key", "client_key", "{ca}: not PEM certificates",
                 id="key-as-ca"),
])
def test_files_that_are_not_a_usable_set_are_refused_naming_the_file(
        pki: Pki, cert: str, key: str, ca: str, said: str) -> None:
    paths = TLSPaths(cert_file=str(getattr(pki, cert)), key_file=str(getattr(pki, key)),
                     ca_file=str(getattr(pki, ca)))
    with pytest.raises(TLSFileError) as caught:
        paths.load()
    assert str(caught.value).startswith(
        said.format(cert=paths.cert_file, key=paths.key_file, ca=paths.ca_file))


def test_an_empty_or_binary_ca_file_is_refused(tmp_path: Path) -> None:
    empty, binary = tmp_path / "empty.pem", tmp_path / "binary.pem"
    empty.write_bytes(b"")
    binary.write_bytes(b"\x30\x82\xff\xfe")
    with pytest.raises(TLSFileError, match="no certificate in it"):
        TLSPaths(ca_file=str(empty)).load()
    with pytest.raises(TLSFileError, match="not PEM certificates: not ASCII text"):
        TLSPaths(ca_file=str(binary)).load()


def test_a_half_written_renewal_keeps_the_old_pair_until_the_rest_arrives(
        pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copyfile(pki.client_cert, cert)
    shutil.copyfile(pki.client_key, key)
    watch = FileWatch(_paths(pki, cert, key), check_seconds=0)
    # The certificate is new, the key not yet: not a usable set.
    shutil.copyfile(pki.other_client_cert, cert)
    with caplog.at_level(logging.WARNING):
        assert watch.poll() is None
        assert watch.poll() is None
    assert watch.material.cert == pki.client_cert.read_bytes()
    assert [r.getMessage() for r in caplog.records].count(
        next(r.getMessage() for r in caplog.records)) == 1
    assert "is not the key of the certificate" in caplog.records[0].getMessage()
    shutil.copyfile(pki.other_client_key, key)
    renewed = watch.poll()
    assert renewed is not None and renewed.key == pki.other_client_key.read_bytes()
