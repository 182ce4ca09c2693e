"""The shim's channel to the decider: TLS from the flags, and calls spread over its replicas.

A Kubernetes Service with a cluster IP balances per connection, and gRPC keeps one connection
open: every call would go to one pod. The decider's Service is headless, so its DNS name
resolves to every ready pod; with `dns:///` and the `round_robin` policy the channel connects
to each and spreads calls over them (pick_first, the default, would use the first address
alone). The decider closes connections after --max-connection-age, so a replica added by
the autoscaler is found when the channel resolves the name again.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from decider_api.pem import read_pem
from decider_api.tls_files import TLSFileError, TLSPaths
from decider_client import DeciderClient, observe
from decider_client.tls_channel import Channels
from shim.config import Config

ROUND_ROBIN = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})
DECIDER_SERVICE = "decider.v1.Decider"


class ChannelError(Exception):
    """A TLS file named by a flag cannot be used; the message names the flag."""


class DeciderFlags(Protocol):
    """The --decider-* flags, as the shim's Config and decider-kueue-check's arguments hold
    them: both programs dial the decider alike."""

    decider_address: str
    decider_timeout: float
    decider_tls: bool
    decider_ca_file: str
    decider_cert_file: str
    decider_key_file: str
    decider_server_name: str


def target(address: str) -> str:
    """`host:port` with a DNS name for host -> `dns:///host:port`, so every address the name
    resolves to is used; an IP address or an explicit scheme stays as it is."""
    if "://" in address or address.startswith(("dns:", "ipv4:", "ipv6:", "unix:")):
        return address
    host = address.rsplit(":", 1)[0] if ":" in address else address
    try:
        ipaddress.ip_address(host.strip("[]"))
        return address
    except ValueError:
        return f"dns:///{address}"


def options(cfg: DeciderFlags) -> list[tuple[str, object]]:
    opts: list[tuple[str, object]] = [("grpc.service_config", ROUND_ROBIN)]
    if cfg.decider_server_name:
        opts.append(("grpc.ssl_target_name_override", cfg.decider_server_name))
    return opts


def _read(path: str, flag: str) -> bytes | None:
    if not path:
        return None
    try:
        return read_pem(path)
    except ValueError as exc:
        raise ChannelError(f"{flag} {path}: {exc}") from None


def tls_files(cfg: DeciderFlags) -> TLSPaths | None:
    """The --decider-*-file paths, checked now (ChannelError naming the flag); the channels
    read them again when they change, so a renewed certificate needs no restart."""
    if not cfg.decider_tls:
        return None
    _read(cfg.decider_ca_file, "--decider-ca-file")
    _read(cfg.decider_key_file, "--decider-key-file")
    _read(cfg.decider_cert_file, "--decider-cert-file")
    paths = TLSPaths(cert_file=cfg.decider_cert_file, key_file=cfg.decider_key_file,
                     ca_file=cfg.decider_ca_file)
    try:
        paths.load()
    except TLSFileError as exc:
        raise ChannelError(f"--decider-ca-file/--decider-cert-file/--decider-key-file: "
                           f"{exc}") from None
    return paths


def client(cfg: DeciderFlags) -> DeciderClient:
    return DeciderClient(target(cfg.decider_address), timeout=cfg.decider_timeout,
                         options=options(cfg), tls=tls_files(cfg))


def health_check(cfg: Config, timeout: float = 2.0) -> Callable[[], str]:
    """A function that asks the decider's gRPC health service: "" when it serves, else why not.

    A channel of its own, like the decider client's, so a probe never queues behind decisions;
    its TLS follows the files as the client's does.
    """
    channels = Channels(target(cfg.decider_address), health_pb2_grpc.HealthStub,
                        options=options(cfg), tls=tls_files(cfg))

    def check() -> str:
        try:
            with channels.stub() as stub:
                answer = stub.Check(health_pb2.HealthCheckRequest(service=DECIDER_SERVICE),
                                    timeout=timeout)
        except grpc.RpcError as exc:
            return f"decider {cfg.decider_address}: {exc.code().name}"
        if answer.status != health_pb2.HealthCheckResponse.SERVING:
            return f"decider {cfg.decider_address}: " \
                   f"{health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)}"
        return ""

    return check


# A JobSet that every decider decides: the start-up check sends it with the shim's options.
_PROBE_JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "decider-shim-options-check", "namespace": "default",
                 "uid": "decider-shim-options-check"},
    "spec": {"replicatedJobs": [{"name": "r", "replicas": 1, "template": {"spec": {
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}]},
}


def refused_options(cfg: Config, decider: DeciderClient) -> str | None:
    """The decider's reason for refusing the options every Decide will carry (an unknown
    feature gate, a gang API version it does not serve), None if it takes them or cannot be
    asked now. Asked once at start: otherwise every JobSet is refused, one warning at a time,
    for a mistake in the shim's own flags."""
    request = observe.build_decide_request(
        _PROBE_JOBSET, [], datetime.now(UTC), cfg.controller_name, cfg.feature_gates,
        gang_api_version=cfg.scheduling_api_version, gang_target=cfg.gang_target)
    try:
        decider.decide(request, timeout=cfg.decider_timeout)
    except grpc.RpcError as exc:
        details = exc.details() or ""
        if exc.code() == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("options."):
            return details
    return None
