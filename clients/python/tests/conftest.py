"""Fixtures of the client's tests: a real `decider serve` from the server's environment, and
certificates for mutual TLS (helpers.py says where the server comes from)."""

from __future__ import annotations

import select
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import ROOT, SERVER_PYTHON


@dataclass
class Server:
    target: str
    process: subprocess.Popen[str]


def _serve(*flags: str) -> Iterator[Server]:
    if not SERVER_PYTHON.exists():
        pytest.fail(f"no server to test against: {SERVER_PYTHON} does not exist (set up the "
                    "repository's .venv with the README's first command, or set "
                    "DECIDER_PYTHON)")
    proc = subprocess.Popen(
        [str(SERVER_PYTHON), "-m", "decider.cli", "serve", "--host", "127.0.0.1", "--port", "0",
         "--workers", "1", "--drain-delay", "0", "--grace", "1", *flags],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # "decider: serving decider.v1.Decider on HOST:PORT" is its first line.
        deadline = time.monotonic() + 120
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        line = proc.stdout.readline() if ready else ""  # type: ignore[union-attr]
        if "serving decider.v1.Decider on" not in line:
            proc.kill()
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"the decider did not start: {line!r} {err}")
        yield Server(target=line.split()[-1], process=proc)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    yield from _serve()


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    # A second client pair from the same CA, and a key from another authority's pair.
    other_client_cert: Path
    other_client_key: Path
    stranger_key: Path
    encrypted_key: Path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """Certificates made by the server's environment (the client's has no cryptography): the
    client only reads PEM files, as it would read a mounted Secret."""
    directory = tmp_path_factory.mktemp("pki")
    subprocess.run([str(SERVER_PYTHON), str(Path(__file__).with_name("make_pki.py")),
                    str(directory)], check=True, cwd=ROOT, timeout=120)
    return Pki(**{name: directory / f"{name}.pem" for name in Pki.__dataclass_fields__})


@pytest.fixture(scope="session")
def mtls_server(pki: Pki) -> Iterator[Server]:
    yield from _serve("--tls-cert-file", str(pki.server_cert), "--tls-key-file",
                      str(pki.server_key), "--tls-client-ca-file", str(pki.ca))
