"""Certificates that get renewed: CAs that issue again (tests/support/certs.py's issuing), and a
directory written the way the kubelet writes a mounted Secret (files are symlinks through
`..data`, which is swapped atomically to a new directory at each update)."""

from __future__ import annotations

import ipaddress
import os
import ssl
import time
from collections.abc import Callable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from support.certs import _issue, _name

_PEM = serialization.Encoding.PEM


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(_PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Authority:
    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = _issue(name, self.key, _name(name), self.key, ca=True)
        self.pem = self.cert.public_bytes(_PEM)

    def server(self) -> tuple[bytes, bytes]:
        """A certificate for 127.0.0.1 and localhost, and its key (PEM)."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue("decider", key, self.cert.subject, self.key,
                      usage=ExtendedKeyUsageOID.SERVER_AUTH,
                      san=[x509.DNSName("localhost"),
                           x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        return cert.public_bytes(_PEM), _key_pem(key)

    def client(self) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue("decider-shim", key, self.cert.subject, self.key,
                      usage=ExtendedKeyUsageOID.CLIENT_AUTH)
        return cert.public_bytes(_PEM), _key_pem(key)


class SecretVolume:
    """A Secret as the kubelet mounts it: `tls.crt` -> `..data/tls.crt`, `..data` -> a
    timestamped directory; `update` makes a new directory and swaps `..data` in one rename."""

    def __init__(self, root: Path, files: dict[str, bytes]) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._generation = 0
        self.update(files)
        for name in files:
            (root / name).symlink_to(Path("..data") / name)

    def path(self, name: str) -> str:
        return str(self.root / name)

    def update(self, files: dict[str, bytes]) -> None:
        self._generation += 1
        directory = self.root / f"..2025_01_01_00_00_{self._generation:02d}.000000001"
        directory.mkdir()
        for name, data in files.items():
            (directory / name).write_bytes(data)
        data_link = self.root / "..data"
        old = data_link.resolve() if data_link.is_symlink() else None
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(directory.name)
        os.replace(tmp, data_link)
        if old is not None:
            for child in old.iterdir():
                child.unlink()
            old.rmdir()


def served_certificate(port: int) -> bytes:
    """The certificate a new TLS connection to 127.0.0.1:port is shown (PEM), unverified."""
    return ssl.get_server_certificate(("127.0.0.1", port), timeout=10).encode()


def same_certificate(a: bytes, b: bytes) -> bool:
    return x509.load_pem_x509_certificate(a) == x509.load_pem_x509_certificate(b)


def wait_for(predicate: Callable[[], bool], seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False
