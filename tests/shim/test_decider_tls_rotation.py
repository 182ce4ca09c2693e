"""The shim's --decider-ca-file/--decider-cert-file/--decider-key-file follow their files.

cert-manager renews the shim's client certificate (and maybe the CAs) in the mounted Secret;
before this the shim kept the channel it started with and, once the server trusted only the new
client CA or presented a certificate of a new CA, every call failed until the shim restarted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from decider.service.server import BackgroundServer
from decider.service.tls_files import TLSFiles
from decider_api import tls_files
from decider_api.tls_files import TLSPaths
from decider_api.v1 import decider_pb2 as pb
from decider_client.tls_channel import Channels
from shim import decider_channel
from shim.flags import parse_args
from shim.main import decider_client
from support.cert_rotation import Authority, SecretVolume
from tests.shim.helpers import jobset, rjob, wait_for

pytestmark = pytest.mark.waits

# The server closes connections after this: an old channel then has to connect again.
CONNECTION_AGE = 0.5
REQUEST = pb.ValidateRequest(object_json='{"apiVersion": "jobset.x-k8s.io/v1alpha2", '
                                         '"kind": "JobSet", "metadata": {"name": "x"}}')


@pytest.fixture(autouse=True)
def _check_files_at_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls_files, "CHECK_SECONDS", 0.0)


class Pair:
    """A decider with mutual TLS and the shim's Secret volume, both rotatable."""

    def __init__(self, root: Path) -> None:
        self.server_ca, self.client_ca = Authority("srv-1"), Authority("clients-1")
        cert, key = self.server_ca.server()
        self.server_files = {"tls.crt": cert, "tls.key": key, "ca.crt": self.client_ca.pem}
        self.server_volume = SecretVolume(root / "server", self.server_files)
        cert, key = self.client_ca.client()
        self.shim_volume = SecretVolume(root / "shim", {"tls.crt": cert, "tls.key": key,
                                                        "ca.crt": self.server_ca.pem})
        v = self.server_volume
        self.server = BackgroundServer(
            tls=TLSFiles(v.path("tls.crt"), v.path("tls.key"), client_ca_file=v.path("ca.crt"),
                         check_seconds=0), max_connection_age=CONNECTION_AGE)

    def shim_flags(self) -> list[str]:
        v = self.shim_volume
        return ["--decider-address", self.server.target, "--decider-ca-file", v.path("ca.crt"),
                "--decider-cert-file", v.path("tls.crt"), "--decider-key-file", v.path("tls.key")]

    def new_client_ca(self) -> None:
        """The server is switched to trust a new client CA only, and the shim's certificate is
        renewed from it."""
        self.client_ca = Authority("clients-2")
        self.server_files["ca.crt"] = self.client_ca.pem
        self.server_volume.update(self.server_files)
        cert, key = self.client_ca.client()
        self.shim_volume.update({"tls.crt": cert, "tls.key": key, "ca.crt": self.server_ca.pem})

    def new_server_ca(self) -> None:
        """The server's certificate is re-issued by a new CA, and the shim's CA file follows."""
        self.server_ca = Authority("srv-2")
        cert, key = self.server_ca.server()
        self.server_files.update({"tls.crt": cert, "tls.key": key})
        self.server_volume.update(self.server_files)
        client = Path(self.shim_volume.path("tls.crt")).read_bytes(), \
            Path(self.shim_volume.path("tls.key")).read_bytes()
        self.shim_volume.update({"tls.crt": client[0], "tls.key": client[1],
                                 "ca.crt": self.server_ca.pem})


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    p = Pair(tmp_path)
    with p.server:
        yield p


@pytest.mark.parametrize("rotation", ["new_client_ca", "new_server_ca"])
def test_calls_succeed_after_the_files_are_renewed_without_a_restart(pair: Pair,
                                                                     rotation: str) -> None:
    cfg = parse_args(pair.shim_flags(), env={})
    health = decider_channel.health_check(cfg, timeout=5)
    with decider_client(cfg) as client:
        client.validate(REQUEST, timeout=10)
        assert health() == ""
        getattr(pair, rotation)()
        # Every connection made with the old files is gone: the next must use the new ones.
        time.sleep(CONNECTION_AGE * 3)
        for _ in range(5):
            client.validate(REQUEST, timeout=10)
        assert health() == ""


def test_a_running_shim_keeps_deciding_across_a_renewal(pair: Pair, cluster, shims) -> None:
    cfg = parse_args(pair.shim_flags(), env={})
    shims.start(decider=decider_channel.client(cfg))
    cluster.create_jobset(jobset("before", rjob("w", 1)))
    wait_for(lambda: cluster.job_names("before-") == ["before-w-0"], what="jobs before")
    pair.new_client_ca()
    time.sleep(CONNECTION_AGE * 3)
    cluster.create_jobset(jobset("after", rjob("w", 1)))
    wait_for(lambda: cluster.job_names("after-") == ["after-w-0"], what="jobs after the renewal")


def test_a_half_renewed_client_pair_keeps_the_old_one_until_the_key_arrives(
        pair: Pair, caplog: pytest.LogCaptureFixture) -> None:
    cfg = parse_args(pair.shim_flags(), env={})
    new_ca = Authority("clients-2")
    cert, key = new_ca.client()
    with decider_client(cfg) as client:
        client.validate(REQUEST, timeout=10)
        caplog.set_level(logging.WARNING)
        # The renewed certificate is written, its key not yet: the old pair still works.
        Path(pair.shim_volume.path("tls.crt")).resolve().write_bytes(cert)
        time.sleep(CONNECTION_AGE * 3)
        for _ in range(3):
            client.validate(REQUEST, timeout=10)
        refused = [r for r in caplog.records if "cannot be used yet" in r.getMessage()]
        assert len(refused) == 1, caplog.text
        # Then the key, and the server trusts the new CA only.
        Path(pair.shim_volume.path("tls.key")).resolve().write_bytes(key)
        pair.server_files["ca.crt"] = new_ca.pem
        pair.server_volume.update(pair.server_files)
        time.sleep(CONNECTION_AGE * 3)
        client.validate(REQUEST, timeout=10)


def test_a_call_in_flight_keeps_its_channel_until_it_returns(pair: Pair) -> None:
    v = pair.shim_volume
    channels = Channels(pair.server.target, lambda ch: ch, tls=TLSPaths(
        v.path("tls.crt"), v.path("tls.key"), v.path("ca.crt")))
    probe = "/grpc.health.v1.Health/Check"
    with channels.stub() as first:
        pair.new_client_ca()
        with channels.stub() as second:
            assert second is not first
        # The first channel still carries calls (this one is refused by the server, not by a
        # closed channel).
        with pytest.raises(grpc.RpcError):
            first.unary_unary(probe)(b"\x00", timeout=0.5)
    with pytest.raises(ValueError, match="closed channel"):
        first.unary_unary(probe)(b"", timeout=0.5)
    channels.close()
