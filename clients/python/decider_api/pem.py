"""Reading a PEM file a flag names (TLS certificates, keys, CAs), for decider and shim."""

from __future__ import annotations


def read_pem(path: str) -> bytes:
    """The file's bytes; ValueError saying what is wrong ("cannot read: ...", "not a PEM
    file"), for the caller to prefix with the flag and path."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}") from None
    # A DER file or a path mixed up with another flag's fails here, not in the TLS handshake.
    if b"-----BEGIN" not in data:
        raise ValueError("not a PEM file")
    return data
