"""`decider-shim`: the thin operator's entry point."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

import grpc
from kubernetes import client, config

from decider_client import DeciderClient
from shim.config import Config, parse_args
from shim.controller import Shim
from shim.kube import Kube
from shim.local_decider import LocalDecider
from shim.ratelimit import TokenBucket

# --decider-address value that runs a decider of the shim's own (shim/local_decider.py).
LOCAL = "local"

log = logging.getLogger("shim")


def api_client(cfg: Config) -> client.ApiClient:
    """kubeconfig (flag or KUBECONFIG) if given, else in-cluster, else ~/.kube/config."""
    configuration = client.Configuration()
    if cfg.kubeconfig:
        config.load_kube_config(
            config_file=cfg.kubeconfig,
            context=cfg.context or None,
            client_configuration=configuration,
        )
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(context=cfg.context or None, client_configuration=configuration)
    # Parallel writes and one watch per kind share this pool; the default (5 x CPUs) is small.
    configuration.connection_pool_maxsize = max(
        cfg.api_qps_pool, cfg.max_parallel_writes + len(cfg.owned_kinds) + 4
    )
    api = client.ApiClient(configuration)
    api.user_agent = f"decider-shim/{cfg.identity}"
    return api


def decider_client(cfg: Config) -> DeciderClient:
    credentials = None
    options: list[tuple[str, object]] = []
    if cfg.decider_tls:

        def read(path: str) -> bytes | None:
            if not path:
                return None
            with open(path, "rb") as f:
                return f.read()

        credentials = grpc.ssl_channel_credentials(
            root_certificates=read(cfg.decider_ca_file),
            private_key=read(cfg.decider_key_file),
            certificate_chain=read(cfg.decider_cert_file),
        )
        if cfg.decider_server_name:
            options.append(("grpc.ssl_target_name_override", cfg.decider_server_name))
    return DeciderClient(
        cfg.decider_address, timeout=cfg.decider_timeout, credentials=credentials, options=options
    )


def build_kube(cfg: Config, api: client.ApiClient) -> Kube:
    """The API client the flags describe: rate limit and Retry-After bounds."""
    limiter = TokenBucket(cfg.kube_api_qps, cfg.kube_api_burst) if cfg.kube_api_qps > 0 else None
    return Kube(
        api,
        limiter=limiter,
        max_retries=cfg.kube_api_max_retries,
        max_retry_wait=cfg.kube_api_max_retry_wait,
    )


def build(cfg: Config) -> Shim:
    return Shim(cfg, build_kube(cfg, api_client(cfg)), decider_client(cfg))


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, cfg.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    local = None
    if cfg.decider_address == LOCAL:
        local = LocalDecider()
        cfg.decider_address = local.start()
        log.info("started a local decider at %s", cfg.decider_address)
    try:
        return _run(cfg)
    finally:
        if local is not None:
            local.stop()


def _run(cfg: Config) -> int:
    shim = build(cfg)
    if cfg.once:
        return shim.run_once()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: shutting down", signum)
        shim.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    log.info(
        "decider-shim %s: controller %s, decider %s, namespaces %s, API %s",
        cfg.identity,
        cfg.controller_name,
        cfg.decider_address,
        ",".join(cfg.namespaces or ["(all)"]),
        f"{cfg.kube_api_qps:g} QPS, burst {cfg.kube_api_burst}"
        if cfg.kube_api_qps > 0
        else "not rate-limited",
    )
    return shim.run()


if __name__ == "__main__":
    sys.exit(main())
