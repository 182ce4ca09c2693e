"""Writes the client tests' certificates into a directory (`python make_pki.py DIR`).

Run by the server's interpreter, which has cryptography (conftest.py's `pki` fixture); the
client's environment has none. Reuses the server tests' authority (tests/support).
"""

from __future__ import annotations

import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))

from support.cert_rotation import Authority  # noqa: E402 - after the path that finds it


def main(directory: Path) -> None:
    ca = Authority("test-ca")
    server_cert, server_key = ca.server()
    client_cert, client_key = ca.client()
    # A renewal: a new pair from the same CA.
    other_client_cert, other_client_key = ca.client()
    # A key that belongs to no certificate here.
    _, stranger_key = Authority("stranger").client()
    key = serialization.load_pem_private_key(client_key, password=None)
    encrypted_key = key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.BestAvailableEncryption(b"a password"))
    files = {"ca": ca.pem, "server_cert": server_cert, "server_key": server_key,
             "client_cert": client_cert, "client_key": client_key,
             "other_client_cert": other_client_cert, "other_client_key": other_client_key,
             "stranger_key": stranger_key, "encrypted_key": encrypted_key}
    for name, data in files.items():
        (directory / f"{name}.pem").write_bytes(data)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
